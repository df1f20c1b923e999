#pragma once
/// A real net::http_server on an ephemeral loopback port in front of a fake_engine, started
/// fresh for each test.
#include <gtest/gtest.h>

#include <memory>

#include "net/http_server.hpp"
#include "testing/fake_engine.hpp"

namespace actorllm::testing {

class server_fixture : public ::testing::Test {
 protected:
  void start(server_config config = {}, net::http_options options = {},
             admin_port* admin = nullptr) {
    config.host = "127.0.0.1";
    config.port = 0;
    config.io_threads = io_threads_;
    config.max_body_bytes = 64 * 1024;
    options.access_log = false;
    server_ = std::make_unique<net::http_server>(config, engine_, options, admin);
    server_->start();
    port_ = server_->port();
  }
  void SetUp() override { start(); }
  void TearDown() override { server_.reset(); }

  int io_threads_ = 2;  ///< for the next start()
  fake_engine engine_;
  std::unique_ptr<net::http_server> server_;
  uint16_t port_ = 0;
};

}  // namespace actorllm::testing

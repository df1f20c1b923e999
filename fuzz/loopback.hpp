#pragma once
/// The network fuzzers' harness: a real net::http_server on 127.0.0.1 in front of the tests'
/// fake_engine, made afresh for every input (so no state carries from one input to the next),
/// and a blocking client on plain POSIX sockets whose every wait has a deadline.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "net/http_server.hpp"
#include "testing/fake_engine.hpp"

namespace actorllm::fuzz {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

/// The server and its engine; the server goes first (members are destroyed in reverse).
struct loopback_server {
  testing::fake_engine engine;
  net::http_server server;

  static server_config config() {
    server_config c;
    c.host = "127.0.0.1";
    c.port = 0;
    c.io_threads = 1;
    c.max_body_bytes = 16 * 1024;
    return c;
  }
  static net::http_options options() {
    net::http_options o;
    o.access_log = false;
    o.idle_timeout_s = 2.0;
    return o;
  }
  loopback_server() : server(config(), engine, options()) { server.start(); }
};

/// One TCP connection to the server. Writes that the server refuses (it closed) are ignored.
class connection {
 public:
  explicit connection(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd_ < 0) die("socket");
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      // libFuzzer's timer signal may interrupt a blocking connect: the connection goes on,
      // and how it ended is read once the socket is writable.
      if (errno != EINTR || !finish_interrupted_connect()) die("connect");
    }
  }
  ~connection() { ::close(fd_); }
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// False once the server stopped reading.
  bool send_all(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;  // the fuzzer's timer signal, not the server
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  void shutdown_write() { ::shutdown(fd_, SHUT_WR); }

  /// Waits until bytes arrive or `deadline` passes, and appends them to `into`. False when the
  /// server closed the connection or the deadline passed.
  bool read_some(std::string& into, clock_type::time_point deadline) {
    int ready = -1;
    while (ready < 0) {  // a poll the fuzzer's timer signal interrupted is asked again
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      ready = ::poll(&p, 1, static_cast<int>(left.count()));
      if (ready < 0 && errno != EINTR) return false;
    }
    if (ready == 0) return false;
    char buffer[16384];
    ssize_t n = -1;
    while ((n = ::recv(fd_, buffer, sizeof buffer, 0)) < 0 && errno == EINTR) {
    }
    if (n <= 0) return false;
    into.append(buffer, static_cast<size_t>(n));
    return true;
  }

  /// Appends what arrives to `into` until the server closes, `idle` passes without a byte, or
  /// `deadline` is reached. True when the server closed (or reset) the connection.
  bool read_until_quiet(std::string& into, milliseconds idle, clock_type::time_point deadline) {
    char buffer[16384];
    while (true) {
      const auto now = clock_type::now();
      if (now >= deadline) return false;
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - now);
      pollfd p{fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min(left, idle).count()) + 1);
      if (ready == 0) {
        if (idle <= left) return false;  // quiet for `idle`
        continue;
      }
      if (ready < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return true;
      if (into.size() < (1u << 20)) into.append(buffer, static_cast<size_t>(n));
    }
  }

 private:
  bool finish_interrupted_connect() {
    pollfd p{fd_, POLLOUT, 0};
    int ready = 0;
    while ((ready = ::poll(&p, 1, 5000)) < 0 && errno == EINTR) {
    }
    if (ready <= 0) return false;
    int error = 0;
    socklen_t length = sizeof error;
    return ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
  }

  [[noreturn]] static void die(const char* what) {
    std::perror(what);
    std::abort();
  }
  int fd_ = -1;
};

/// `input` cut at every occurrence of `marker` (the markers dropped).
inline std::vector<std::string_view> split(std::string_view input, std::string_view marker) {
  std::vector<std::string_view> parts;
  while (true) {
    const size_t at = input.find(marker);
    parts.push_back(input.substr(0, at));
    if (at == std::string_view::npos) return parts;
    input.remove_prefix(at + marker.size());
  }
}

}  // namespace actorllm::fuzz

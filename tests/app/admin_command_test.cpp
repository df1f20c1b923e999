// `actorllm admin` against a real server in front of a fake admin_port: what it prints, where,
// and the exit status of each outcome.
#include "app/admin_command.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "net/http_server.hpp"
#include "testing/fake_engine.hpp"
#include "tests/net/fake_admin.hpp"
#include "tests/net/fake_model_admin.hpp"

namespace actorllm::app {
namespace {

struct command_result {
  int status = -1;
  std::string out, err;
};

std::string read_all(std::FILE* file) {
  std::string text;
  std::rewind(file);
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  std::fclose(file);
  return text;
}

class admin_command_test : public ::testing::Test {
 protected:
  void SetUp() override {
    server_config config;
    config.host = "127.0.0.1";
    config.port = 0;
    config.admin_api_key = "adm";
    server_ = std::make_unique<net::http_server>(
        config, engine_, net::http_options{.access_log = false, .models_admin = &models_}, &admin_);
    server_->start();
    url_ = server_->url();
  }
  void TearDown() override { server_.reset(); }

  /// Runs `actorllm admin ARGS...` with ACTORLLM_ADMIN_API_KEY set to `env_key`.
  command_result admin(std::vector<std::string> args, const std::string& env_key = "adm") {
    args.insert(args.begin(), "admin");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    command_result r;
    r.status = run_admin_command(static_cast<int>(argv.size()), argv.data(), env_key, out, err);
    r.out = read_all(out);
    r.err = read_all(err);
    return r;
  }

  testing::fake_engine engine_;
  testing::fake_admin admin_;
  testing::fake_model_admin models_;
  std::unique_ptr<net::http_server> server_;
  std::string url_;
};

TEST_F(admin_command_test, list_prints_a_table) {
  const auto r = admin({"--url", url_, "list"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "ID  DEVICE  WORKERS  STATE    RUNNING  WAITING  KV USE\n"
            " 0  cuda:0        2  serving        3        1   25.0%\n"
            " 1  cpu           1  serving        0        0    0.0%\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(admin_command_test, add_drain_and_stop_print_the_servers_answer) {
  auto r = admin({"--url", url_, "add", "--count", "2", "--device", "cuda:1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"ids\":[2,3]}\n");
  r = admin({"--url", url_, "add"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = admin({"--url", url_, "drain", "1"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"id\":1,\"state\":\"draining\"}\n");
  r = admin({"--url", url_, "stop", "0"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"id\":0,\"state\":\"dead\"}\n");
  EXPECT_EQ(admin_.calls(),
            (std::vector<std::string>{"add 2 cuda:1", "add 1 ", "drain 1", "stop 0"}));
}

TEST_F(admin_command_test, models_list_prints_a_table) {
  const auto r = admin({"--url", url_, "models", "list"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out,
            "NAME   STATE     WEIGHTS   KV CACHE  IN FLIGHT  IDLE  PATH\n"
            "qwen   loaded    1.5 GiB  256.0 MiB          2    0s  /models/qwen3\n"
            "llama  unloaded  4.0 KiB        0 B          0    0s  /models/llama\n"
            "old    failed        0 B        0 B          0    0s  /models/old\n"
            "old: config.json: no such file\n");
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(models_.calls(), std::vector<std::string>{"list"});
}

TEST_F(admin_command_test, models_load_and_unload_print_the_servers_answer) {
  auto r = admin({"--url", url_, "models", "load", "mini", "--path", "/models/mini", "--flags",
                  R"({"max_model_len": 512})"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"id\":\"mini\",\"state\":\"loading\"}\n");
  r = admin({"--url", url_, "models", "load", "llama"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = admin({"--url", url_, "models", "unload", "qwen"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "{\"id\":\"qwen\",\"state\":\"draining\"}\n");
  EXPECT_EQ(models_.calls(),
            (std::vector<std::string>{R"(load mini /models/mini {"max_model_len":512})",
                                      "load llama  ", "unload qwen"}));
  EXPECT_TRUE(admin_.calls().empty());
}

TEST_F(admin_command_test, a_models_refusal_is_one_line_on_stderr_and_status_1) {
  auto r = admin({"--url", url_, "models", "unload", "nope"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "actorllm admin: 404: no model 'nope'\n");
  r = admin({"--url", url_, "models", "load", "qwen"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "actorllm admin: 409: model 'qwen' is loaded\n");
  r = admin(
      {"--url", url_, "models", "load", "x", "--path", "/m", "--flags", R"({"replicas": "two"})"});
  EXPECT_EQ(r.status, 0) << "the flags' keys and values are the server's to judge";
}

TEST_F(admin_command_test, models_on_a_server_of_one_model_says_so) {
  server_config config;
  config.host = "127.0.0.1";
  config.port = 0;
  config.admin_api_key = "adm";
  net::http_server one(config, engine_, net::http_options{.access_log = false}, &admin_);
  one.start();
  const auto r = admin({"--url", one.url(), "models", "list"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("501: this server serves one model"), std::string::npos) << r.err;
}

TEST_F(admin_command_test, a_refusal_is_one_line_on_stderr_and_status_1) {
  auto r = admin({"--url", url_, "drain", "9"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "actorllm admin: 404: no replica 9\n");
  r = admin({"--url", url_, "add", "--count", "17"});
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.err, "actorllm admin: 400: count must be an integer from 1 to 16\n");
  r = admin({"--url", url_, "list"}, "wrong");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("401: invalid or missing admin API key"), std::string::npos) << r.err;
}

TEST_F(admin_command_test, the_flag_takes_precedence_over_the_environment) {
  EXPECT_EQ(admin({"--url", url_, "--admin-api-key", "adm", "list"}, "wrong").status, 0);
  EXPECT_EQ(admin({"--url", url_, "--admin-api-key", "wrong", "list"}, "adm").status, 1);
  EXPECT_EQ(admin({"--url", url_, "list"}, "").status, 1);
}

TEST_F(admin_command_test, an_unreachable_server_is_one_clear_line) {
  const std::string url = url_;
  server_.reset();  // nothing listens there now
  const auto r = admin({"--url", url, "list"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("connection refused"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
}

TEST_F(admin_command_test, bad_usage_is_status_2_and_calls_nothing) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{},
                                             {"frob"},
                                             {"list", "extra"},
                                             {"drain"},
                                             {"drain", "x"},
                                             {"stop", "1/../../v1"},
                                             {"list", "--count", "2"},
                                             {"--url", "https://x", "list"},
                                             {"--timeout", "0", "list"},
                                             {"--nope", "list"},
                                             {"models"},
                                             {"models", "frob"},
                                             {"models", "list", "extra"},
                                             {"models", "load"},
                                             {"models", "load", "a", "b"},
                                             {"models", "unload"},
                                             {"models", "unload", "../v1/x"},
                                             {"models", "unload", "-x"},
                                             {"models", "load", std::string(65, 'a')},
                                             {"models", "unload", "a", "--path", "/m"},
                                             {"models", "list", "--flags", "{}"},
                                             {"models", "load", "a", "--count", "2"},
                                             {"models", "load", "a", "--flags", "[1]"},
                                             {"models", "load", "a", "--flags", "{nope"},
                                             {"list", "--path", "/m"},
                                             {"add", "--flags", "{}"}}) {
    std::vector<std::string> with_url = {"--url", url_};
    with_url.insert(with_url.end(), args.begin(), args.end());
    if (!args.empty() && args[0] == "--url") with_url = args;
    const auto r = admin(with_url);
    EXPECT_EQ(r.status, 2) << ::testing::PrintToString(args);
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_TRUE(admin_.calls().empty());
  EXPECT_TRUE(models_.calls().empty());
  const auto help = admin({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("ACTORLLM_ADMIN_API_KEY"), std::string::npos);
  EXPECT_NE(help.out.find("models load NAME [--path P] [--flags JSON]"), std::string::npos);
}

}  // namespace
}  // namespace actorllm::app

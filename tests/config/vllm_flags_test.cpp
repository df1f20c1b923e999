// vLLM's launch flags that actorllm does not implement: each accepted with the values that
// mean what actorllm does, or refused with the reason; the ones it implements set the config;
// README.md's table lists every one.
#include "config/vllm_flags.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/engine_flags.hpp"
#include "tests/config/serve_flags.hpp"

namespace actorllm {
namespace {

using testing::parse_serve_flags;

TEST(vllm_flags, each_is_accepted_with_its_values_or_refused_with_the_reason) {
  for (const vllm_flag& f : vllm_flags()) {
    engine_config c;
    std::vector<std::string> args{f.name};
    if (f.takes_value) args.push_back(f.values.empty() ? "anything" : f.values.front());
    const auto error = parse_serve_flags(c, args);
    if (f.refused) {
      ASSERT_TRUE(error) << f.name << " was accepted";
      EXPECT_EQ(*error, f.name + ": not supported: " + f.note);
      EXPECT_FALSE(f.note.empty()) << f.name << " is refused without a reason";
    } else {
      EXPECT_FALSE(error) << f.name << ": " << error.value_or("");
    }
    if (!f.refused && !f.values.empty()) {
      const auto other = parse_serve_flags(c, {f.name, "something-else"});
      ASSERT_TRUE(other) << f.name << " took a value that does not mean what actorllm does";
      EXPECT_NE(other->find("means what actorllm does"), std::string::npos) << *other;
    }
  }
}

TEST(vllm_flags, the_issues_flags_are_each_handled) {
  engine_config c;
  EXPECT_FALSE(parse_serve_flags(
      c, {"--data-parallel-size", "3", "--response-role", "bot", "--enable-force-include-usage",
          "--root-path", "/api", "--pipeline-parallel-size", "1", "--max-num-partial-prefills", "1",
          "--load-format", "safetensors"}));
  EXPECT_EQ(c.parallel.replicas, 3);
  EXPECT_EQ(c.server.response_role, "bot");
  EXPECT_FALSE(parse_serve_flags(c, {"--ssl-certfile", "c.pem", "--ssl-keyfile", "k.pem",
                                     "--ssl-ca-certs", "ca.pem", "--ssl-cert-reqs", "2"}));
  EXPECT_EQ(c.server.ssl_certfile, "c.pem");
  EXPECT_EQ(c.server.ssl_keyfile, "k.pem");
  EXPECT_EQ(c.server.ssl_ca_certs, "ca.pem");
  EXPECT_EQ(c.server.ssl_cert_reqs, 2);
  EXPECT_TRUE(c.server.force_include_usage);
  for (const char* refused : {"--revision", "--download-dir", "--otlp-traces-endpoint"}) {
    const auto error = parse_serve_flags(c, {refused, "x"});
    ASSERT_TRUE(error) << refused;
    EXPECT_NE(error->find("not supported"), std::string::npos) << *error;
  }
  EXPECT_NE(parse_serve_flags(c, {"--return-tokens-as-token-ids"})->find("not supported"),
            std::string::npos);
  EXPECT_NE(parse_serve_flags(c, {"--pipeline-parallel-size", "2"})->find("only 1 means"),
            std::string::npos);
}

// Ours: how long a step may go unanswered before its workers count as lost.
TEST(vllm_flags, worker_timeout_bounds_a_silent_step) {
  engine_config c;
  EXPECT_EQ(c.scheduler.worker_timeout_s, 300.0);
  EXPECT_FALSE(parse_serve_flags(c, {"--worker-timeout", "2.5"}));
  EXPECT_EQ(c.scheduler.worker_timeout_s, 2.5);
  EXPECT_EQ(*parse_serve_flags(c, {"--worker-timeout", "0"}),
            "--worker-timeout: must be in [0.1, 86400] seconds");
}

TEST(vllm_flags, the_readme_lists_every_one) {
  std::ifstream in(std::string(ACTORLLM_SOURCE_DIR) + "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string readme = text.str();
  const size_t table = readme.find("## vLLM's launch flags");
  ASSERT_NE(table, std::string::npos);
  for (const vllm_flag& f : vllm_flags())
    EXPECT_NE(readme.find("`" + f.name + "`", table), std::string::npos)
        << f.name << " is missing from README.md's table";
  std::set<std::string> names;
  for (const vllm_flag& f : vllm_flags()) EXPECT_TRUE(names.insert(f.name).second) << f.name;
}

}  // namespace
}  // namespace actorllm

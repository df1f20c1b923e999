// The system_fingerprint of a real server's answers: every object and chunk carries this
// build's (the fields themselves: tests/api/openai_fields_test.cpp).
#include <gtest/gtest.h>

#include "api/openai_call.hpp"
#include "tests/net/server_fixture.hpp"
#include "tests/net/test_client.hpp"

namespace actorllm::testing {
namespace {

using json = nlohmann::json;
using openai_fields_server = server_fixture;

TEST_F(openai_fields_server, responses_and_chunks_carry_the_builds_system_fingerprint) {
  const std::string expected = api::system_fingerprint();
  EXPECT_EQ(expected.rfind("fp_actorllm_", 0), 0u) << expected;
  EXPECT_GT(expected.size(), std::string("fp_actorllm_").size());
  const std::string chat = R"("messages":[{"role":"user","content":"hi"}],"max_tokens":2)";
  const std::string completion = R"("prompt":"hi","max_tokens":2)";
  for (const auto& [path, fields] :
       {std::pair{"/v1/completions", completion}, std::pair{"/v1/chat/completions", chat}}) {
    const auto whole = post(port_, path, "{" + fields + "}");
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(json::parse(whole.body)["system_fingerprint"], expected) << path;

    const auto streamed = post(
        port_, path, "{" + fields + R"(,"stream":true,"stream_options":{"include_usage":true}})");
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    const auto payloads = sse_payloads(streamed.body);
    ASSERT_GE(payloads.size(), 3u);
    for (const auto& p : payloads) {
      if (p == "[DONE]") continue;
      EXPECT_EQ(json::parse(p)["system_fingerprint"], expected) << path << ": " << p;
    }
  }
}

}  // namespace
}  // namespace actorllm::testing

// The engine port as net/ calls it, against the real actors: the tokenizer endpoints.
#include <gtest/gtest.h>

#include <future>

#include "actors/system/engine_system.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

detokenize_result detokenize(engine_client& client, std::vector<int32_t> ids) {
  std::promise<detokenize_result> answer;
  client.detokenize({{}, std::move(ids)},
                    [&](detokenize_result r) { answer.set_value(std::move(r)); });
  return answer.get_future().get();
}

TEST(engine_client, detokenize_refuses_ids_outside_the_vocabulary_instead_of_dropping_them) {
  engine_system engine(testing::stories_config(512, 64));
  const detokenize_result ok = detokenize(engine.client(), {1, 403, 407});
  EXPECT_TRUE(ok.error.empty()) << ok.error;
  EXPECT_FALSE(ok.text.empty());
  for (int32_t bad : {512, -1, 100000}) {
    const detokenize_result r = detokenize(engine.client(), {403, bad});
    EXPECT_EQ(r.error_status, 400) << bad;
    EXPECT_EQ(r.error, "token id " + std::to_string(bad) + " is outside the vocabulary (size 512)");
    EXPECT_TRUE(r.text.empty());
  }
}

TEST(engine_client, tokenize_keeps_the_status_of_a_refusal) {
  engine_system engine(testing::stories_config(512, 64));
  generate_request chat;
  chat.kind = prompt_kind::chat;  // stories260K has no chat template
  chat.chat_json = R"({"messages": [{"role": "user", "content": "hi"}]})";
  std::promise<tokenize_result> answer;
  engine.client().tokenize(chat, [&](tokenize_result r) { answer.set_value(std::move(r)); });
  const tokenize_result r = answer.get_future().get();
  EXPECT_EQ(r.error_status, 400) << r.error;
  EXPECT_NE(r.error.find("no chat template"), std::string::npos) << r.error;
}

TEST(engine_client, the_pool_gauges_read_their_sizes_before_the_first_request) {
  engine_system engine(testing::stories_config(512, 64));
  const std::string metrics = engine.client().metrics_text();
  const auto line = metrics.find("num_free_blocks{");
  ASSERT_NE(line, std::string::npos) << metrics;
  const auto device = metrics.find("pool=\"device\"", line);
  ASSERT_NE(device, std::string::npos);
  const auto end = metrics.find('\n', device);
  const std::string sample = metrics.substr(device, end - device);
  EXPECT_EQ(sample.substr(sample.rfind(' ') + 1), "512") << sample;  // the whole pool
}

}  // namespace
}  // namespace actorllm

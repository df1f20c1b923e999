// The engine port as net/ calls it, against the real actors: the tokenizer endpoints.
#include <gtest/gtest.h>

#include <future>

#include "actors/system/engine_system.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

detokenize_result detokenize(engine_client& client, std::vector<int32_t> ids) {
  std::promise<detokenize_result> answer;
  client.detokenize(std::move(ids), [&](detokenize_result r) { answer.set_value(std::move(r)); });
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

}  // namespace
}  // namespace actorllm

// One compiled grammar serves many sequences on many threads: its caches fill concurrently
// and every thread sees the masks a lone thread computes.
#include "grammar/compiled_grammar.hpp"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "grammar/grammar.hpp"
#include "tests/grammar/grammar_tokenizers.hpp"

namespace actorllm::grammar {
namespace {

// The masks along a random walk (the same for the same seed and grammar).
std::vector<std::vector<uint32_t>> walk_masks(const std::shared_ptr<const compiled_grammar>& g,
                                              uint32_t seed, int steps) {
  std::mt19937 rng(seed);
  matcher m(g);
  std::vector<std::vector<uint32_t>> out;
  for (int s = 0; s < steps && !m.is_terminated(); ++s) {
    std::vector<uint32_t> mask(m.mask_words());
    m.fill_mask(mask);
    out.push_back(mask);
    std::vector<int32_t> allowed;
    for (size_t id = 0; id < g->vocab().mask_size(); ++id)
      if ((mask[id / 32] >> (id % 32)) & 1) allowed.push_back(static_cast<int32_t>(id));
    if (allowed.empty()) break;
    EXPECT_TRUE(m.accept_token(allowed[rng() % allowed.size()]));
  }
  return out;
}

TEST(compiled_grammar, threads_fill_the_caches_concurrently_with_the_same_masks) {
  auto v = testing::shared_vocabulary("llama2");
  const char* schema = R"({"type": "object", "properties": {"a": {"type": "string"},
      "b": {"type": "array", "items": {"$ref": "#"}}}, "required": ["a"]})";
  auto alone = compile_json_schema(std::string_view(schema), {}, v);
  std::vector<std::vector<std::vector<uint32_t>>> expected;
  for (uint32_t seed = 0; seed < 4; ++seed) expected.push_back(walk_masks(alone, seed, 40));

  auto shared = compile_json_schema(std::string_view(schema), {}, v);
  std::vector<std::vector<std::vector<uint32_t>>> got(8);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 8; ++t)
    threads.emplace_back([&, t] { got[t] = walk_masks(shared, t % 4, 40); });
  for (auto& t : threads) t.join();
  for (uint32_t t = 0; t < 8; ++t) EXPECT_EQ(got[t], expected[t % 4]) << "thread " << t;
}

TEST(compiled_grammar, one_matcher_fills_masks_on_several_threads_at_once) {
  auto v = testing::shared_vocabulary("llama2");
  auto g = compile_json_object({}, v);
  matcher m(g);
  ASSERT_TRUE(m.accept_bytes(R"({"a": [{"b": "x)"));
  std::vector<uint32_t> expected(m.mask_words());
  m.fill_mask(expected);
  auto cold = compile_json_object({}, v);  // masks computed while the caches fill
  matcher same(cold);
  ASSERT_TRUE(same.accept_bytes(R"({"a": [{"b": "x)"));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<uint32_t> mask(same.mask_words());
      for (int i = 0; i < 20; ++i) {
        same.fill_mask(mask);
        mismatches[t] += mask != expected;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(compiled_grammar, precompute_on_threads_fills_every_state) {
  auto v = testing::shared_vocabulary("llama2");
  auto g = compile_json_object({}, v);
  EXPECT_EQ(g->statistics().cached_states, 0u);
  g->precompute(4);
  size_t reading = 0;
  for (size_t s = 0; s < g->states().num_states(); ++s)
    reading += g->states().reads_bytes(int32_t(s));
  EXPECT_EQ(g->statistics().cached_states, reading);
}

}  // namespace
}  // namespace actorllm::grammar

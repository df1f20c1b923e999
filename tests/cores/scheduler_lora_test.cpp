// The scheduler's side of multi-LoRA: a cache salt keys the prefix cache apart per adapter
// (equal tokens under another adapter never hit, and survive a swap with their own salt);
// max_loras bounds the distinct adapters among running requests while every request still
// finishes with its reference tokens, in FCFS order among requests of admitted adapters.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "actors/scheduler/block_manager.hpp"
#include "tests/cores/scheduler_harness.hpp"

namespace actorllm {
namespace {

TEST(lora_cache_salt, equal_tokens_hit_only_under_the_same_salt) {
  block_manager m({/*block_size=*/4, /*num_device_blocks=*/16, /*num_cpu_blocks=*/8, true});
  const std::vector<int32_t> tokens = testing::make_prompt(13);
  EXPECT_EQ(m.allocate(1, tokens, 13, /*cache_salt=*/7), 0);
  EXPECT_EQ(m.num_cached_tokens(tokens, 7), 12);
  EXPECT_EQ(m.num_cached_tokens(tokens, 0), 0);
  EXPECT_EQ(m.num_cached_tokens(tokens, 8), 0);
  EXPECT_EQ(m.allocate(2, tokens, 13, 0), 0) << "the base model hit an adapter's blocks";
  EXPECT_EQ(m.allocate(3, tokens, 13, 7), 12);
  // Grown and swapped, a sequence keeps hashing its blocks under its own salt.
  std::vector<block_copy> copies;
  std::vector<int32_t> longer = testing::make_prompt(17);
  m.append_slots(1, longer, 17, copies);
  m.free(3);
  EXPECT_EQ(m.num_cached_tokens(longer, 7), 16);
  EXPECT_EQ(m.num_cached_tokens(longer, 0), 12) << "sequence 2's own blocks, unsalted";
  const std::vector<seq_id> out{1};
  m.swap_out(out);
  m.swap_in(out);
  EXPECT_EQ(m.num_cached_tokens(longer, 7), 16);
  m.check_invariants();
}

TEST(scheduler_lora, max_loras_bounds_the_adapters_of_running_requests) {
  for (int32_t max_loras : {1, 2, 3}) {
    scheduler_options o = testing::small_options(64);
    o.max_loras = max_loras;
    testing::harness h(o);
    std::map<seq_id, int32_t> adapter_of;
    for (int i = 0; i < 12; ++i) {
      sampling_params p = testing::make_params(6 + i % 4);
      p.lora_id = i % 5;  // 0 (the base model) and adapters 1 to 4
      h.add("r" + std::to_string(i), testing::make_prompt(3 + i % 7, 10 + i), p);
    }
    int32_t most = 0;
    while (h.sched.has_work()) {
      const step_plan plan = h.step();
      for (const auto& s : plan.new_seqs) adapter_of[s.seq] = s.params.lora_id;
      std::set<int32_t> adapters;
      for (const auto& s : plan.seqs)
        if (adapter_of.at(s.seq) != 0) adapters.insert(adapter_of.at(s.seq));
      EXPECT_LE(static_cast<int32_t>(adapters.size()), max_loras);
      most = std::max(most, static_cast<int32_t>(adapters.size()));
      ASSERT_LT(h.num_steps, 1000);
    }
    EXPECT_EQ(most, max_loras) << "the limit was never reached: the test proves nothing";
    for (int i = 0; i < 12; ++i) h.expect_reference("r" + std::to_string(i));
  }
}

}  // namespace
}  // namespace actorllm

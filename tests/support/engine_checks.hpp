#pragma once
/// Checks the engine tests share, on the CPU and on a CUDA device alike.
#include <gtest/gtest.h>

#include <vector>

#include "actors/offline_engine/llm_engine.hpp"

namespace actorllm::testing {

/// Each request's tokens when it runs alone on an engine of `config` (choice 0): the
/// reference a batched, chunked, preempted or speculating run must equal.
inline std::vector<std::vector<int32_t>> solo_tokens(
    const engine_config& config, const std::vector<generate_request>& requests) {
  llm_engine engine(engine_setup::load(config));
  std::vector<std::vector<int32_t>> alone;
  for (const auto& r : requests) alone.push_back(run_to_completion(engine, {r})[0][0].token_ids);
  return alone;
}

/// After a run that had to preempt (`mode`): every request has exactly its solo tokens, at
/// least one preemption happened, and both pools are empty again.
inline void expect_preempted_run_matches_alone(const llm_engine& engine,
                                               const std::vector<std::vector<request_output>>& out,
                                               const std::vector<std::vector<int32_t>>& alone,
                                               preemption_mode mode) {
  ASSERT_EQ(out.size(), alone.size());
  for (size_t i = 0; i < out.size(); ++i)
    EXPECT_EQ(out[i][0].token_ids, alone[i]) << "request " << i << " mode " << to_string(mode);
  EXPECT_GT(engine.stats().num_preemptions, 0);
  EXPECT_EQ(engine.stats().device.num_used, 0);
  EXPECT_EQ(engine.stats().cpu.num_used, 0);
}

}  // namespace actorllm::testing

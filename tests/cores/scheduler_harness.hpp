#pragma once
// Drives a scheduler against the fake model step by step, checking the invariants after each
// call and collecting every output per (request, sample index).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "actors/scheduler/scheduler.hpp"
#include "tests/cores/scheduler_fake_model.hpp"

namespace actorllm::testing {

inline constexpr int32_t fake_vocab_size = 50;

inline scheduler_options small_options(int32_t num_device_blocks, int32_t num_cpu_blocks = 0) {
  scheduler_options o;
  o.block_size = 4;
  o.num_device_blocks = num_device_blocks;
  o.num_cpu_blocks = num_cpu_blocks;
  o.max_model_len = 64;
  o.eos_token_ids = {0};
  o.watermark = 0.0;
  o.scheduler.max_num_batched_tokens = 64;
  o.scheduler.max_num_seqs = 8;
  return o;
}

inline std::vector<int32_t> make_prompt(int32_t n, int32_t first = 10) {
  std::vector<int32_t> tokens(n);
  for (int32_t i = 0; i < n; ++i) tokens[i] = first + i;
  return tokens;
}

inline sampling_params make_params(int32_t max_tokens, int32_t n = 1, bool ignore_eos = true) {
  sampling_params p;
  p.max_tokens = max_tokens;
  p.n = n;
  p.ignore_eos = ignore_eos;
  return p;
}

struct collected_output {
  std::vector<int32_t> token_ids;
  finish_reason finish = finish_reason::none;
  int32_t num_outputs_after_finish = 0;
};

class harness {
 public:
  explicit harness(const scheduler_options& options)
      : options_(options),
        sched(options),
        model(options.block_size, options.num_device_blocks, options.num_cpu_blocks,
              fake_vocab_size, options.sliding_window) {}

  void add(const std::string& id, std::vector<int32_t> prompt, const sampling_params& params) {
    prompts_[id] = {prompt, params};
    auto error = sched.add_request(id, std::move(prompt), params);
    ASSERT_FALSE(error.has_value()) << error->message;
  }

  step_plan step() {
    step_plan plan = sched.schedule();
    sched.check_invariants();
    EXPECT_TRUE(plan.blocks_to_swap_in.empty() || plan.blocks_to_swap_out.empty());
    EXPECT_LE(plan.num_scheduled_tokens, options_.scheduler.max_num_batched_tokens);
    EXPECT_LE(int32_t(plan.seqs.size()), options_.scheduler.max_num_seqs);
    step_result result = model.run(plan);
    record(sched.update(result));
    sched.check_invariants();
    ++num_steps;
    return plan;
  }

  void run(int32_t max_steps = 10000) {
    while (sched.has_work() && num_steps < max_steps) step();
    EXPECT_FALSE(sched.has_work()) << "no progress after " << max_steps << " steps";
  }

  void record(const std::vector<request_output>& outputs) {
    for (const request_output& o : outputs) {
      collected_output& c = outputs_[o.request_id][o.index];
      if (c.finish != finish_reason::none) ++c.num_outputs_after_finish;
      c.token_ids.insert(c.token_ids.end(), o.token_ids.begin(), o.token_ids.end());
      c.finish = o.finish;
      EXPECT_EQ(o.num_generated_tokens, int32_t(c.token_ids.size()));
    }
  }

  const collected_output& output(const std::string& id, int32_t index = 0) {
    return outputs_[id][index];
  }

  /// Every sample of `id` finished with exactly what it generates unscheduled.
  void expect_reference(const std::string& id) {
    const auto& [prompt, params] = prompts_.at(id);
    for (int32_t j = 0; j < params.n; ++j) {
      reference_output ref =
          generate_reference(prompt, params, j, options_.eos_token_ids, options_.max_model_len,
                             fake_vocab_size, options_.sliding_window);
      const collected_output& got = outputs_[id][j];
      EXPECT_EQ(got.token_ids, ref.token_ids) << id << " sample " << j;
      EXPECT_EQ(got.finish, ref.finish) << id << " sample " << j;
      EXPECT_EQ(got.num_outputs_after_finish, 0);
    }
  }

  /// An aborted sample produced a prefix of its reference.
  void expect_reference_prefix(const std::string& id) {
    const auto& [prompt, params] = prompts_.at(id);
    for (int32_t j = 0; j < params.n; ++j) {
      reference_output ref =
          generate_reference(prompt, params, j, options_.eos_token_ids, options_.max_model_len,
                             fake_vocab_size, options_.sliding_window);
      const collected_output& got = outputs_[id][j];
      ASSERT_LE(got.token_ids.size(), ref.token_ids.size());
      EXPECT_TRUE(std::equal(got.token_ids.begin(), got.token_ids.end(), ref.token_ids.begin()))
          << id << " sample " << j;
    }
  }

  /// Finished samples match the oracle exactly; aborted ones produced a prefix of it.
  void expect_consistent(const std::string& id) {
    const auto& [prompt, params] = prompts_.at(id);
    for (int32_t j = 0; j < params.n; ++j) {
      reference_output ref =
          generate_reference(prompt, params, j, options_.eos_token_ids, options_.max_model_len,
                             fake_vocab_size, options_.sliding_window);
      const collected_output& got = outputs_[id][j];
      EXPECT_EQ(got.num_outputs_after_finish, 0) << id << " sample " << j;
      if (got.finish == finish_reason::abort) {
        ASSERT_LE(got.token_ids.size(), ref.token_ids.size()) << id << " sample " << j;
        EXPECT_TRUE(std::equal(got.token_ids.begin(), got.token_ids.end(), ref.token_ids.begin()))
            << id << " sample " << j;
      } else {
        EXPECT_EQ(got.token_ids, ref.token_ids) << id << " sample " << j;
        EXPECT_EQ(got.finish, ref.finish) << id << " sample " << j;
      }
    }
  }

  scheduler_options options_;
  scheduler sched;
  fake_model model;
  int32_t num_steps = 0;

 private:
  std::map<std::string, std::pair<std::vector<int32_t>, sampling_params>> prompts_;
  std::map<std::string, std::map<int32_t, collected_output>> outputs_;
};

}  // namespace actorllm::testing

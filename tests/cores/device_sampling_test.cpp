// Sampling on the device, seen from the host: how device_draws packs a request's parameters and
// the tokens its penalties see, and which batches model_runner hands to a backend's
// try_forward_sample (with which draws), through a fake backend that records the calls and runs
// the forward on the CPU.
#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/gpu_worker/device_draws.hpp"
#include "actors/gpu_worker/model_runner.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {

void PrintTo(const logit_edit& e, std::ostream* os) {
  *os << "{" << e.token << ", " << e.bias << ", " << e.output_count << ", " << e.seen << "}";
}

namespace device_sampling_test {

TEST(device_draws, merges_bias_prompt_and_output_into_one_sorted_edit_per_token) {
  sampling_params p;
  p.temperature = 0.8f;
  p.repetition_penalty = 1.2f;
  p.presence_penalty = 0.5f;
  // Token 9 twice (the biases add up); 600 and -1 lie outside a 512-token vocabulary.
  p.logit_bias = {{9, 1.0f}, {3, -2.0f}, {9, 0.5f}, {600, 5.0f}, {-1, 1.0f}};
  const std::vector<int32_t> prompt{3, 7, 7, 700};
  const std::unordered_map<int32_t, int32_t> counts{{7, 2}, {11, 1}};
  device_draws draws;
  draws.add(p, prompt, counts, 0.25f, 512);
  EXPECT_EQ(draws.edit_offsets, (std::vector<int32_t>{0, 4}));
  EXPECT_EQ(draws.edits,
            (std::vector<logit_edit>{
                {3, -2.0f, 0, 1}, {7, 0.0f, 2, 1}, {9, 1.5f, 0, 0}, {11, 0.0f, 1, 1}}));
  ASSERT_EQ(draws.rows.size(), 1u);
  EXPECT_EQ(draws.rows[0].temperature, 0.8f);
  EXPECT_EQ(draws.rows[0].repetition_penalty, 1.2f);
  EXPECT_EQ(draws.rows[0].presence_penalty, 0.5f);
  EXPECT_EQ(draws.rows[0].uniform, 0.25f);
}

TEST(device_draws, reads_only_what_the_set_penalties_read) {
  const std::vector<int32_t> prompt{3, 4};
  const std::unordered_map<int32_t, int32_t> counts{{5, 3}};
  sampling_params none;
  sampling_params frequency;
  frequency.frequency_penalty = 0.1f;
  sampling_params repetition;
  repetition.repetition_penalty = 0.9f;
  device_draws draws;
  draws.add(none, prompt, counts, 0.5f, 512);
  draws.add(frequency, prompt, counts, 0.5f, 512);   // output counts, not the prompt
  draws.add(repetition, prompt, counts, 0.5f, 512);  // every seen token, no counts
  EXPECT_EQ(draws.edit_offsets, (std::vector<int32_t>{0, 0, 1, 4}));
  EXPECT_EQ(draws.edits, (std::vector<logit_edit>{
                             {5, 0.0f, 3, 0}, {3, 0.0f, 0, 1}, {4, 0.0f, 0, 1}, {5, 0.0f, 0, 1}}));
  draws.clear();
  EXPECT_TRUE(draws.rows.empty());
  EXPECT_EQ(draws.edit_offsets, (std::vector<int32_t>{0}));
}

TEST(device_draws, a_greedy_row_gets_no_uniform) {
  sampling_params greedy;
  greedy.temperature = 0.0f;
  device_draws draws;
  draws.add(greedy, {}, {}, 0.7f, 512);
  EXPECT_EQ(draws.rows[0].temperature, 0.0f);
  EXPECT_EQ(draws.rows[0].uniform, 0.0f);
}

TEST(device_draws, the_uniform_takes_one_generator_call_as_the_host_draw_does) {
  std::mt19937_64 device_rng(99), host_rng(99);
  for (int i = 0; i < 100; ++i) {
    const float u = device_draw_uniform(device_rng);
    EXPECT_GE(u, 0.0f);
    EXPECT_LT(u, 1.0f);
    (void)std::uniform_real_distribution<double>(0.0, 7.5)(host_rng);  // sampler::draw's
    EXPECT_EQ(device_rng(), host_rng());
  }
}

TEST(device_draws, host_only_features_keep_a_request_on_the_host) {
  sampling_params plain;
  EXPECT_TRUE(can_draw_on_device(plain));
  sampling_params logprobs;
  logprobs.logprobs = 0;
  EXPECT_FALSE(can_draw_on_device(logprobs));
  sampling_params prompt_logprobs;
  prompt_logprobs.prompt_logprobs = 1;
  EXPECT_FALSE(can_draw_on_device(prompt_logprobs));
  sampling_params pooled;
  pooled.pooling = pooling_type::last;
  EXPECT_FALSE(can_draw_on_device(pooled));
}

/// A backend whose shortcuts (when on) run the forward on the CPU, record what they were
/// given and answer `token` for every sampled row (the argmax for greedy ones).
class recording_backend : public forward_backend {
 public:
  recording_backend(std::shared_ptr<const llama_model> model, const model_runner_config& config,
                    bool has_shortcuts, int32_t token)
      : cpu_(std::move(model), config), has_shortcuts_(has_shortcuts), token_(token) {}

  std::string device() const override { return "recording"; }
  std::vector<block_copy> move_blocks(const step_plan& plan) override {
    return cpu_.move_blocks(plan);
  }
  void forward(const forward_batch& batch, std::vector<float>& logits) override {
    ++num_host_forwards;
    cpu_.forward(batch, logits);
  }
  bool try_forward_greedy(const forward_batch& batch, std::vector<int32_t>& tokens,
                          const std::function<const row_token_masks&()>&) override {
    if (!has_shortcuts_) return false;
    ++num_greedy_calls;
    cpu_.forward(batch, logits_);
    const int64_t vocab = static_cast<int64_t>(logits_.size() / batch.logits_indices.size());
    tokens.clear();
    for (size_t r = 0; r < batch.logits_indices.size(); ++r)
      tokens.push_back(argmax(std::span<const float>(logits_).subspan(r * vocab, vocab)));
    return true;
  }
  bool try_forward_sample(const forward_batch& batch,
                          const std::function<const device_draws&()>& draws,
                          std::vector<int32_t>& tokens,
                          const std::function<const row_token_masks&()>&) override {
    ++num_sample_calls;
    if (!has_shortcuts_) return false;
    cpu_.forward(batch, logits_);
    recorded.push_back(draws());
    EXPECT_EQ(recorded.back().rows.size(), batch.logits_indices.size());
    tokens.assign(batch.logits_indices.size(), token_);
    return true;
  }

  int num_host_forwards = 0, num_greedy_calls = 0, num_sample_calls = 0;
  std::vector<device_draws> recorded;

 private:
  cpu_backend cpu_;
  bool has_shortcuts_;
  int32_t token_;
  std::vector<float> logits_;
};

class device_sampling_runner : public ::testing::Test {
 protected:
  device_sampling_runner() {
    config_.block_size = 16;
    config_.num_device_blocks = 8;
    config_.seed = 5;
  }

  /// A runner on a recording backend, which `backend_` then points at.
  std::unique_ptr<model_runner> make_runner(bool has_shortcuts, int32_t token = 42) {
    auto backend = std::make_unique<recording_backend>(model_, config_, has_shortcuts, token);
    backend_ = backend.get();
    return std::make_unique<model_runner>(model_, config_, std::move(backend));
  }

  /// Adds the prefill of a new sequence (prompt in block `block`) to `plan`.
  static void add_prefill(step_plan& plan, seq_id seq, const sampling_params& params, int32_t block,
                          int32_t num_samples = 1) {
    const std::vector<int32_t> prompt{1, 400, 511, 7};
    new_sequence s;
    s.request_id = "r" + std::to_string(seq);
    s.seq = seq;
    s.num_prompt_tokens = static_cast<int32_t>(prompt.size());
    s.params = params;
    plan.new_seqs.push_back(s);
    scheduled_sequence work;
    work.seq = seq;
    work.num_scheduled_tokens = static_cast<int32_t>(prompt.size());
    work.num_samples = num_samples;
    work.new_token_ids = prompt;
    work.new_block_ids = {block};
    plan.seqs.push_back(work);
    plan.num_scheduled_tokens += work.num_scheduled_tokens;
  }

  /// Adds one decoding step of a known sequence that has `computed` tokens in its cache.
  static void add_decode(step_plan& plan, seq_id seq, int32_t computed) {
    scheduled_sequence work;
    work.seq = seq;
    work.num_computed_tokens = computed;
    work.num_scheduled_tokens = 1;
    work.num_samples = 1;
    plan.seqs.push_back(work);
    plan.num_scheduled_tokens += 1;
  }

  static sampling_params sampled(float temperature = 0.7f) {
    sampling_params p;
    p.temperature = temperature;
    return p;
  }

  static step_plan numbered(uint64_t step) {
    step_plan plan;
    plan.step = step;
    return plan;
  }

  model_runner_config config_;
  std::shared_ptr<llama_model> model_ = std::make_shared<llama_model>(testing::stories260k_dir());
  recording_backend* backend_ = nullptr;
};

TEST_F(device_sampling_runner, a_sampled_batch_is_drawn_on_the_device_with_its_parameters) {
  auto runner = make_runner(true);
  sampling_params p = sampled(0.7f);
  p.top_k = 5;
  p.top_p = 0.9f;
  p.min_p = 0.05f;
  p.repetition_penalty = 1.1f;
  p.logit_bias = {{300, 2.0f}};
  step_plan plan = numbered(1);
  add_prefill(plan, 1, p, 0);
  add_prefill(plan, 2, sampled(0.0f), 1);  // a greedy row rides along
  const step_result result = runner->execute(plan);

  EXPECT_EQ(backend_->num_host_forwards, 0);
  ASSERT_EQ(backend_->recorded.size(), 1u);
  const device_draws& d = backend_->recorded[0];
  ASSERT_EQ(d.rows.size(), 2u);
  EXPECT_EQ(d.rows[0].temperature, 0.7f);
  EXPECT_EQ(d.rows[0].top_k, 5);
  EXPECT_EQ(d.rows[0].top_p, 0.9f);
  EXPECT_EQ(d.rows[0].min_p, 0.05f);
  EXPECT_EQ(d.rows[0].repetition_penalty, 1.1f);
  EXPECT_GE(d.rows[0].uniform, 0.0f);
  EXPECT_LT(d.rows[0].uniform, 1.0f);
  EXPECT_EQ(d.rows[1].temperature, 0.0f);
  // Row 0: the prompt's tokens (repetition) and the biased one; row 1: nothing.
  EXPECT_EQ(d.edit_offsets, (std::vector<int32_t>{0, 5, 5}));
  std::vector<int32_t> edited;
  for (const auto& e : d.edits) edited.push_back(e.token);
  EXPECT_EQ(edited, (std::vector<int32_t>{1, 7, 300, 400, 511}));

  ASSERT_EQ(result.seqs.size(), 2u);
  EXPECT_EQ(result.seqs[0].token_ids, (std::vector<int32_t>{42}));
  EXPECT_EQ(result.seqs[1].token_ids, (std::vector<int32_t>{42}));
}

TEST_F(device_sampling_runner, output_counts_grow_with_each_device_draw) {
  auto runner = make_runner(true, 42);
  sampling_params p = sampled();
  p.presence_penalty = 0.5f;
  step_plan plan = numbered(1);
  add_prefill(plan, 1, p, 0);
  runner->execute(plan);
  for (int32_t step = 2; step <= 3; ++step) {
    step_plan next = numbered(step);
    add_decode(next, 1, 4 + step - 2);
    runner->execute(next);
  }
  ASSERT_EQ(backend_->recorded.size(), 3u);
  EXPECT_TRUE(backend_->recorded[0].edits.empty());
  EXPECT_EQ(backend_->recorded[1].edits, (std::vector<logit_edit>{{42, 0.0f, 1, 0}}));
  EXPECT_EQ(backend_->recorded[2].edits, (std::vector<logit_edit>{{42, 0.0f, 2, 0}}));
}

TEST_F(device_sampling_runner, uniforms_come_from_the_sequences_generator) {
  std::vector<float> uniforms[2];
  for (auto& run : uniforms) {
    auto runner = make_runner(true);
    step_plan plan = numbered(1);
    add_prefill(plan, 1, sampled(), 0);
    runner->execute(plan);
    step_plan next = numbered(2);
    add_decode(next, 1, 4);
    runner->execute(next);
    for (const auto& d : backend_->recorded) run.push_back(d.rows[0].uniform);
  }
  // From the global seed and the request's id: the same in every run, a new one each step.
  ASSERT_EQ(uniforms[0].size(), 2u);
  EXPECT_EQ(uniforms[0], uniforms[1]);
  EXPECT_NE(uniforms[0][0], uniforms[0][1]);
  for (float u : uniforms[0]) EXPECT_TRUE(u >= 0.0f && u < 1.0f) << u;
}

TEST_F(device_sampling_runner, a_seeded_request_keeps_its_batch_on_the_host) {
  // Its tokens must not depend on what shares its batch, and the two paths pick differently
  // from one uniform.
  sampling_params p = sampled();
  p.seed = 1234;
  auto runner = make_runner(true);
  step_plan plan = numbered(1);
  add_prefill(plan, 1, p, 0);
  add_prefill(plan, 2, sampled(), 1);
  runner->execute(plan);
  EXPECT_EQ(backend_->num_sample_calls, 0);
  EXPECT_EQ(backend_->num_host_forwards, 1);
}

TEST_F(device_sampling_runner, host_only_rows_keep_the_whole_batch_on_the_host) {
  sampling_params logprobs = sampled();
  logprobs.logprobs = 2;
  sampling_params two = sampled();
  two.n = 2;
  for (int variant = 0; variant < 2; ++variant) {
    auto runner = make_runner(true);
    step_plan plan = numbered(1);
    add_prefill(plan, 1, sampled(), 0);
    if (variant == 0) add_prefill(plan, 2, logprobs, 1);
    if (variant == 1) add_prefill(plan, 2, two, 1, 2);  // n = 2: two draws from one row
    const step_result result = runner->execute(plan);
    EXPECT_EQ(backend_->num_sample_calls, 0) << "variant " << variant;
    EXPECT_EQ(backend_->num_host_forwards, 1) << "variant " << variant;
    ASSERT_EQ(result.seqs.size(), 2u);
    EXPECT_EQ(result.seqs[1].token_ids.size(), variant == 1 ? 2u : 1u);
  }
}

TEST_F(device_sampling_runner, an_all_greedy_batch_keeps_the_argmax_shortcut) {
  auto runner = make_runner(true);
  step_plan plan = numbered(1);
  add_prefill(plan, 1, sampled(0.0f), 0);
  runner->execute(plan);
  EXPECT_EQ(backend_->num_greedy_calls, 1);
  EXPECT_EQ(backend_->num_sample_calls, 0);
  EXPECT_EQ(backend_->num_host_forwards, 0);
}

TEST_F(device_sampling_runner, a_backend_without_the_shortcut_samples_as_before) {
  // Penalised, drawn from the runners' common seed: the host sampler's tokens, step for step,
  // with the generator untouched by the refused shortcut.
  sampling_params p = sampled(1.0f);
  p.frequency_penalty = 0.3f;
  std::vector<int32_t> tokens[2];
  for (int with_fake = 0; with_fake < 2; ++with_fake) {
    std::unique_ptr<model_runner> runner =
        with_fake ? make_runner(false) : std::make_unique<model_runner>(model_, config_);
    step_plan plan = numbered(1);
    add_prefill(plan, 1, p, 0);
    int32_t computed = 4;
    for (uint64_t step = 1; step <= 6; ++step) {
      const step_result result = runner->execute(plan);
      ASSERT_EQ(result.seqs.size(), 1u);
      tokens[with_fake].push_back(result.seqs[0].token_ids.at(0));
      plan = numbered(step + 1);
      add_decode(plan, 1, computed++);
    }
    if (with_fake) {
      EXPECT_EQ(backend_->num_sample_calls, 6);
      EXPECT_EQ(backend_->num_host_forwards, 6);
    }
  }
  EXPECT_EQ(tokens[0], tokens[1]);
}

}  // namespace device_sampling_test
}  // namespace actorllm

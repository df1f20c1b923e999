// A profiled forward (profiled_ops around the CPU ops) gives exactly the logits of a plain one,
// and counts each op once per call under its phase.
#include "model/profiled_ops.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "model/llama_model.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

std::vector<float> prefill_logits(const llama_model& model, op_profile* profile) {
  kv_cache cache(model.cache_shape(4, 16));
  std::vector<int32_t> table(4);
  std::iota(table.begin(), table.end(), 0);
  const std::vector<int32_t> prompt{1, 403, 407, 261, 378, 11, 340};
  forward_batch batch;
  batch.add_sequence(prompt, 0, table, 16, true);
  batch.finalize();
  forward_workspace ws;
  ws.profile = profile;
  std::vector<float> logits;
  model.forward(batch, cache, ws, logits);
  return logits;
}

TEST(profiled_ops, a_profiled_forward_is_the_same_forward_timed_op_by_op) {
  const llama_model model(testing::stories260k_dir());
  op_profile profile;
  EXPECT_EQ(prefill_logits(model, &profile), prefill_logits(model, nullptr));
  const op_profile::snapshot_t p = profile.snapshot();
  const int64_t layers = model.config().num_layers;
  const auto calls = [&](op_phase phase) { return p.calls[static_cast<size_t>(phase)]; };
  EXPECT_EQ(p.steps, 1);
  EXPECT_EQ(calls(op_phase::embed), 1);
  EXPECT_EQ(calls(op_phase::norms), 2 * layers);  // before attention and before the MLP
  EXPECT_EQ(calls(op_phase::qkv), layers);
  EXPECT_EQ(calls(op_phase::attention), layers);
  EXPECT_EQ(calls(op_phase::o_projection), layers);
  EXPECT_EQ(calls(op_phase::mlp), layers);
  EXPECT_EQ(calls(op_phase::all_reduce), 2 * layers);
  EXPECT_EQ(calls(op_phase::logits), 2);  // final hidden rows (none asked) and the LM head
  EXPECT_GT(p.nanoseconds[static_cast<size_t>(op_phase::mlp)], 0);
  profile.reset();
  EXPECT_EQ(profile.snapshot().steps, 0);
}

}  // namespace
}  // namespace actorllm

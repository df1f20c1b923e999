// The CUDA backend's step beyond the CPU's forward: a float8 KV cache, decode steps replayed
// from CUDA graphs, and tensor-parallel ranks on devices of their own summing through NCCL,
// each against the CPU backend or the eager path. Skipped where no CUDA device is visible, and
// in a build without CUDA (label gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "tests/actors/cuda_engine_checks.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/random_models.hpp"
#if ACTORLLM_HAS_CUDA
#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/gpu_worker/cuda_backend.hpp"
#include "actors/gpu_worker/sampler.hpp"
#include "kernels/cpu/all_reduce.hpp"
#include "model/llama_model.hpp"
#endif

namespace actorllm {
namespace {

#if ACTORLLM_HAS_CUDA
using testing::max_relative_error;

// --kv-cache-dtype fp8 on the device against the CPU's float8 cache: both round each key and
// value once to E4M3, so the logits agree up to a rare rounding flip (the keys and values
// themselves differ by float32 rounding); through a swap too. The float8 cache is really used:
// its logits differ from those of a float32 cache.
TEST(engine_cuda, float8_cache_matches_the_cpu_float8_cache) {
  REQUIRE_CUDA_DEVICE();
  auto model = std::make_shared<llama_model>(testing::stories260k_dir());
  model_runner_config config = testing::pools_of(8, 4);
  config.cache_dtype = kv_cache_dtype::float8;
  cpu_backend cpu(model, config);
  cuda_backend gpu(model, config, 0, cuda_storage::f32);
  model_runner_config wide = config;
  wide.cache_dtype = kv_cache_dtype::float32;
  cuda_backend gpu_wide(model, wide, 0, cuda_storage::f32);
  std::vector<int32_t> prompt{1};
  for (int i = 0; i < 39; ++i) prompt.push_back(3 + (i * 29) % 200);
  std::vector<int32_t> table{0, 1, 2};
  forward_batch batch;
  batch.add_sequence(prompt, 0, table, config.block_size, true);
  batch.finalize();
  std::vector<float> want, got, unrounded;
  cpu.forward(batch, want);
  gpu.forward(batch, got);
  gpu_wide.forward(batch, unrounded);
  EXPECT_LT(max_relative_error(got, want), 2e-2f) << "prefill";
  for (int32_t position = 40; position < 50; ++position) {
    if (position == 45) {
      // Out to the swap pool and back into other device blocks.
      step_plan plan;
      plan.blocks_to_swap_out = {{0, 0}, {1, 1}, {2, 2}};
      plan.blocks_to_swap_in = {{0, 5}, {1, 6}, {2, 7}};
      cpu.move_blocks(plan);
      gpu.move_blocks(plan);
      gpu_wide.move_blocks(plan);
      table = {5, 6, 7};
    }
    batch.clear();
    batch.add_sequence(std::vector<int32_t>{argmax(want)}, position, table, config.block_size,
                       true);
    batch.finalize();
    cpu.forward(batch, want);
    gpu.forward(batch, got);
    gpu_wide.forward(batch, unrounded);
    EXPECT_LT(max_relative_error(got, want), 2e-2f) << "decode at " << position;
    EXPECT_EQ(argmax(got), argmax(want)) << "decode at " << position;
  }
  EXPECT_GT(max_relative_error(got, unrounded), 1e-4f) << "the float8 cache was not used";
}

// CUDA graphs of decode steps against eager launches: the same logits step by step while the
// batch shrinks (another padded size), blocks are swapped between steps (the graph runs after
// the moves), and the contexts outgrow --max-seq-len-to-capture (eager again). Graphs were
// captured and replayed.
TEST(engine_cuda, decode_graphs_replay_what_eager_steps_compute) {
  REQUIRE_CUDA_DEVICE();
  auto model = std::make_shared<llama_model>(testing::stories260k_dir());
  model_runner_config config = testing::pools_of(40, 8);
  cuda_backend eager(model, config, 0, cuda_storage::f32);
  config.cuda_graph_max_batch = 16;
  config.cuda_graph_max_context = 64;
  cuda_backend graphs(model, config, 0, cuda_storage::f32);
  EXPECT_EQ(eager.graphs_captured(), 0);

  struct sequence {
    std::vector<int32_t> table;
    int32_t length = 0;
    int32_t next = 0;
  };
  std::vector<sequence> seqs(5);
  forward_batch batch;
  for (size_t s = 0; s < seqs.size(); ++s) {
    std::vector<int32_t> prompt{1};
    for (size_t i = 0; i < 8 + 5 * s; ++i) prompt.push_back(3 + int32_t((i * 31 + s) % 300));
    for (int b = 0; b < 5; ++b) seqs[s].table.push_back(int32_t(s) * 5 + b);
    seqs[s].length = static_cast<int32_t>(prompt.size());
    batch.add_sequence(prompt, 0, seqs[s].table, config.block_size, true);
  }
  batch.finalize();
  std::vector<float> want, got;
  eager.forward(batch, want);
  graphs.forward(batch, got);
  EXPECT_LT(max_relative_error(got, want), 1e-4f) << "prefill";
  const int64_t vocab = model->config().vocab_size;
  const auto next_tokens = [&] {
    for (size_t s = 0; s < seqs.size(); ++s)
      seqs[s].next = static_cast<int32_t>(
          std::max_element(want.begin() + s * vocab, want.begin() + (s + 1) * vocab) -
          (want.begin() + s * vocab));
  };
  next_tokens();
  for (int step = 0; step < 45; ++step) {
    if (step == 6) seqs.pop_back();  // a smaller padded batch: 4
    if (step == 10) {
      // Sequence 0 goes out and comes back into blocks 30..34, between two replays.
      step_plan plan;
      for (int b = 0; b < 5; ++b) {
        plan.blocks_to_swap_out.push_back({seqs[0].table[b], b});
        plan.blocks_to_swap_in.push_back({b, 30 + b});
      }
      eager.move_blocks(plan);
      graphs.move_blocks(plan);
      seqs[0].table = {30, 31, 32, 33, 34};
    }
    batch.clear();
    for (auto& s : seqs) {
      batch.add_sequence(std::vector<int32_t>{s.next}, s.length, s.table, config.block_size, true);
      ++s.length;
    }
    batch.finalize();
    eager.forward(batch, want);
    graphs.forward(batch, got);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(max_relative_error(got, want), 1e-4f) << "decode step " << step;
    next_tokens();
    if (step == 3) {
      // The device argmax reads a replay's logits (the step again: the same cache writes).
      std::vector<int32_t> tokens;
      ASSERT_TRUE(graphs.try_forward_greedy(batch, tokens));
      ASSERT_EQ(tokens.size(), seqs.size());
      for (size_t s = 0; s < seqs.size(); ++s) EXPECT_EQ(tokens[s], seqs[s].next) << s;
    }
  }
  EXPECT_GE(graphs.graphs_captured(), 2);  // batches of 8 and of 4
  EXPECT_GE(graphs.graph_replays(), 20);
  // Sequence 3's context passed 64 tokens: it runs eagerly.
  const int64_t replays = graphs.graph_replays();
  batch.clear();
  batch.add_sequence(std::vector<int32_t>{seqs[3].next}, seqs[3].length, seqs[3].table,
                     config.block_size, true);
  batch.finalize();
  eager.forward(batch, want);
  graphs.forward(batch, got);
  EXPECT_LT(max_relative_error(got, want), 1e-4f) << "eager again";
  EXPECT_EQ(graphs.graph_replays(), replays);
}

// --tensor-parallel-size 2 on CUDA: two shards on two devices, joined through the host group
// into one NCCL group, give the single device's logits (prefill, then decodes replayed from
// graphs, with their all-reduces captured).
TEST(engine_cuda, tensor_parallel_ranks_on_two_devices_match_one_device) {
  REQUIRE_CUDA_DEVICE();
  if (num_cuda_devices() < 2) GTEST_SKIP() << "one CUDA device";
  const cuda_backend_provider provider(num_cuda_devices(), "auto");
  if (!provider.tensor_parallel_refusal().empty()) GTEST_SKIP() << "built without NCCL";
  auto whole = std::make_shared<llama_model>(testing::stories260k_dir());
  model_runner_config config = testing::pools_of(8);
  config.cuda_graph_max_batch = 8;
  cuda_backend single(whole, config, 0, cuda_storage::f32);
  auto group = std::make_shared<cpu::host_all_reduce>(2);
  std::vector<std::unique_ptr<cuda_backend>> ranks(2);
  std::vector<std::thread> starting;
  for (int32_t r = 0; r < 2; ++r)
    starting.emplace_back([&, r] {
      model_runner_config rank = config;
      rank.all_reduce = group;
      rank.tp_rank = r;
      ranks[r] = std::make_unique<cuda_backend>(
          std::make_shared<llama_model>(testing::stories260k_dir(), tp_shard{r, 2}), rank, r,
          cuda_storage::f32);  // joins the NCCL group: both ranks at once
    });
  for (auto& t : starting) t.join();
  ASSERT_TRUE(ranks[0] && ranks[1]);

  const std::vector<int32_t> table{0, 1, 2, 3};
  std::vector<int32_t> tokens{1};
  for (int i = 0; i < 20; ++i) tokens.push_back(3 + (i * 29) % 200);
  int32_t position = 0;
  for (int step = 0; step < 8; ++step) {
    forward_batch batch;
    batch.add_sequence(tokens, position, table, config.block_size, true);
    batch.finalize();
    std::vector<float> want;
    std::vector<std::vector<float>> got(2);
    single.forward(batch, want);
    std::vector<std::thread> stepping;
    for (int r = 0; r < 2; ++r) stepping.emplace_back([&, r] { ranks[r]->forward(batch, got[r]); });
    for (auto& t : stepping) t.join();
    for (int r = 0; r < 2; ++r)
      EXPECT_LT(max_relative_error(got[r], want), 1e-4f) << "rank " << r << " step " << step;
    position += static_cast<int32_t>(tokens.size());
    tokens = {argmax(want)};
  }
  EXPECT_GT(ranks[0]->graph_replays(), 0);
}
#endif

}  // namespace
}  // namespace actorllm

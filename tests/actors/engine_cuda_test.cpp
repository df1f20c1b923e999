// The engine on a CUDA device (--device cuda): the stories260K golden greedy ids and text
// through the actors, exactly as on the CPU (fp32); batched, chunked and preempted runs (swap
// and recompute) equal to solo runs; the device pool sized by --gpu-memory-utilization.
// Skipped where no CUDA device is visible, and in a build without CUDA (label gpu). The
// select_backend tests run where no device is.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "actors/engine/llm_engine.hpp"
#include "actors/engine_system.hpp"
#include "actors/worker_backend.hpp"
#include "tests/common/requests.hpp"

namespace actorllm {
namespace {

#define REQUIRE_CUDA_DEVICE()                                      \
  do {                                                             \
    if (num_cuda_devices() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

engine_config cuda_config(int64_t num_device_blocks, int64_t num_cpu_blocks) {
  engine_config c = testing::stories_config(num_device_blocks, num_cpu_blocks);
  c.parallel.device = "cuda";
  return c;
}

nlohmann::json golden() {
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  return nlohmann::json::parse(in);
}

TEST(engine_cuda, golden_greedy_through_the_actors) {
  REQUIRE_CUDA_DEVICE();
  engine_system engine(cuda_config(512, 64));
  EXPECT_EQ(engine.setup().backend->device(), "cuda:0");
  caf::scoped_actor self{engine.system()};
  std::string device;
  self->request(engine.initial_workers(0).at(0), std::chrono::seconds(30), info_atom::value)
      .receive([&](const worker_info& info) { device = info.device; }, [](caf::error&) {});
  EXPECT_EQ(device, "cuda:0");

  const auto g = golden();
  const auto out = engine.client().generate({testing::ids_request("g", {1}, 120)});
  EXPECT_EQ(out[0][0].token_ids, g["output_token_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(out[0][0].text, g["output_text"].get<std::string>());
}

TEST(engine_cuda, golden_greedy_with_logprobs_samples_from_host_logits) {
  REQUIRE_CUDA_DEVICE();
  // logprobs take the host sampler's path (the logits copied back) instead of the device argmax.
  const auto c = cuda_config(512, 64);
  llm_engine engine(engine_setup::load(c, select_backend(c)));
  auto r = testing::ids_request("g", {1}, 120);
  r.params.logprobs = 1;
  const auto out = run_to_completion(engine, {r});
  EXPECT_EQ(out[0][0].token_ids, golden()["output_token_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(out[0][0].logprobs.size(), out[0][0].token_ids.size());
}

TEST(engine_cuda, batched_chunked_and_preempted_runs_match_alone) {
  REQUIRE_CUDA_DEVICE();
  const auto requests = testing::varied_requests(24, 40, 60, "r");
  std::vector<std::vector<int32_t>> alone;
  {
    const auto c = cuda_config(256, 256);
    llm_engine engine(engine_setup::load(c, select_backend(c)));
    for (const auto& r : requests) alone.push_back(run_to_completion(engine, {r})[0][0].token_ids);
  }
  for (auto mode : {preemption_mode::recompute, preemption_mode::swap}) {
    auto c = cuda_config(16, 256);           // 128 tokens: forces preemption
    c.scheduler.max_num_batched_tokens = 7;  // chunked prefill
    c.scheduler.preemption = mode;
    c.model.max_model_len = 128;
    c.cache.block_size = 8;
    llm_engine engine(engine_setup::load(c, select_backend(c)));
    const auto out = run_to_completion(engine, requests);
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(out[i][0].token_ids, alone[i]) << "request " << i << " mode " << to_string(mode);
    EXPECT_GT(engine.stats().num_preemptions, 0);
    EXPECT_EQ(engine.stats().device.num_used, 0);
    EXPECT_EQ(engine.stats().cpu.num_used, 0);
  }
}

TEST(engine_cuda, device_pool_sized_by_gpu_memory_utilization) {
  REQUIRE_CUDA_DEVICE();
  auto c = cuda_config(-1, 64);
  c.cache.gpu_memory_utilization = 0.05;
  llm_engine engine(engine_setup::load(c, select_backend(c)));
  const auto& mc = engine.setup().model->config();
  const int64_t block_bytes =
      2 * mc.num_layers * mc.num_kv_heads * c.cache.block_size * mc.head_dim * 4;
  const int64_t blocks = engine.setup().runner.num_device_blocks;
  EXPECT_GT(blocks, 0);
  // The pool fits the share of the device it was given (an H200 has 141 GB; any device < 1 TB).
  EXPECT_LT(blocks * block_bytes, int64_t(50) << 30);
  EXPECT_EQ(engine.setup().scheduler.num_device_blocks, blocks);

  const auto out = run_to_completion(engine, {testing::ids_request("g", {1}, 120)});
  EXPECT_EQ(out[0][0].token_ids, golden()["output_token_ids"].get<std::vector<int32_t>>());
}

TEST(select_backend, auto_and_cpu_take_the_cpu_where_no_device_is_visible) {
  if (num_cuda_devices() > 0) GTEST_SKIP() << "a CUDA device is visible";
  auto c = testing::stories_config(512, 64);
  for (const char* device : {"auto", "cpu"}) {
    c.parallel.device = device;
    EXPECT_EQ(select_backend(c)->device(), "cpu") << device;
  }
}

TEST(select_backend, device_cuda_without_a_device_is_a_clear_error) {
  if (num_cuda_devices() > 0) GTEST_SKIP() << "a CUDA device is visible";
  const auto c = cuda_config(512, 64);
  try {
    select_backend(c);
    FAIL() << "select_backend should refuse --device cuda";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--device cuda"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace actorllm

// The engine on a CUDA device (--device cuda): the stories260K golden greedy ids and text
// through the actors, exactly as on the CPU (fp32); batched, chunked and preempted runs (swap
// and recompute) equal to solo runs; the device pool sized by --gpu-memory-utilization.
// Skipped where no CUDA device is visible, and in a build without CUDA (label gpu). The
// select_backend tests run where no device is.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/offline_engine/llm_engine.hpp"
#include "actors/system/engine_system.hpp"
#include "actors/system/worker_backend.hpp"
#include "tests/actors/cuda_engine_checks.hpp"
#include "tests/support/engine_checks.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/requests.hpp"
#if ACTORLLM_HAS_CUDA
#include "actors/gpu_worker/cuda_backend.hpp"
#include "actors/gpu_worker/cuda_weights.hpp"
#include "tests/actors/host_tensor_values.hpp"
#endif

namespace actorllm {
namespace {

using testing::max_relative_error;

engine_config cuda_config(int64_t num_device_blocks, int64_t num_cpu_blocks) {
  engine_config c = testing::stories_config(num_device_blocks, num_cpu_blocks);
  c.parallel.device = "cuda";
  return c;
}

nlohmann::json golden() {
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  return nlohmann::json::parse(in);
}

#if ACTORLLM_HAS_CUDA

// The backend itself against the CPU one, as llama.cpp's test-backend-ops does: the same
// batches and block moves on both give the same logits, so a swap or a copy that moved the
// wrong block shows as a difference.
TEST(engine_cuda, backend_matches_the_cpu_backend_through_swaps_and_copies) {
  REQUIRE_CUDA_DEVICE();
  auto model = std::make_shared<llama_model>(testing::stories260k_dir());
  model_runner_config config = testing::pools_of(16, 8);
  cpu_backend cpu(model, config);
  cuda_backend gpu(model, config, 0, cuda_storage::f32);
  EXPECT_EQ(gpu.device(), "cuda:0");

  // Step 1: prefill A (20 tokens, blocks 0 1) and B (9 tokens, block 2).
  std::vector<int32_t> a{1}, b{1};
  for (int i = 0; i < 19; ++i) a.push_back(3 + (i * 37) % 500);
  for (int i = 0; i < 8; ++i) b.push_back(5 + (i * 11) % 500);
  forward_batch batch;
  batch.add_sequence(a, 0, std::vector<int32_t>{0, 1}, config.block_size, true);
  batch.add_sequence(b, 0, std::vector<int32_t>{2}, config.block_size, true);
  batch.finalize();
  std::vector<float> want, got;
  cpu.forward(batch, want);
  gpu.forward(batch, got);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_LT(max_relative_error(got, want), 1e-4f) << "prefill";

  // Step 2: A goes out to CPU blocks 3 4 and comes back into device blocks 5 6; B's block is
  // copied to 7. Then one decode step each, from the moved blocks only.
  step_plan plan;
  plan.blocks_to_swap_out = {{0, 3}, {1, 4}};
  plan.blocks_to_swap_in = {{3, 5}, {4, 6}};
  plan.blocks_to_copy = {{2, 7}};
  cpu.move_blocks(plan);
  gpu.move_blocks(plan);
  batch.clear();
  batch.add_sequence(std::vector<int32_t>{42}, 20, std::vector<int32_t>{5, 6}, config.block_size,
                     true);
  batch.add_sequence(std::vector<int32_t>{7}, 9, std::vector<int32_t>{7}, config.block_size, true);
  batch.finalize();
  cpu.forward(batch, want);
  gpu.forward(batch, got);
  EXPECT_LT(max_relative_error(got, want), 1e-4f) << "decode after swap and copy";

  // The device argmax agrees with the host's on the same step.
  std::vector<int32_t> tokens;
  batch.clear();
  batch.add_sequence(std::vector<int32_t>{43}, 21, std::vector<int32_t>{5, 6}, config.block_size,
                     true);
  batch.finalize();
  cpu.forward(batch, want);
  ASSERT_TRUE(gpu.try_forward_greedy(batch, tokens));
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0], argmax(want));
}

/// A 40-token prompt, then 12 greedy decode steps, on the CPU backend and the device (float32):
/// the logits agree at every step, within `tolerance` relative.
void expect_device_logits_match_the_cpu(std::shared_ptr<llama_model> model,
                                        float tolerance = 1e-4f) {
  model_runner_config config = testing::pools_of(8);
  cpu_backend cpu(model, config);
  cuda_backend gpu(model, config, 0, cuda_storage::f32);
  const std::vector<int32_t> table{0, 1, 2, 3};
  std::vector<int32_t> prompt{1};
  for (int i = 0; i < 39; ++i) prompt.push_back(3 + (i * 29) % 200);
  forward_batch batch;
  batch.add_sequence(prompt, 0, table, config.block_size, true);
  batch.finalize();
  std::vector<float> want, got;
  cpu.forward(batch, want);
  gpu.forward(batch, got);
  EXPECT_LT(max_relative_error(got, want), tolerance) << "prefill";
  for (int32_t position = 40; position < 52; ++position) {
    batch.clear();
    batch.add_sequence(std::vector<int32_t>{argmax(want)}, position, table, config.block_size,
                       true);
    batch.finalize();
    cpu.forward(batch, want);
    gpu.forward(batch, got);
    EXPECT_LT(max_relative_error(got, want), tolerance) << "decode at " << position;
  }
}

// Qwen3's per-head q/k norms on the device: a random Qwen3 checkpoint (GQA, head_dim set
// apart from hidden_size / heads).
TEST(engine_cuda, qwen3_backend_matches_the_cpu_backend) {
  REQUIRE_CUDA_DEVICE();
  const testing::random_model qwen3("cuda-qwen3", "--arch qwen3");
  auto model = std::make_shared<llama_model>(qwen3.dir());
  ASSERT_TRUE(model->config().qk_norm);
  expect_device_logits_match_the_cpu(model);
}

// Mistral's sliding window on the device, 8 tokens against a 40-token prompt: prefill and
// decode attend to the window only.
TEST(engine_cuda, windowed_mistral_backend_matches_the_cpu_backend) {
  REQUIRE_CUDA_DEVICE();
  const testing::random_model mistral("cuda-mistral", "--arch mistral --sliding-window 8");
  auto model = std::make_shared<llama_model>(mistral.dir());
  ASSERT_EQ(model->config().max_sliding_window(), 8);
  expect_device_logits_match_the_cpu(model);
}

// Phi-3's LongRoPE on the device: past original_max_position_embeddings (32 here) a sequence
// rotates with the long factors' rows, from the prompt's prefill on.
TEST(engine_cuda, longrope_phi3_backend_matches_the_cpu_backend) {
  REQUIRE_CUDA_DEVICE();
  const testing::random_model phi3("cuda-phi3", "--arch phi3 --rope-scaling longrope");
  auto model = std::make_shared<llama_model>(phi3.dir());
  ASSERT_EQ(model->weights().rotary.long_offset, 32);
  expect_device_logits_match_the_cpu(model);
}

// Gemma 3 on the device: scaled embeddings, (1 + w) norms (folded at load), sandwich norms,
// GeGLU, query_pre_attn_scalar, per-head q/k norms, and 5:1 windowed layers with their own
// RoPE base.
TEST(engine_cuda, gemma3_backend_matches_the_cpu_backend) {
  REQUIRE_CUDA_DEVICE();
  const testing::random_model gemma3("cuda-gemma3", "--arch gemma3");
  expect_device_logits_match_the_cpu(std::make_shared<llama_model>(gemma3.dir()));
}

// Gemma 2 on the device: everything Gemma 3 needs but the q/k norms, plus soft-capped
// attention scores and final logits, and interleaved windows with one RoPE base.
TEST(engine_cuda, gemma2_backend_matches_the_cpu_backend) {
  REQUIRE_CUDA_DEVICE();
  const testing::random_model gemma2("cuda-gemma2", "--arch gemma2");
  auto model = std::make_shared<llama_model>(gemma2.dir());
  ASSERT_GT(model->config().attn_logit_softcapping, 0);
  expect_device_logits_match_the_cpu(model);
}

// The mixtures of experts on the device, routed as the CPU layer routes: Mixtral (softmax
// top-2, renormalised), Qwen2-MoE (a shared expert behind a sigmoid gate), Qwen3-MoE (q/k
// norms, many narrow experts).
TEST(engine_cuda, mixture_of_experts_backends_match_the_cpu_backend) {
  REQUIRE_CUDA_DEVICE();
  for (const char* arch : {"mixtral", "qwen2_moe", "qwen3_moe"}) {
    SCOPED_TRACE(arch);
    const testing::random_model moe(std::string("cuda-") + arch, std::string("--arch ") + arch);
    auto model = std::make_shared<llama_model>(moe.dir());
    ASSERT_GT(model->config().moe.num_experts, 0);
    expect_device_logits_match_the_cpu(model);
  }
}

// Quantized checkpoints on the device: the projections stay int8, int4 or float8 there
// (quantized_gemv for the decode steps, dequantize then cuBLAS for the 40-token prefill, the
// desc_act column order through a gather), and the logits equal the CPU backend's, which
// multiplies the same weights.
TEST(engine_cuda, quantized_models_match_the_cpu_backend) {
  REQUIRE_CUDA_DEVICE();
  // The CPU's float tiles: the avx512_vnni set would round x to 8 bits, the device does not.
  const testing::scoped_kernel_isa float_tiles(testing::best_float_isa());
  const std::string base =
      "--dim 256 --layers 2 --heads 4 --kv-heads 2 --hidden 768 --vocab 512 --dtype bf16 ";
  for (const char* scheme :
       {"--quantize gptq4-act --group-size 64", "--quantize awq4 --group-size 128",
        "--quantize gptq8 --group-size 128", "--quantize fp8-channel"}) {
    SCOPED_TRACE(scheme);
    const testing::random_model ckpt("cuda-quantized", base + scheme);
    // Float8 on sm_89+: the 40-token prefill runs W8A8 (activations rounded to E4M3 per
    // tensor), which the CPU does not, and the decode steps read the K/V it wrote.
    const bool w8a8 = std::string(scheme) == "--quantize fp8-channel";
    expect_device_logits_match_the_cpu(std::make_shared<llama_model>(ckpt.dir()),
                                       w8a8 ? 5e-2f : 1e-4f);
  }
  const testing::random_model plain("cuda-quantized-at-load", base);
  for (const char* at_load : {"int8", "int4"}) {
    SCOPED_TRACE(at_load);
    expect_device_logits_match_the_cpu(
        std::make_shared<llama_model>(plain.dir(), tp_shard{}, weight_options{"auto", at_load}));
  }
}

// What each family's forward reads reaches the device at load (no device here): the shared
// forward (model/decoder_forward.cpp) reads the config itself, the same on every backend.
TEST(cuda_families, every_family_reaches_the_device_with_what_it_needs) {
  const auto sent = [](const testing::random_model& ckpt, testing::recorded_weights& record) {
    const llama_model model(ckpt.dir());
    return make_cuda_weight_table(model, record);
  };
  {
    const testing::random_model qwen3("families-qwen3", "--arch qwen3");
    testing::recorded_weights r;
    const auto t = sent(qwen3, r);
    EXPECT_NE(t->refs.layers.at(0).q_norm, nullptr);
    EXPECT_NE(t->refs.layers.at(0).k_norm, nullptr);
  }
  {
    const testing::random_model phi3("families-phi3", "--arch phi3 --rope-scaling longrope");
    testing::recorded_weights r;
    EXPECT_EQ(sent(phi3, r)->refs.long_rope_offset, 32);
    ASSERT_NE(r.find("rotary"), nullptr);
    EXPECT_TRUE(r.find("rotary")->keep_fp32);
  }
  {
    const testing::random_model gemma3("families-gemma3", "--arch gemma3");
    testing::recorded_weights r;
    const auto t = sent(gemma3, r);
    EXPECT_NE(t->refs.local_rotary, nullptr);
    EXPECT_NE(t->refs.layers.at(0).attn_out_norm, nullptr);
    EXPECT_NE(t->refs.layers.at(0).mlp_out_norm, nullptr);
    ASSERT_NE(r.find("local_rotary"), nullptr);
    EXPECT_TRUE(r.find("local_rotary")->keep_fp32);
  }
  {
    // Qwen2-MoE: experts and a shared expert with its gate.
    const testing::random_model moe("families-qwen2-moe", "--arch qwen2_moe");
    testing::recorded_weights r;
    const auto t = sent(moe, r);
    const auto& layers = t->refs.layers;
    const auto sparse = std::find_if(layers.begin(), layers.end(),
                                     [](const decoder_layer_refs& l) { return l.sparse(); });
    ASSERT_NE(sparse, layers.end());
    EXPECT_EQ(static_cast<int64_t>(sparse->expert_gate_up.size()),
              llama_model(moe.dir()).config().moe.num_experts);
    EXPECT_GT(sparse->shared_width, 0);
    EXPECT_NE(sparse->shared_gate, nullptr);
  }
}

// The whole draw on the device against the host sampler's processing of the CPU backend's
// logits: with top_k = 1 the draw is the argmax of the processed row, whatever the uniform.
TEST(engine_cuda, device_draws_apply_bias_and_penalties_as_the_host_sampler) {
  REQUIRE_CUDA_DEVICE();
  auto model = std::make_shared<llama_model>(testing::stories260k_dir());
  model_runner_config config = testing::pools_of(4);
  cpu_backend cpu(model, config);
  cuda_backend gpu(model, config, 0, cuda_storage::f32);
  const std::vector<int32_t> prompt{1, 300, 301, 302};
  forward_batch batch;
  for (int32_t s = 0; s < 3; ++s)
    batch.add_sequence(prompt, 0, std::vector<int32_t>{s}, config.block_size, true);
  batch.finalize();
  std::vector<float> want;
  cpu.forward(batch, want);
  const auto vocab = static_cast<int64_t>(want.size() / 3);
  const int32_t top = argmax(std::span<const float>(want).first(vocab));

  std::vector<sampling_params> params(3);
  for (auto& p : params) p.top_k = 1, p.temperature = 0.8f;
  params[0].logit_bias = {{top, -100.0f}};  // the leader banned
  params[1].repetition_penalty = 2.0f;      // the leader, if seen, loses half
  params[2].presence_penalty = 2.0f;        // the leader, in the output, loses 2
  params[2].temperature = 0.0f;
  const std::unordered_map<int32_t, int32_t> counts{{top, 1}};
  const std::vector<int32_t> seen_prompt{top, 5};
  device_draws draws;
  std::vector<int32_t> expected;
  for (int r = 0; r < 3; ++r) {
    const std::span<const int32_t> prompt_tokens =
        r == 1 ? std::span<const int32_t>(seen_prompt) : std::span<const int32_t>();
    draws.add(params[r], prompt_tokens, counts, 0.5f, static_cast<int32_t>(vocab));
    std::vector<float> row(want.begin() + r * vocab, want.begin() + (r + 1) * vocab);
    apply_penalties(row, params[r], prompt_tokens, counts);
    expected.push_back(argmax(row));
  }
  std::vector<int32_t> tokens;
  ASSERT_TRUE(gpu.try_forward_sample(
      batch, [&]() -> const device_draws& { return draws; }, tokens));
  EXPECT_EQ(tokens, expected);
  EXPECT_NE(expected[0], top);
}
#endif

TEST(engine_cuda, sampled_requests_draw_on_the_device_reproducibly) {
  REQUIRE_CUDA_DEVICE();
  // top_k = 1: a sampled request whose draw is the argmax, so the golden greedy ids.
  const auto c = cuda_config(512, 64);
  llm_engine engine(engine_setup::load(c, select_backend(c)));
  auto top1 = testing::ids_request("top1", {1}, 120);
  top1.params.temperature = 0.9f;
  top1.params.top_k = 1;
  EXPECT_EQ(run_to_completion(engine, {top1})[0][0].token_ids,
            golden()["output_token_ids"].get<std::vector<int32_t>>());
  // A penalised request without a seed of its own (a seeded one stays on the host) draws on
  // the device from the engine's seed and its id: the same tokens when run again.
  auto penalised = testing::ids_request("penalised", {1, 300}, 60);
  penalised.params.temperature = 1.0f;
  penalised.params.top_p = 0.9f;
  penalised.params.frequency_penalty = 0.5f;
  const auto first = run_to_completion(engine, {penalised})[0][0].token_ids;
  EXPECT_EQ(run_to_completion(engine, {penalised})[0][0].token_ids, first);
  EXPECT_EQ(first.size(), 60u);
}

TEST(engine_cuda, golden_greedy_through_the_actors) {
  REQUIRE_CUDA_DEVICE();
  engine_system engine(cuda_config(512, 64));
  EXPECT_EQ(engine.setup().backend->device(), "cuda");  // the kind; each worker has its device
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
    testing::expect_preempted_run_matches_alone(engine, run_to_completion(engine, requests), alone,
                                                mode);
  }
}

TEST(engine_cuda, constrained_greedy_masks_on_the_device_as_the_cpu_does) {
  REQUIRE_CUDA_DEVICE();
  // A JSON-schema request beside a free one, greedy: the device applies the grammar's bitmask
  // and takes the argmax there (no logits copy), and picks the CPU backend's tokens.
  std::vector<generate_request> requests{testing::ids_request("json", {1, 300, 301}, 80),
                                         testing::ids_request("free", {1, 302}, 80)};
  requests[0].params.ignore_eos = false;
  requests[0].params.structured.kind = output_constraint::json_object;
  requests[0].params.structured.field = "response_format";
  const auto cpu_config = testing::stories_config(512, 64);
  llm_engine on_cpu(engine_setup::load(cpu_config));
  const auto want = run_to_completion(on_cpu, requests);
  const auto c = cuda_config(512, 64);
  llm_engine on_gpu(engine_setup::load(c, select_backend(c)));
  const auto got = run_to_completion(on_gpu, requests);
  for (size_t i = 0; i < requests.size(); ++i)
    EXPECT_EQ(got[i][0].token_ids, want[i][0].token_ids) << requests[i].request_id;
  EXPECT_EQ(got[0][0].text.front(), '{') << got[0][0].text;
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

#if ACTORLLM_HAS_CUDA
TEST(cuda_dtype, auto_keeps_a_16_bit_checkpoint_s_type_and_named_types_win) {
  EXPECT_EQ(cuda_storage_for("auto", "bfloat16"), cuda_storage::bf16);
  EXPECT_EQ(cuda_storage_for("auto", "float16"), cuda_storage::f16);
  EXPECT_EQ(cuda_storage_for("auto", "float32"), cuda_storage::f32);
  EXPECT_EQ(cuda_storage_for("auto", ""), cuda_storage::f32);
  EXPECT_EQ(cuda_storage_for("float32", "bfloat16"), cuda_storage::f32);
  EXPECT_EQ(cuda_storage_for("half", "bfloat16"), cuda_storage::f16);
  EXPECT_EQ(cuda_storage_for("bfloat16", "float32"), cuda_storage::bf16);
  EXPECT_THROW(cuda_storage_for("fp8", "bfloat16"), std::invalid_argument);
  EXPECT_THROW(cuda_backend_provider(1, "int4"), std::invalid_argument);
  EXPECT_STREQ(storage_name(cuda_storage::bf16), "bfloat16");
}

// --tensor-parallel-size on CUDA needs NCCL in the build, and nothing else; the CPU's host
// all-reduce serves the CPU, and another device without a group of its own is refused.
TEST(cuda_dtype, tensor_parallelism_on_cuda_needs_nccl) {
  const std::string why = cuda_backend_provider(2, "auto").tensor_parallel_refusal();
#if ACTORLLM_HAS_NCCL
  EXPECT_EQ(why, "");
#else
  EXPECT_NE(why.find("NCCL"), std::string::npos) << why;
#endif
  EXPECT_EQ(cpu_backend_provider().tensor_parallel_refusal(), "");
}

// --kv-cache-dtype on the device: the activations' own type or float8; another 16- or 32-bit
// type is refused at start (by plan_kv, with the choices named), and the log says what is kept.
TEST(cuda_dtype, the_kv_cache_holds_the_activations_type_or_float8) {
  EXPECT_EQ(cuda_cache_for("auto", cuda_storage::bf16), cuda_cache::activations);
  EXPECT_EQ(cuda_cache_for("float32", cuda_storage::f32), cuda_cache::activations);
  EXPECT_EQ(cuda_cache_for("float16", cuda_storage::f16), cuda_cache::activations);
  EXPECT_EQ(cuda_cache_for("fp8", cuda_storage::bf16), cuda_cache::fp8_e4m3);
  EXPECT_EQ(cuda_cache_for("fp8_e4m3", cuda_storage::f32), cuda_cache::fp8_e4m3);
  EXPECT_THROW(cuda_cache_for("float16", cuda_storage::bf16), std::invalid_argument);
  EXPECT_THROW(cuda_cache_for("float32", cuda_storage::f16), std::invalid_argument);

  const llama_model model(testing::stories260k_dir());  // float32: f32 on the device
  engine_config c = cuda_config(64, 0);
  const cuda_backend_provider provider(1, "auto");
  EXPECT_EQ(provider.describe_kv_cache(model, c), "float32 on the device (the activations' type)");
  c.cache.cache_dtype = "fp8";
  EXPECT_EQ(provider.describe_kv_cache(model, c), "float8 (E4M3) on the device");
  c.cache.cache_dtype = "float16";
  const kv_budget refused = provider.plan_kv(model, c, 256);
  EXPECT_NE(refused.error.find("--kv-cache-dtype float16"), std::string::npos) << refused.error;
  EXPECT_NE(refused.error.find("fp8"), std::string::npos) << refused.error;
}
#endif

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

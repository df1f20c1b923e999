#pragma once
/// The CUDA backend of the worker: the weights, the paged KV pool and the pinned CPU swap pool
/// on one device, and the shared forward over the CUDA ops (cuda_decoder); its logits copied
/// back as float32 for the host sampler, or tokens drawn on the device. Plain C++ over the kernels'
/// API, built only with ACTORLLM_HAS_CUDA (the shell library); this header names no CUDA type. A
/// device error throws cuda::cuda_error.
#include <memory>
#include <string>
#include <vector>

#include "actors/gpu_worker/forward_backend.hpp"

namespace actorllm {

/// What the device stores weights, activations and the KV cache in; every op accumulates in
/// fp32. f32 reproduces the CPU backend's greedy ids exactly.
enum class cuda_storage { f32, f16, bf16 };

/// --dtype on the device: float16 (half) and bfloat16 as named, float32 (float) as named, and
/// auto the checkpoint's torch_dtype where it is float16 or bfloat16 (vLLM's default), else
/// float32. Throws std::invalid_argument on another --dtype name.
cuda_storage cuda_storage_for(const std::string& dtype,
                              const std::string& checkpoint_dtype = "float32");

/// "float32", "float16" or "bfloat16".
const char* storage_name(cuda_storage storage);

/// What the device's KV cache holds: the activations' own type, or float8 E4M3.
enum class cuda_cache { activations, fp8_e4m3 };

/// --kv-cache-dtype on the device: auto (or the activations' own type named) keeps the
/// activations' type, fp8 (fp8_e4m3) float8 E4M3 as on the CPU. Throws std::invalid_argument
/// for another 16- or 32-bit type: the kernels write the cache from the activations' type and
/// convert only to float8.
cuda_cache cuda_cache_for(const std::string& cache_dtype, cuda_storage storage);

class cuda_backend : public forward_backend {
 public:
  /// Uploads the weights to device `device_index` and allocates both pools. Work runs on a
  /// stream of its own; every call returns when the device is done.
  cuda_backend(std::shared_ptr<const llama_model> model, const model_runner_config& config,
               int device_index, cuda_storage storage);
  ~cuda_backend() override;

  std::string device() const override;
  std::vector<block_copy> move_blocks(const step_plan& plan) override;
  /// CUDA graphs of decode steps captured so far, and steps that replayed one.
  int64_t graphs_captured() const;
  int64_t graph_replays() const;
  void forward(const forward_batch& batch, std::vector<float>& logits) override;
  /// The argmax on the device, after the masks' bitmask kernel: only the token ids come back.
  bool try_forward_greedy(const forward_batch& batch, std::vector<int32_t>& tokens,
                          const std::function<const row_token_masks&()>& masks = {}) override;
  /// The whole draw on the device (cuda::sample_rows): only the token ids come back.
  bool try_forward_sample(const forward_batch& batch,
                          const std::function<const device_draws&()>& draws,
                          std::vector<int32_t>& tokens,
                          const std::function<const row_token_masks&()>& masks = {}) override;

 private:
  struct impl;
  std::shared_ptr<const llama_model> model_;
  int device_index_;
  std::unique_ptr<impl> impl_;
};

/// Sizes the device pool as vLLM does and builds one cuda_backend per worker, each on the
/// device its model_runner_config::device_index names (one worker per device).
class cuda_backend_provider : public backend_provider {
 public:
  /// num_devices: the devices visible to this process (CUDA_VISIBLE_DEVICES applied), >= 1.
  /// dtype: --dtype, resolved for each model by cuda_storage_for (checked here: a bad name
  /// throws std::invalid_argument).
  cuda_backend_provider(int32_t num_devices, std::string dtype);

  std::string device() const override { return "cuda"; }
  int32_t num_devices() const override { return num_devices_; }
  /// What the device keeps `model`'s weights, activations and KV cache in, and why.
  std::string describe_weights(const llama_model& model) const override;
  /// Empty where this build has NCCL (the ranks of a replica sum on their devices).
  std::string tensor_parallel_refusal() const override;
  /// The device cache's elements (cuda_cache_for), for the startup log.
  std::string describe_kv_cache(const llama_model& model,
                                const engine_config& config) const override;
  /// The device pool: --num-gpu-blocks-override, or what --gpu-memory-utilization leaves
  /// after a profile run (profile_peak_memory) on device 0 for one worker with its weights;
  /// every device gets that many blocks (the devices are taken to be alike, as vLLM does).
  /// The swap pool: --num-cpu-blocks-override, or --swap-space GiB of pinned host memory.
  kv_budget plan_kv(const llama_model& model, const engine_config& config,
                    int32_t max_model_len) const override;
  std::unique_ptr<forward_backend> make_backend(std::shared_ptr<const llama_model> model,
                                                const model_runner_config& config) const override;

 private:
  cuda_storage storage_for(const llama_model& model) const;

  int32_t num_devices_;
  std::string dtype_;
};

/// Device memory around vLLM's profile run, in bytes.
struct cuda_memory_profile {
  size_t total = 0;           ///< the device's memory
  size_t in_use_before = 0;   ///< in use before the weights (other processes, the context)
  size_t in_use_at_peak = 0;  ///< after one forward at the largest batch, its KV cache left out
  size_t weights = 0;         ///< held by the weights
};

/// Uploads the weights, runs one forward at the largest batch the scheduler may send
/// (max_num_batched_tokens tokens over up to max_num_seqs sequences that each sample), reads
/// the memory in use, and frees it all again. `cache`: the pool's elements in that forward.
cuda_memory_profile profile_peak_memory(const llama_model& model, const engine_config& config,
                                        int32_t max_model_len, int device_index,
                                        cuda_storage storage,
                                        cuda_cache cache = cuda_cache::activations);

}  // namespace actorllm

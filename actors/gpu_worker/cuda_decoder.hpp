#pragma once
/// A decoder model on one CUDA device: its weights uploaded once, its paged KV cache, and the
/// forward every backend runs (model/decoder_forward.hpp) over the CUDA ops, plain decode
/// steps through CUDA graphs (graph_forward_ops); then the step's end: the logits back to the
/// host, or tokens chosen on the device (device_sampler). Nothing here knows an architecture.
/// Plain C++ over the kernels' API, shared by the worker's CUDA backend and tools/gpu_only;
/// built only with CUDA. A device error throws cuda::cuda_error.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "actors/gpu_worker/cuda_weights.hpp"
#include "kernels/cuda/cuda_forward_ops.cuh"
#include "kernels/cuda/decode_graphs.hpp"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/device_sampler.cuh"
#include "kernels/cuda/graph_forward_ops.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/projector.cuh"
#include "model/decoder_forward.hpp"
#include "model/forward_batch.hpp"
#include "model/model_config.hpp"

namespace actorllm {

class llama_model;

struct cuda_decoder_options {
  cuda::dtype storage = cuda::dtype::f32;  ///< weights, activations and the cache's elements
  /// Decode steps through CUDA graphs (max_batch 0: every step op by op, --enforce-eager). A
  /// mixture of experts, routed on the host inside the step, always runs op by op.
  cuda::decode_graph_limits graphs;
  /// Sums a row-parallel projection's partial output over the tensor-parallel group; null:
  /// one rank.
  cuda::cuda_forward_ops::all_reduce_fn all_reduce;
  int32_t tp_size = 1;
};

class cuda_decoder {
 public:
  /// Uploads `model`'s weights (the shard's, under tensor parallelism) on the current device;
  /// work runs on `stream` (null: a stream of its own, which decode graphs can capture, where
  /// the legacy default stream cannot be). The model must outlive this.
  cuda_decoder(const llama_model& model, const cuda_decoder_options& options, cudaStream_t stream);
  ~cuda_decoder();
  cuda_decoder(const cuda_decoder&) = delete;
  cuda_decoder& operator=(const cuda_decoder&) = delete;

  /// The cache layout this model needs: elements of the storage type, or float8 E4M3.
  cuda::kv_cache_layout cache_layout(int64_t num_blocks, int64_t block_size,
                                     cuda::kv_format format = cuda::kv_format::activations) const;
  /// Makes a new cache (the old one freed first) of num_blocks device blocks and
  /// num_cpu_blocks pinned host blocks; every step runs over it.
  void use_cache(int64_t num_blocks, int64_t block_size, cuda::kv_format format,
                 int64_t num_cpu_blocks);
  cuda::device_kv_cache& cache() { return *cache_; }

  /// Writes the batch's new K/V into the cache and the logits (num_logits, vocab) as float32
  /// into `logits` (resized). Synchronous. Throws std::invalid_argument on a batch that does
  /// not fit the cache or the model, std::runtime_error on one with LoRA adapters.
  void forward(const forward_batch& batch, std::vector<float>& logits);
  /// As forward, but each logits row's argmax is taken on the device, after `masks` (asked for
  /// once the forward is queued).
  void forward_greedy(const forward_batch& batch, std::vector<int32_t>& tokens,
                      const std::function<cuda::host_token_masks()>& masks = {});
  /// As forward, but each row's token is drawn on the device; `draws`, then `masks`, are asked
  /// for once the forward is queued (device_sampler::sample).
  void forward_sample(const forward_batch& batch, const std::function<cuda::host_draws()>& draws,
                      std::vector<int32_t>& tokens,
                      const std::function<cuda::host_token_masks()>& masks = {});

  /// Decode graphs captured, and steps that launched one, since construction.
  cuda::graph_forward_ops::counts graphs() const;
  int64_t max_position() const { return max_position_; }

 private:
  /// Queues the forward of `batch`; returns the device float32 logits.
  float* run(const forward_batch& batch);

  const llama_model& model_;
  cuda_decoder_options options_;
  int64_t max_position_;
  std::unique_ptr<cuda::device_stream> own_stream_;  // where the caller gives none
  cudaStream_t stream_;
  cuda::projector projector_;
  device_weight_sink weights_;
  std::unique_ptr<const cuda_weight_table> table_;
  decoder_scratch scratch_;
  cuda::device_sampler sampler_;
  // Bound to the cache (use_cache).
  std::unique_ptr<cuda::device_kv_cache> cache_;
  std::unique_ptr<cuda::cuda_forward_ops> ops_;
  std::unique_ptr<cuda::graph_forward_ops> graph_ops_;
  cuda::graph_forward_ops::counts earlier_graphs_;  // of the caches before this one
};

}  // namespace actorllm

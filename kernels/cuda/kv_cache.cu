#include <cmath>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/copy_blocks.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/swap_blocks.cuh"

namespace actorllm::cuda {

device_kv_cache::device_kv_cache(const kv_cache_layout& layout, int64_t num_cpu_blocks)
    : layout_(layout),
      num_cpu_blocks_(num_cpu_blocks),
      gpu_(static_cast<size_t>(layout.num_blocks * layout.bytes_per_block())),
      cpu_(static_cast<size_t>(num_cpu_blocks * layout.bytes_per_block())) {
  layer_moved_.reserve(static_cast<size_t>(layout.num_layers));
  for (int64_t l = 0; l < layout.num_layers; ++l) layer_moved_.emplace_back();
}

device_kv_cache::~device_kv_cache() {
  if (cudaStreamSynchronize(moves_.get()) != cudaSuccess) cudaGetLastError();  // no throw here
}

void device_kv_cache::move_blocks(const block_pairs& swap_out, const block_pairs& swap_in,
                                  const block_pairs& copies) {
  if (swap_out.empty() && swap_in.empty() && copies.empty()) return;
  const cudaStream_t stream = moves_.get();
  const int64_t bytes = layout_.block_bytes();
  // One stream keeps the order: a swap-out has read a device block before a swap-in or a
  // copy overwrites it.
  for (int64_t l = 0; l < layout_.num_layers; ++l) {
    swap_blocks(k(l), cpu_k(l), swap_out, bytes, stream);
    swap_blocks(v(l), cpu_v(l), swap_out, bytes, stream);
    swap_blocks(cpu_k(l), k(l), swap_in, bytes, stream);
    swap_blocks(cpu_v(l), v(l), swap_in, bytes, stream);
    if (copies.empty()) CUDA_CHECK(cudaEventRecord(layer_moved_[l].get(), stream));
  }
  if (!copies.empty()) {
    copy_blocks(copies, stream);  // one launch over every layer
    for (auto& event : layer_moved_) CUDA_CHECK(cudaEventRecord(event.get(), stream));
  }
  moves_outstanding_ = true;
}

void device_kv_cache::wait_for_layer(int64_t layer, cudaStream_t stream) {
  if (!moves_outstanding_) return;
  CUDA_CHECK(cudaStreamWaitEvent(stream, layer_moved_.at(static_cast<size_t>(layer)).get(), 0));
  if (layer + 1 == layout_.num_layers) moves_outstanding_ = false;
}

void device_kv_cache::wait_for_moves(cudaStream_t stream) {
  if (!moves_outstanding_ || layer_moved_.empty()) return;
  // Every layer's event is recorded on the one copy stream, the last one after all moves.
  CUDA_CHECK(cudaStreamWaitEvent(stream, layer_moved_.back().get(), 0));
  moves_outstanding_ = false;
}

void device_kv_cache::synchronize_moves() {
  CUDA_CHECK(cudaStreamSynchronize(moves_.get()));
}

void device_kv_cache::copy_blocks(const block_pairs& pairs, cudaStream_t stream) {
  std::vector<void*> ks, vs;
  for (int64_t l = 0; l < layout_.num_layers; ++l) {
    ks.push_back(k(l));
    vs.push_back(v(l));
  }
  cuda::copy_blocks(ks, vs, pairs, layout_.block_bytes(), stream);
}

int64_t num_gpu_blocks_for(size_t total_bytes, double gpu_memory_utilization,
                           size_t in_use_at_peak_bytes, int64_t bytes_per_block) {
  if (bytes_per_block <= 0) return 0;
  const double budget =
      std::floor(double(total_bytes) * gpu_memory_utilization) - double(in_use_at_peak_bytes);
  if (budget <= 0) return 0;
  return static_cast<int64_t>(budget / double(bytes_per_block));
}

size_t device_memory_in_use() {
  const memory_info info = device_memory_info();
  return info.total_bytes - info.free_bytes;
}

}  // namespace actorllm::cuda

#pragma once
/// The paged KV cache of one worker on its device, and its sizing from a memory profile.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

struct kv_cache_layout {
  int64_t num_layers = 0;
  int64_t num_blocks = 0;
  int64_t block_size = 16;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  dtype type = dtype::bf16;  ///< of the activations the cache is written from and read into
  kv_format format = kv_format::activations;  ///< the elements: `type`, or float8 E4M3

  int64_t block_elems() const { return num_kv_heads * block_size * head_dim; }
  /// Bytes of one layer's K (or V) block.
  int64_t block_bytes() const { return block_elems() * kv_element_size(format, type); }
  /// Bytes of one block across all layers, K and V.
  int64_t bytes_per_block() const { return 2 * num_layers * block_bytes(); }
};

/// For every layer a K and a V tensor (num_blocks, num_kv_heads, block_size, head_dim) carved
/// out of one device allocation, plus a pinned host swap pool of num_cpu_blocks blocks in the
/// same layout, and a stream of its own for moving blocks. Block ids come from the block
/// manager; this class owns the memory and orders the moves.
class device_kv_cache {
 public:
  device_kv_cache(const kv_cache_layout& layout, int64_t num_cpu_blocks);
  /// Waits for the copy stream before the memory goes.
  ~device_kv_cache();
  device_kv_cache(const device_kv_cache&) = delete;
  device_kv_cache& operator=(const device_kv_cache&) = delete;

  const kv_cache_layout& layout() const { return layout_; }
  int64_t num_cpu_blocks() const { return num_cpu_blocks_; }
  void* k(int64_t layer) const { return slice(gpu_.get(), layout_.num_blocks, 2 * layer); }
  void* v(int64_t layer) const { return slice(gpu_.get(), layout_.num_blocks, 2 * layer + 1); }
  void* cpu_k(int64_t layer) const { return slice(cpu_.get(), num_cpu_blocks_, 2 * layer); }
  void* cpu_v(int64_t layer) const { return slice(cpu_.get(), num_cpu_blocks_, 2 * layer + 1); }

  using block_pairs = std::vector<std::pair<int32_t, int32_t>>;

  /// One step's block moves on the cache's own copy stream, returning at once: layer by layer
  /// the swap-outs (device block, host block), then the swap-ins (host block, device block),
  /// each layer's end marked by an event; then the copy-on-write copies (src, dst) of every
  /// layer, which every layer's event then follows. wait_for_layer orders the forward after
  /// them, so layer l computes while the copy engine still moves later layers' blocks.
  void move_blocks(const block_pairs& swap_out, const block_pairs& swap_in,
                   const block_pairs& copies);
  /// Makes `stream` wait until layer l's blocks of the last move_blocks are in place; nothing
  /// when no move is outstanding. The forward waits on every layer in order; its wait on the
  /// last layer ends the outstanding moves.
  void wait_for_layer(int64_t layer, cudaStream_t stream);
  /// Makes `stream` wait until every block of the last move_blocks is in place, and ends the
  /// outstanding moves (a captured graph then holds no wait of its own).
  void wait_for_moves(cudaStream_t stream);
  /// Waits on the host for the copy stream (a failed copy throws here).
  void synchronize_moves();

 private:
  /// Copy-on-write in every layer: (src, dst) device block ids, all pairs at once.
  void copy_blocks(const block_pairs& pairs, cudaStream_t stream);
  /// Tensor `index` (2 * layer + 0 for K, + 1 for V) of a region holding `blocks` per tensor.
  void* slice(void* base, int64_t blocks, int64_t index) const {
    return static_cast<char*>(base) + index * blocks * layout_.block_bytes();
  }

  kv_cache_layout layout_;
  int64_t num_cpu_blocks_;
  device_buffer gpu_;
  pinned_buffer cpu_;
  device_stream moves_;
  std::vector<device_event> layer_moved_;  ///< one per layer, recorded on moves_
  bool moves_outstanding_ = false;
};

/// vLLM's sizing: floor((total * gpu_memory_utilization - in_use_at_peak) / bytes_per_block),
/// where in_use_at_peak is the device memory in use after one dummy forward at the largest
/// batch, weights and workspaces included (device_memory_in_use() then). 0 when none fits.
int64_t num_gpu_blocks_for(size_t total_bytes, double gpu_memory_utilization,
                           size_t in_use_at_peak_bytes, int64_t bytes_per_block);

/// Device memory in use now on the current device, all processes: total - free.
size_t device_memory_in_use();

}  // namespace actorllm::cuda

#pragma once
/// y = x Wᵀ + bias for every form the device keeps a projection in: dense rows of the
/// activations' type through cuBLAS, or quantized codes (inputs first put in the codes' column
/// order where a checkpoint reorders them; a few rows through the quantized GEMV, prefill-sized
/// float8 batches W8A8 on float8 tensor cores where the device has them, anything else
/// dequantized and then through cuBLAS). Owns the cuBLAS context and the scratch these need.
/// Queued on one stream; not thread-safe (one per worker).
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/fp8_gemm.cuh"
#include "kernels/cuda/gemm.cuh"
#include "kernels/cuda/quantized_linear.cuh"

namespace actorllm::cuda {

/// A projection on the device: dense (out, in) rows of the activations' type, or quantized
/// (quantized.codes set, device pointers).
struct linear_weight {
  const void* dense = nullptr;
  quantized_matrix quantized;
};

class projector {
 public:
  explicit projector(cudaStream_t stream);
  projector(const projector&) = delete;
  projector& operator=(const projector&) = delete;

  /// Readies the scratch and paths a quantized matrix needs; call once per matrix before its
  /// first linear (at upload), so that no step allocates.
  void prepare(const quantized_matrix& w);
  /// y(n, out) = x(n, in) Wᵀ + bias, x, bias and y of type t.
  void linear(const linear_weight& w, const void* x, const void* bias, int64_t n,
              int64_t in_features, int64_t out_features, void* y, dtype t);
  gemm_context& gemm() { return gemm_; }
  cudaStream_t stream() const { return stream_; }
  /// The device addresses a captured CUDA graph of these launches bakes in.
  std::vector<const void*> scratch_addresses() const;

 private:
  cudaStream_t stream_;
  gemm_context gemm_;
  device_buffer permuted_, dequantized_;
  int64_t max_quantized_elems_ = 0;  // the largest quantized matrix, for its dense scratch
  bool fp8_tensor_cores_ = false;
  std::unique_ptr<fp8_gemm> fp8_;  // made on first use
};

}  // namespace actorllm::cuda

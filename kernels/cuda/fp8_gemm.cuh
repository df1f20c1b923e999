#pragma once
/// W8A8 float8 GEMMs on tensor cores through cuBLASLt (Hopper and Ada, sm_89 and newer), for
/// float8 checkpoints on prefill-sized batches: the activations are quantized to E4M3 with
/// one scale per tensor (max |x| / 448, found on the device: no host round trip), multiplied
/// by the E4M3 weight codes in fp32, then each output column is scaled by its weight row's
/// scale and the bias added, in the activations' type. As vLLM's fp8 linear layers with
/// dynamic per-tensor activation scales.
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/quantized_linear.cuh"

namespace actorllm::cuda {

/// Whether the current device multiplies float8 on tensor cores (sm_89 and newer).
bool fp8_gemm_supported();

/// Whether `w` is a layout fp8_gemm takes: float8 codes with one scale per output row, both
/// dimensions multiples of 16, no column reordering.
bool fp8_gemm_takes(const quantized_matrix& w);

/// x quantized as fp8_gemm does it, on the host (the tests' reference): the scale
/// max |x| / 448 (1 where x is all zeros), and each x / scale rounded to E4M3.
float fp8_activation_scale(const float* x, int64_t n);

/// One cuBLASLt handle with its workspace, and the scratch of the quantized activations and
/// the fp32 product, grown to the largest call. Not thread-safe: one per worker.
class fp8_gemm {
 public:
  explicit fp8_gemm(size_t workspace_bytes = size_t{32} << 20);
  ~fp8_gemm();
  fp8_gemm(const fp8_gemm&) = delete;
  fp8_gemm& operator=(const fp8_gemm&) = delete;

  /// y(n, out) = quantized x(n, in) @ (codes * row scale)^T + bias, x, bias and y of type t
  /// (f16 or bf16; f32 as well). w must satisfy fp8_gemm_takes. Queued on `stream`.
  void linear(const void* x, const quantized_matrix& w, const void* bias, int64_t n, void* y,
              dtype t, cudaStream_t stream);

  /// The scratch's device addresses (a captured graph bakes them in).
  std::vector<const void*> buffers() const {
    return {workspace_.get(), x8_.get(), product_.get(), scale_.get()};
  }

 private:
  struct plan;
  /// The descriptors and algorithm of shape (n, in, out), made and cached on first use: the
  /// heuristic query costs more than a small GEMM, and prefill calls every shape per layer.
  const plan& plan_for(int64_t n, int64_t in, int64_t out);

  cublasLtHandle_t handle_ = nullptr;
  device_buffer workspace_;
  device_buffer x8_;       ///< (n, in) E4M3
  device_buffer product_;  ///< (n, out) fp32
  device_buffer scale_;    ///< the activations' max |x| (as bits), then their scale
  std::map<std::array<int64_t, 3>, std::unique_ptr<plan>> plans_;
};

}  // namespace actorllm::cuda

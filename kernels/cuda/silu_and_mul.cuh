#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// out(n, hidden) = silu(gate_up[:, :hidden]) * gate_up[:, hidden:].  gate_up: (n, 2 * hidden);
/// both of type t on the device.
void silu_and_mul(const void* gate_up, int64_t n, int64_t hidden, void* out, dtype t,
                  cudaStream_t stream);

/// The same with GELU's tanh approximation for the gate (GeGLU: Gemma's gelu_pytorch_tanh),
/// 0.5 g (1 + tanh(sqrt(2/pi) (g + 0.044715 g^3))), as cpu::gelu_tanh_and_mul.
void gelu_tanh_and_mul(const void* gate_up, int64_t n, int64_t hidden, void* out, dtype t,
                       cudaStream_t stream);

/// x(n) *= factor, in float32 then rounded to t (Gemma's scaled embeddings).
void scale_in_place(void* x, int64_t n, float factor, dtype t, cudaStream_t stream);

/// x(n) = cap * tanh(x / cap) on float32 values (Gemma 2's final logit soft-capping).
void softcap_in_place(float* x, int64_t n, float cap, cudaStream_t stream);

}  // namespace actorllm::cuda

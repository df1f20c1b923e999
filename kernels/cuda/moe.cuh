#pragma once
/// The last step of a mixture-of-experts layer: each token's expert outputs added back,
/// weighted by its routing weights, plus Qwen2-MoE's gated shared expert. The experts
/// themselves run as one GEMM per expert over the rows routed to it (expert_dispatch).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// y(n, dim): row t = sum over j < k of weights[t k + j] * expert_out[rows[t k + j]], then
/// + sigmoid(shared_gate[t]) * shared_out[t] when shared_out is not null. expert_out:
/// (num_rows, dim), rows: (n k) int32 indices into it, weights: (n k) float32; shared_out:
/// (n, dim) and shared_gate: (n) logits, or both null. expert_out, shared_out, shared_gate
/// and y are of type t; y may not overlap the inputs. Every row index must lie in
/// [0, num_rows): the caller builds them.
void moe_combine(const void* expert_out, const int32_t* rows, const float* weights, int64_t n,
                 int64_t k, int64_t dim, const void* shared_out, const void* shared_gate, void* y,
                 dtype t, cudaStream_t stream);

}  // namespace actorllm::cuda

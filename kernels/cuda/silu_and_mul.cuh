#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// out(n, hidden) = silu(gate_up[:, :hidden]) * gate_up[:, hidden:].  gate_up: (n, 2 * hidden);
/// both of type t on the device.
void silu_and_mul(const void* gate_up, int64_t n, int64_t hidden, void* out, dtype t,
                  cudaStream_t stream);

}  // namespace actorllm::cuda

#pragma once
/// Multi-LoRA's batched update (Punica's SGMV shrink-expand pair, on the CPU): in a batch where
/// rows belong to different adapters, each adapter's rows are gathered, shrunk through its A
/// (rank columns) and expanded through its B into the rows' outputs:
///
///   y[row] += scaling · (x[row] Aᵀ) Bᵀ      for every row whose adapter is k
///
/// so one pass of the base projection serves every adapter, and an adapter costs
/// rows · rank · (in + out) multiply-adds instead of a merged copy of the weights. Rows are
/// split over the calling thread's team.
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/forward_ops.hpp"

namespace actorllm::cpu {

/// One adapter's pair for one projection: the forward ops' op_lora_pair (A (rank, in) and B
/// transposed, (rank, out), row-major, so that the expand step streams contiguous rows). Rank 0
/// (null a and b_t): the adapter leaves this projection alone.
using lora_weights = op_lora_pair;

/// Adds each row's adapter update to y (n, out; row r at y + r * y_stride, y_stride >= out)
/// for x (n, in). `adapter_of_row` (n) names an entry of `adapters`, or -1 for a row of the
/// base model, which is left alone. `scratch` is reused between calls.
void add_lora(const float* x, int64_t n, int64_t in, float* y, int64_t out, int64_t y_stride,
              std::span<const int32_t> adapter_of_row, std::span<const lora_weights> adapters,
              std::vector<float>& scratch);

}  // namespace actorllm::cpu

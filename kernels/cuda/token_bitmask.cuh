#pragma once
/// Structured output on the device: a grammar's allowed-token bitmask applied to float32
/// logits where they are, so a constrained greedy row needs no logits copy to the host.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace actorllm::cuda {

/// For each i < num_masked: logits row rows[i] (of (n, vocab)) gets -infinity at every id
/// whose bit is clear in masks(i) (bit id % 32 of word id / 32; words_per_row words a mask,
/// ids past them cleared too), as grammar::apply_token_mask does on the host. Other rows are
/// untouched. rows (num_masked) and masks (num_masked, words_per_row) are on the device.
void apply_token_bitmask(float* logits, int64_t vocab, const int32_t* rows, const uint32_t* masks,
                         int64_t num_masked, int64_t words_per_row, cudaStream_t stream);

}  // namespace actorllm::cuda

#pragma once
/// Token selection on the device: greedy (argmax), top-k / top-p sampling, and the full draw
/// of a serving step (logit bias, penalties, structured-output mask, then the sampling rule).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"
#include "kernels/row_sampling.hpp"

namespace actorllm::cuda {

/// tokens(n) = index of the largest logit of each row (the lowest index among equal maxima).
/// logits: (n, vocab) of type t.
void argmax(const void* logits, int64_t n, int64_t vocab, int32_t* tokens, dtype t,
            cudaStream_t stream);

/// One token per row drawn from softmax(logits / temperature), restricted first to the top_k
/// most likely tokens (top_k <= 0 or >= vocab: all), then to the smallest set of most likely
/// of those whose probability mass reaches top_p of theirs (top_p >= 1: all). Tokens tied at
/// a threshold are all kept. uniforms(n) in [0, 1) are the draws: the token is the first, in
/// index order, at which the cumulative kept probability exceeds u times the kept mass, so
/// the result is a pure function of the inputs. A row with temperature <= 0 takes the argmax.
/// temperatures, top_k, top_p, uniforms: (n) on the device.
void sample_top_k_top_p(const void* logits, int64_t n, int64_t vocab, const float* temperatures,
                        const int32_t* top_k, const float* top_p, const float* uniforms,
                        int32_t* tokens, dtype t, cudaStream_t stream);

// row_sampling and logit_edit (kernels/row_sampling.hpp): one row's draw and its edits.

/// One token per row of float32 `logits` (n, vocab), each row processed in place first, in
/// the host sampler's order (actors/gpu_worker/sampler.cpp, vLLM's semantics):
///   1. mask: where mask_of_row[r] >= 0, every id whose bit is clear in
///      masks(mask_of_row[r]) (words_per_row words, bit id % 32 of word id / 32; ids past
///      them too) becomes -infinity (structured output);
///   2. each edit e of edits[edit_offsets[r], edit_offsets[r + 1]): l += e.bias; then where
///      e.seen and repetition_penalty != 1, a positive l is divided by it and a negative one
///      multiplied; then where e.output_count > 0 and a presence or frequency penalty is set,
///      l -= frequency_penalty * output_count + presence_penalty (each op rounded once);
/// then the token is drawn from the processed row as sample_top_k_top_p does (temperature,
/// top_k, top_p, the inverse CDF in index order with params[r].uniform), with min_p
/// removing, after top_p, every token whose probability is below min_p times the largest.
/// On return each row holds its processed logits (before temperature). Deterministic: tokens
/// and rows are a pure function of the inputs.
/// The caller checks the bounds: every edit token in [0, vocab), ascending within a row,
/// edit_offsets non-decreasing from 0, every mask_of_row below the masks' count.
/// params (n), edit_offsets (n + 1), edits (edit_offsets[n]), mask_of_row (n) or null for
/// none, masks (num_masks, words_per_row) or null, tokens (n): all on the device.
void sample_rows(float* logits, int64_t n, int64_t vocab, const row_sampling* params,
                 const int32_t* edit_offsets, const logit_edit* edits, const int32_t* mask_of_row,
                 const uint32_t* masks, int64_t words_per_row, int32_t* tokens,
                 cudaStream_t stream);

}  // namespace actorllm::cuda

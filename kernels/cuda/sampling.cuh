#pragma once
/// Token selection on the device: greedy (argmax) and top-k / top-p sampling.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

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

}  // namespace actorllm::cuda

#pragma once
/// Device side of structured output, shared by the kernels that mask logits where they are
/// (token_bitmask.cu, sampling.cu). Include only from .cu files.
#include <cmath>
#include <cstdint>

namespace actorllm::cuda {

/// Sets to -infinity every logit of `row` (vocab) whose bit in `mask` (words_per_row words;
/// bit id % 32 of word id / 32) is clear; ids past the mask's words are cleared too, as
/// grammar::apply_token_mask does on the host. The calling threads split the mask's words:
/// this one takes first_word, first_word + word_stride, ...; a word of all ones costs one read.
__device__ __forceinline__ void mask_logits_row(float* row, int64_t vocab, const uint32_t* mask,
                                                int64_t words_per_row, int64_t first_word,
                                                int64_t word_stride) {
  const int64_t num_words = (vocab + 31) / 32;
  for (int64_t w = first_word; w < num_words; w += word_stride) {
    const uint32_t bits = w < words_per_row ? mask[w] : 0u;
    if (bits == 0xffffffffu) continue;
    const int64_t end = min(vocab, (w + 1) * 32);
    for (int64_t id = w * 32; id < end; ++id)
      if (!((bits >> (id & 31)) & 1u)) row[id] = -INFINITY;
  }
}

}  // namespace actorllm::cuda

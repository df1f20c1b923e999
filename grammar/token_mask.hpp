#pragma once
/// Applying a matcher's mask (matcher::fill_mask) to a row of logits on the CPU.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>

namespace actorllm::grammar {

/// Sets to -infinity every logit whose id's bit in `mask` is clear (bit id % 32 of word
/// id / 32); ids past the mask's words are cleared too. `logits` may be longer or shorter
/// than the mask covers.
inline void apply_token_mask(std::span<float> logits, std::span<const uint32_t> mask) {
  constexpr float blocked = -std::numeric_limits<float>::infinity();
  for (size_t w = 0; w * 32 < logits.size(); ++w) {
    const uint32_t bits = w < mask.size() ? mask[w] : 0;
    if (bits == ~uint32_t{0}) continue;
    const size_t end = std::min(logits.size(), (w + 1) * 32);
    for (size_t id = w * 32; id < end; ++id)
      if (!((bits >> (id & 31)) & 1)) logits[id] = blocked;
  }
}

}  // namespace actorllm::grammar

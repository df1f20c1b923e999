#pragma once
/// M-RoPE's positions (Qwen2-VL, Qwen2.5-VL; transformers' get_rope_index for images): each
/// token has a temporal, a height and a width position. Text counts on by one on all three
/// axes; an image's tokens sit at (base, base + row, base + column) over its grid of merged
/// patches, base being where the text before it reached; the text after an image goes on from
/// the largest position so far plus one. Generated tokens continue the same way, which is
/// transformers' cached decoding (position + rope_deltas). Pure.
#include <cstdint>
#include <span>
#include <vector>

namespace actorllm {

/// One image of a prompt: the positions its tokens fill, and its grid (rows x columns of
/// tokens, rows * columns == num_tokens).
struct mrope_image {
  int32_t offset = 0, num_tokens = 0;
  int32_t rows = 0, columns = 0;
};

/// Appends (t, h, w) of positions first .. first + count - 1 of a sequence whose prompt holds
/// `images` (by ascending offset, not overlapping) to `out`.
void append_mrope_positions(std::span<const mrope_image> images, int32_t first, int32_t count,
                            std::vector<int32_t>& out);

}  // namespace actorllm

#include "model/mrope_positions.hpp"

#include <algorithm>

namespace actorllm {

void append_mrope_positions(std::span<const mrope_image> images, int32_t first, int32_t count,
                            std::vector<int32_t>& out) {
  // `shift`: how far positions after the images passed so far lag their index (an image of n
  // tokens advances the positions by its longer side only).
  int32_t shift = 0;
  size_t next = 0;
  for (int32_t p = first; p < first + count; ++p) {
    while (next < images.size() && images[next].offset + images[next].num_tokens <= p) {
      shift += images[next].num_tokens - std::max(images[next].rows, images[next].columns);
      ++next;
    }
    if (next < images.size() && images[next].offset <= p) {
      const mrope_image& image = images[next];
      const int32_t base = image.offset - shift, k = p - image.offset;
      out.insert(out.end(), {base, base + k / image.columns, base + k % image.columns});
    } else {
      out.insert(out.end(), {p - shift, p - shift, p - shift});
    }
  }
}

}  // namespace actorllm

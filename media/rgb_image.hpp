#pragma once
/// A decoded picture as every later stage sees it: 8-bit RGB, rows top to bottom, no padding.
#include <cstdint>
#include <vector>

namespace actorllm::media {

struct rgb_image {
  int32_t width = 0;
  int32_t height = 0;
  std::vector<uint8_t> pixels;  // (height, width, 3)
};

}  // namespace actorllm::media

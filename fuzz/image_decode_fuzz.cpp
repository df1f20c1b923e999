// The image decoder (media/image_decode.hpp) and the CLIP processor's resize on arbitrary
// bytes: a PNG, JPEG, WebP or GIF, or anything else, gives an image within the limits or an
// error as a value; never a crash, a leak or an allocation past the limits (ASan, UBSan).
#include <cstddef>
#include <cstdint>
#include <span>

#include "fuzz/fuzz_support.hpp"
#include "media/image_decode.hpp"
#include "media/image_processor.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace actorllm::media;
  // Small limits keep each input fast; the checks are the same at any size.
  image_limits limits;
  limits.max_side = 1024;
  limits.max_pixels = 1 << 18;
  const decoded_image decoded = decode_image(std::span<const uint8_t>(data, size), limits);
  if (!decoded.ok()) return 0;
  const rgb_image& image = decoded.image;
  FUZZ_CHECK(image.width > 0 && image.height > 0);
  FUZZ_CHECK(image.width <= limits.max_side && image.height <= limits.max_side);
  FUZZ_CHECK(int64_t{image.width} * image.height <= limits.max_pixels);
  FUZZ_CHECK(image.pixels.size() == size_t{3} * image.width * image.height);
  image_processor_config clip = default_image_processor_config(image_processor_kind::clip);
  clip.shortest_edge = clip.crop_height = clip.crop_width = 32;
  const preprocessed_image pre = preprocess(image, clip);
  FUZZ_CHECK(!pre.ok() || pre.tensor.values.size() == size_t{3} * 32 * 32);
  return 0;
}

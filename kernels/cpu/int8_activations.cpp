// x quantized to int8 for the packed GEMM's integer path (packed_dot_vnni.cpp and
// packed_dot_avx2.cpp): per block of 32 input features, scale = max |x| / 127 and codes
// round(x / scale), as llama.cpp's Q8_0 quantizes activations.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/packed_tiles.hpp"

namespace actorllm::cpu::panels {

namespace {
constexpr int64_t block = int8_activations::block;
}  // namespace

bool integer_dot_applies(const packed_matrix& w, int64_t n) {
  return (w.format == weight_format::q8 || w.format == weight_format::q4) && n >= 1 &&
         w.in_features % block == 0 && w.group_length() % block == 0;
}

int8_activations activation_rows(const int8_activations& x, int64_t in, int64_t first,
                                 int64_t count) {
  const int64_t blocks = in / block;
  int8_activations view;
  view.rows = count;
  view.codes = x.codes + first * in;
  view.scales = x.scales + first * blocks;
  view.sums = x.sums + first * blocks;
  return view;
}

void quantize_activations(const float* x, int64_t n, int64_t in, int8_activations& out) {
  const int64_t blocks = in / block;
  out.rows = n;
  out.storage_codes.resize(static_cast<size_t>(n * in));
  out.storage_scales.resize(static_cast<size_t>(n * blocks));
  out.storage_sums.resize(static_cast<size_t>(n * blocks));
  for (int64_t r = 0; r < n; ++r)
    for (int64_t b = 0; b < blocks; ++b) {
      const float* src = x + r * in + b * block;
      float amax = 0.0f;
      for (int64_t k = 0; k < block; ++k) amax = std::max(amax, std::fabs(src[k]));
      const float scale = amax / 127.0f;
      const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
      int32_t sum = 0;
      for (int64_t k = 0; k < block; ++k) {
        const auto code =
            static_cast<int8_t>(std::clamp(std::nearbyint(src[k] * inverse), -127.0f, 127.0f));
        out.storage_codes[r * in + b * block + k] = code;
        sum += code;
      }
      out.storage_scales[r * blocks + b] = scale;
      out.storage_sums[r * blocks + b] = sum;
    }
  out.codes = out.storage_codes.data();
  out.scales = out.storage_scales.data();
  out.sums = out.storage_sums.data();
}

}  // namespace actorllm::cpu::panels

#include "media/image_resize.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/check.hpp"

namespace actorllm::media {

namespace {

// 32 bits hold 8 of pixel, 2 of headroom for the filters' negative lobes and overshoot, and
// this many of fraction.
constexpr int precision_bits = 32 - 8 - 2;
constexpr int32_t half = 1 << (precision_bits - 1);

// PIL's filters. The arithmetic keeps PIL's order of operations (and the build keeps it free
// of fused multiply-adds): a weight one ulp off can move a pixel by one.
double bilinear_weight(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

double bicubic_weight(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// One axis of the resampling: for output index i, source indices first[i] .. first[i] +
// count[i] - 1 weighted by weights[i * ksize ..] (22-bit fixed point).
struct axis_weights {
  int ksize = 0;
  std::vector<int32_t> first, count;
  std::vector<int32_t> weights;  // (out_size, ksize)
};

axis_weights precompute_weights(int32_t in_size, int32_t out_size, resample_filter filter) {
  const bool cubic = filter == resample_filter::bicubic;
  // PIL passes the box as floats: in1 - in0 is a float difference, widened to double.
  const float in0 = 0.0f, in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = (cubic ? 2.0 : 1.0) * filterscale;
  axis_weights axis;
  axis.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  axis.first.resize(out_size);
  axis.count.resize(out_size);
  axis.weights.assign(static_cast<std::size_t>(out_size) * axis.ksize, 0);
  std::vector<double> k(axis.ksize);
  for (int32_t xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      const double arg = (x + xmin - center + 0.5) * ss;
      k[x] = cubic ? bicubic_weight(arg) : bilinear_weight(arg);
      ww += k[x];
    }
    int32_t* fixed = axis.weights.data() + static_cast<std::size_t>(xx) * axis.ksize;
    for (int x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[x] / ww : k[x];
      const double scaled = w * (1 << precision_bits);
      fixed[x] = static_cast<int32_t>(w < 0 ? -0.5 + scaled : 0.5 + scaled);
    }
    axis.first[xx] = xmin;
    axis.count[xx] = std::max(xmax, 0);
  }
  return axis;
}

uint8_t clip8(int32_t sum) {
  return static_cast<uint8_t>(std::clamp(sum >> precision_bits, 0, 255));
}

// Rows [row0, row0 + out.height) of `in`, resampled along x into `out`.
void resample_horizontal(const rgb_image& in, int32_t row0, const axis_weights& axis,
                         rgb_image& out) {
  const std::size_t in_stride = static_cast<std::size_t>(in.width) * 3;
  const std::size_t out_stride = static_cast<std::size_t>(out.width) * 3;
  for (int32_t y = 0; y < out.height; ++y) {
    const uint8_t* src = in.pixels.data() + (row0 + y) * in_stride;
    uint8_t* dst = out.pixels.data() + y * out_stride;
    for (int32_t xx = 0; xx < out.width; ++xx) {
      const int32_t* k = axis.weights.data() + static_cast<std::size_t>(xx) * axis.ksize;
      const uint8_t* p = src + static_cast<std::size_t>(axis.first[xx]) * 3;
      int32_t r = half, g = half, b = half;
      for (int32_t x = 0; x < axis.count[xx]; ++x, p += 3) {
        r += p[0] * k[x];
        g += p[1] * k[x];
        b += p[2] * k[x];
      }
      dst[3 * xx] = clip8(r);
      dst[3 * xx + 1] = clip8(g);
      dst[3 * xx + 2] = clip8(b);
    }
  }
}

// `in` resampled along y into `out` (same width); axis.first counts rows of `in` from row0.
void resample_vertical(const rgb_image& in, int32_t row0, const axis_weights& axis,
                       rgb_image& out) {
  const std::size_t stride = static_cast<std::size_t>(in.width) * 3;
  // A row of sums at a time: the same integer sums as PIL's pixel-at-a-time loop (integer
  // addition is exact), in an order the compiler vectorises.
  std::vector<int32_t> sums(stride);
  for (int32_t yy = 0; yy < out.height; ++yy) {
    const int32_t* k = axis.weights.data() + static_cast<std::size_t>(yy) * axis.ksize;
    std::fill(sums.begin(), sums.end(), half);
    for (int32_t y = 0; y < axis.count[yy]; ++y) {
      const uint8_t* src = in.pixels.data() + (axis.first[yy] - row0 + y) * stride;
      const int32_t w = k[y];
      for (std::size_t i = 0; i < stride; ++i) sums[i] += src[i] * w;
    }
    uint8_t* dst = out.pixels.data() + yy * stride;
    for (std::size_t i = 0; i < stride; ++i) dst[i] = clip8(sums[i]);
  }
}

rgb_image blank(int32_t width, int32_t height) {
  rgb_image image;
  image.width = width;
  image.height = height;
  image.pixels.assign(static_cast<std::size_t>(width) * height * 3, 0);
  return image;
}

// ImagingScaleAffine: positions advance by repeated addition in double, as PIL's loop does;
// a position outside the source leaves the pixel 0.
rgb_image resize_nearest(const rgb_image& in, int32_t width, int32_t height) {
  auto source_indices = [](int32_t in_size, int32_t out_size) {
    const double step = static_cast<double>(static_cast<float>(in_size)) / out_size;
    std::vector<int32_t> index(out_size);
    double position = 0.0 + step * 0.5;
    for (int32_t i = 0; i < out_size; ++i, position += step) {
      const int32_t at = position < 0.0 ? -1 : static_cast<int32_t>(position);
      index[i] = at < in_size ? at : -1;
    }
    return index;
  };
  const std::vector<int32_t> xs = source_indices(in.width, width);
  const std::vector<int32_t> ys = source_indices(in.height, height);
  rgb_image out = blank(width, height);
  for (int32_t y = 0; y < height; ++y) {
    if (ys[y] < 0) continue;
    const uint8_t* src = in.pixels.data() + static_cast<std::size_t>(ys[y]) * in.width * 3;
    uint8_t* dst = out.pixels.data() + static_cast<std::size_t>(y) * width * 3;
    for (int32_t x = 0; x < width; ++x) {
      if (xs[x] >= 0) std::copy_n(src + 3 * xs[x], 3, dst + 3 * x);
    }
  }
  return out;
}

}  // namespace

rgb_image resize_image(const rgb_image& image, int32_t width, int32_t height,
                       resample_filter filter) {
  ACTORLLM_CHECK(width >= 1 && height >= 1 && image.width >= 1 && image.height >= 1);
  if (width == image.width && height == image.height) return image;
  if (filter == resample_filter::nearest) return resize_nearest(image, width, height);
  const axis_weights horizontal = precompute_weights(image.width, width, filter);
  const axis_weights vertical = precompute_weights(image.height, height, filter);
  if (width == image.width) {
    rgb_image out = blank(width, height);
    resample_vertical(image, 0, vertical, out);
    return out;
  }
  // Only the source rows the vertical pass will read are resampled horizontally.
  const int32_t row0 = vertical.first.front();
  const int32_t row_end = vertical.first.back() + vertical.count.back();
  rgb_image wide = blank(width, row_end - row0);
  resample_horizontal(image, row0, horizontal, wide);
  if (height == image.height) return wide;
  rgb_image out = blank(width, height);
  resample_vertical(wide, row0, vertical, out);
  return out;
}

}  // namespace actorllm::media

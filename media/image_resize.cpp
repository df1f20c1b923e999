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

// One axis of the resampling, for the output indices out0 .. out0 + out_count - 1: output
// out0 + i reads source indices first[i] .. first[i] + count[i] - 1, weighted by
// weights[i * ksize ..] (22-bit fixed point).
struct axis_weights {
  int ksize = 0;
  std::vector<int32_t> first, count;
  std::vector<int32_t> weights;  // (out_count, ksize)
};

axis_weights precompute_weights(int32_t in_size, int32_t out_size, int32_t out0, int32_t out_count,
                                resample_filter filter) {
  const bool cubic = filter == resample_filter::bicubic;
  // PIL passes the box as floats: in1 - in0 is a float difference, widened to double.
  const float in0 = 0.0f, in1 = static_cast<float>(in_size);
  const double scale = static_cast<double>(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = (cubic ? 2.0 : 1.0) * filterscale;
  axis_weights axis;
  axis.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  axis.first.resize(out_count);
  axis.count.resize(out_count);
  axis.weights.assign(static_cast<std::size_t>(out_count) * axis.ksize, 0);
  std::vector<double> k(axis.ksize);
  for (int32_t i = 0; i < out_count; ++i) {
    const int32_t xx = out0 + i;
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
    int32_t* fixed = axis.weights.data() + static_cast<std::size_t>(i) * axis.ksize;
    for (int x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[x] / ww : k[x];
      const double scaled = w * (1 << precision_bits);
      fixed[x] = static_cast<int32_t>(w < 0 ? -0.5 + scaled : 0.5 + scaled);
    }
    axis.first[i] = xmin;
    axis.count[i] = std::max(xmax, 0);
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

// Columns [col0, col0 + out.width) of `in` resampled along y into `out`; axis.first counts
// rows of `in` from row0.
void resample_vertical(const rgb_image& in, int32_t row0, int32_t col0, const axis_weights& axis,
                       rgb_image& out) {
  const std::size_t in_stride = static_cast<std::size_t>(in.width) * 3;
  const std::size_t span = static_cast<std::size_t>(out.width) * 3;
  // A row of sums at a time: the same integer sums as PIL's pixel-at-a-time loop (integer
  // addition is exact), in an order the compiler vectorises.
  std::vector<int32_t> sums(span);
  for (int32_t yy = 0; yy < out.height; ++yy) {
    const int32_t* k = axis.weights.data() + static_cast<std::size_t>(yy) * axis.ksize;
    std::fill(sums.begin(), sums.end(), half);
    for (int32_t y = 0; y < axis.count[yy]; ++y) {
      const uint8_t* src = in.pixels.data() + (axis.first[yy] - row0 + y) * in_stride + col0 * 3;
      const int32_t w = k[y];
      for (std::size_t i = 0; i < span; ++i) sums[i] += src[i] * w;
    }
    uint8_t* dst = out.pixels.data() + yy * span;
    for (std::size_t i = 0; i < span; ++i) dst[i] = clip8(sums[i]);
  }
}

rgb_image blank(int32_t width, int32_t height) {
  rgb_image image;
  image.width = width;
  image.height = height;
  image.pixels.assign(static_cast<std::size_t>(width) * height * 3, 0);
  return image;
}

rgb_image crop(const rgb_image& in, pixel_window w) {
  rgb_image out = blank(w.width, w.height);
  for (int32_t y = 0; y < w.height; ++y) {
    const uint8_t* src =
        in.pixels.data() + (static_cast<std::size_t>(w.top + y) * in.width + w.left) * 3;
    std::copy_n(src, std::size_t(w.width) * 3, out.pixels.data() + std::size_t(y) * w.width * 3);
  }
  return out;
}

// ImagingScaleAffine's source index of outputs out0 .. out0 + count - 1: positions advance by
// repeated addition in double from the first output, as PIL's loop does; -1 outside the source.
std::vector<int32_t> nearest_indices(int32_t in_size, int32_t out_size, int32_t out0,
                                     int32_t count) {
  const double step = static_cast<double>(static_cast<float>(in_size)) / out_size;
  std::vector<int32_t> index(count);
  double position = 0.0 + step * 0.5;
  for (int32_t i = 0; i < out0 + count; ++i, position += step) {
    if (i < out0) continue;
    const int32_t at = position < 0.0 ? -1 : static_cast<int32_t>(position);
    index[i - out0] = at < in_size ? at : -1;
  }
  return index;
}

// A position outside the source leaves the pixel 0, as PIL's fill does.
rgb_image resize_nearest(const rgb_image& in, int32_t width, int32_t height, pixel_window w) {
  const std::vector<int32_t> xs = nearest_indices(in.width, width, w.left, w.width);
  const std::vector<int32_t> ys = nearest_indices(in.height, height, w.top, w.height);
  rgb_image out = blank(w.width, w.height);
  for (int32_t y = 0; y < w.height; ++y) {
    if (ys[y] < 0) continue;
    const uint8_t* src = in.pixels.data() + static_cast<std::size_t>(ys[y]) * in.width * 3;
    uint8_t* dst = out.pixels.data() + static_cast<std::size_t>(y) * w.width * 3;
    for (int32_t x = 0; x < w.width; ++x) {
      if (xs[x] >= 0) std::copy_n(src + 3 * xs[x], 3, dst + 3 * x);
    }
  }
  return out;
}

}  // namespace

rgb_image resize_image(const rgb_image& image, int32_t width, int32_t height,
                       resample_filter filter) {
  return resize_image_window(image, width, height, filter, {0, 0, height, width});
}

rgb_image resize_image_window(const rgb_image& image, int32_t width, int32_t height,
                              resample_filter filter, pixel_window window) {
  ACTORLLM_CHECK(width >= 1 && height >= 1 && image.width >= 1 && image.height >= 1);
  ACTORLLM_CHECK(window.top >= 0 && window.left >= 0 && window.height >= 1 && window.width >= 1 &&
                 window.top + window.height <= height && window.left + window.width <= width);
  if (width == image.width && height == image.height) return crop(image, window);
  if (filter == resample_filter::nearest) return resize_nearest(image, width, height, window);
  // PIL resamples along x, then along y, each pass only when that side changes.
  const axis_weights vertical =
      precompute_weights(image.height, height, window.top, window.height, filter);
  rgb_image out = blank(window.width, window.height);
  if (width == image.width) {
    resample_vertical(image, 0, window.left, vertical, out);
    return out;
  }
  const axis_weights horizontal =
      precompute_weights(image.width, width, window.left, window.width, filter);
  if (height == image.height) {
    resample_horizontal(image, window.top, horizontal, out);
    return out;
  }
  // Only the source rows the vertical pass will read are resampled horizontally.
  const int32_t row0 = vertical.first.front();
  const int32_t row_end = vertical.first.back() + vertical.count.back();
  rgb_image wide = blank(window.width, row_end - row0);
  resample_horizontal(image, row0, horizontal, wide);
  resample_vertical(wide, row0, 0, vertical, out);
  return out;
}

}  // namespace actorllm::media

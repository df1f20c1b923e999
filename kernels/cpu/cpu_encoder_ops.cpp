#include "kernels/cpu/cpu_encoder_ops.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <stdexcept>

#include "kernels/cpu/cpu_forward_ops.hpp"
#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu {

void cpu_encoder_ops::begin(const encoder_rows& rows) {
  rows_ = rows;
  s_.rows.fill(0);
  s_.widths.fill(0);
}

float* cpu_encoder_ops::shape(encoder_buffer b, int64_t rows, int64_t width) {
  const auto i = static_cast<size_t>(b);
  s_.rows[i] = rows;
  s_.widths[i] = width;
  s_.buffers[i].resize(static_cast<size_t>(rows * width));
  return s_.buffers[i].data();
}

int64_t cpu_encoder_ops::rows(encoder_buffer b) const {
  return s_.rows[static_cast<size_t>(b)];
}

int64_t cpu_encoder_ops::width(encoder_buffer b) const {
  return s_.widths[static_cast<size_t>(b)];
}

void cpu_encoder_ops::write(encoder_buffer b, const float* values, int64_t width) {
  std::copy(values, values + rows_.num_rows * width, shape(b, rows_.num_rows, width));
}

void cpu_encoder_ops::linear(encoder_buffer in, const op_linear& w, encoder_buffer out) {
  const auto* matrix = static_cast<const linear_weight*>(w.matrix);
  if (!matrix || !matrix->dense || matrix->in_features != width(in))
    throw std::logic_error("cpu_encoder_ops::linear: no float32 rows of the input's width");
  const int64_t n = rows(in);
  const float* x = data(in);
  float* y = shape(out, n, matrix->out_features);
  cpu::linear(x, matrix->dense, static_cast<const float*>(w.bias), n, matrix->in_features,
              matrix->out_features, y);
}

void cpu_encoder_ops::add_positions(encoder_buffer b, op_weight table) {
  const auto* positions = static_cast<const float*>(table);
  const int64_t w = width(b);
  float* rows = data(b);
  for (int64_t i = 0; i < rows_.num_images; ++i)
    for (int32_t r = rows_.image_starts[i]; r < rows_.image_starts[i + 1]; ++r) {
      const float* p = positions + static_cast<int64_t>(r - rows_.image_starts[i]) * w;
      float* row = rows + static_cast<int64_t>(r) * w;
      for (int64_t c = 0; c < w; ++c) row[c] += p[c];
    }
}

void cpu_encoder_ops::pool(encoder_buffer in, int64_t side, int64_t kernel, encoder_buffer out) {
  const int64_t w = width(in), pooled = side / kernel;
  const float* x = data(in);
  float* y = shape(out, rows_.num_images * pooled * pooled, w);
  const float scale = 1.0f / static_cast<float>(kernel * kernel);
  for (int64_t i = 0; i < rows_.num_images; ++i) {
    assert(rows_.image_starts[i + 1] - rows_.image_starts[i] == side * side);
    const float* image = x + static_cast<int64_t>(rows_.image_starts[i]) * w;
    for (int64_t py = 0; py < pooled; ++py)
      for (int64_t px = 0; px < pooled; ++px) {
        float* dst = y + ((i * pooled + py) * pooled + px) * w;
        std::fill(dst, dst + w, 0.0f);
        for (int64_t ky = 0; ky < kernel; ++ky)
          for (int64_t kx = 0; kx < kernel; ++kx) {
            const float* src = image + ((py * kernel + ky) * side + px * kernel + kx) * w;
            for (int64_t c = 0; c < w; ++c) dst[c] += src[c];
          }
        for (int64_t c = 0; c < w; ++c) dst[c] *= scale;
      }
  }
}

void cpu_encoder_ops::rms_norm(encoder_buffer in, op_weight weight, float eps, encoder_buffer out) {
  const int64_t n = rows(in), w = width(in);
  const auto* gamma = static_cast<const float*>(weight);
  if (out != in) shape(out, n, w);
  const float* x = data(in);
  float* y = data(out);
  for (int64_t r = 0; r < n; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < w; ++c) sum += double{x[r * w + c]} * x[r * w + c];
    const auto inv = static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(w) + eps));
    for (int64_t c = 0; c < w; ++c) y[r * w + c] = x[r * w + c] * inv * gamma[c];
  }
}

void cpu_encoder_ops::add(encoder_buffer into, encoder_buffer from) {
  assert(width(into) == width(from) && rows(into) == rows(from));
  float* a = data(into);
  const float* b = data(from);
  const int64_t n = rows(into) * width(into);
  for (int64_t i = 0; i < n; ++i) a[i] += b[i];
}

void cpu_encoder_ops::layer_norm(encoder_buffer in, op_weight weight, op_weight bias, float eps,
                                 encoder_buffer out) {
  const int64_t w = width(in);
  const auto* gamma = static_cast<const float*>(weight);
  const auto* beta = static_cast<const float*>(bias);
  // in and out may be the same buffer: each row is read whole before it is written.
  const int64_t n = rows(in);
  if (out != in) shape(out, n, w);
  const float* x = data(in);
  float* y = data(out);
  for (int64_t r = 0; r < n; ++r) {
    const float* row = x + r * w;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < w; ++c) mean += row[c];
    mean /= static_cast<double>(w);
    for (int64_t c = 0; c < w; ++c) var += (row[c] - mean) * (row[c] - mean);
    const auto inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(w) + eps));
    const auto m = static_cast<float>(mean);
    float* dst = y + r * w;
    for (int64_t c = 0; c < w; ++c) dst[c] = (row[c] - m) * inv * gamma[c] + (beta ? beta[c] : 0);
  }
}

namespace {

/// v[i] = act(v[i]) for i < n.
void apply(encoder_activation act, float* v, int64_t n) {
  switch (act) {
    case encoder_activation::quick_gelu:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] / (1.0f + std::exp(-1.702f * v[i]));
      break;
    case encoder_activation::gelu:
      for (int64_t i = 0; i < n; ++i) v[i] = 0.5f * v[i] * (1.0f + std::erf(v[i] * 0.70710678f));
      break;
    case encoder_activation::gelu_tanh:
      for (int64_t i = 0; i < n; ++i) {
        const float x = v[i];
        v[i] = 0.5f * x * (1.0f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
      }
      break;
    case encoder_activation::silu:
      for (int64_t i = 0; i < n; ++i) v[i] = v[i] / (1.0f + std::exp(-v[i]));
      break;
  }
}

}  // namespace

void cpu_encoder_ops::activate(encoder_buffer b, encoder_activation act) {
  apply(act, data(b), rows(b) * width(b));
}

void cpu_encoder_ops::glu(encoder_buffer in, encoder_activation act, encoder_buffer out) {
  const int64_t n = rows(in), half = width(in) / 2;
  assert(in != out && width(in) == 2 * half);
  const float* x = data(in);
  float* y = shape(out, n, half);
  for (int64_t r = 0; r < n; ++r) {
    float* dst = y + r * half;
    std::copy_n(x + r * 2 * half, half, dst);
    apply(act, dst, half);
    const float* up = x + r * 2 * half + half;
    for (int64_t c = 0; c < half; ++c) dst[c] *= up[c];
  }
}

void cpu_encoder_ops::group_rows(encoder_buffer in, int64_t group, encoder_buffer out) {
  const int64_t n = rows(in), w = width(in);
  assert(in != out && n % group == 0);
  // Rows are stored back to back, so a group of rows is already one wider row.
  const float* x = data(in);
  std::copy(x, x + n * w, shape(out, n / group, w * group));
}

void cpu_encoder_ops::rotate(int64_t num_heads, int64_t head_dim) {
  const int64_t hidden = num_heads * head_dim, half = head_dim / 2;
  assert(width(encoder_buffer::qkv) == 3 * hidden && width(encoder_buffer::rotary) == head_dim);
  float* qkv = data(encoder_buffer::qkv);
  const float* table = data(encoder_buffer::rotary);
  for (int64_t r = 0; r < rows_.num_rows; ++r) {
    // q's heads, then k's: 2 * num_heads vectors side by side.
    const float* cos = table + r * head_dim;
    cpu::rotate_halves(qkv + r * 3 * hidden, 2 * num_heads, head_dim, cos, cos + half);
  }
}

void cpu_encoder_ops::attention(int64_t num_heads, int64_t head_dim, float scale) {
  segment_attention(num_heads, head_dim, scale, rows_.image_starts, rows_.num_images);
}

void cpu_encoder_ops::segment_attention(int64_t num_heads, int64_t head_dim, float scale,
                                        const int32_t* segment_starts, int64_t num_segments) {
  const int64_t hidden = num_heads * head_dim;
  assert(width(encoder_buffer::qkv) == 3 * hidden);
  if (num_segments < 1 || segment_starts[0] != 0 || segment_starts[num_segments] != rows_.num_rows)
    throw std::logic_error("cpu_encoder_ops::segment_attention: segments do not cover the rows");
  const float* qkv = data(encoder_buffer::qkv);
  float* out = shape(encoder_buffer::attention, rows_.num_rows, hidden);
  for (int64_t i = 0; i < num_segments; ++i) {
    const int64_t first = segment_starts[i];
    const int64_t n = segment_starts[i + 1] - first;
    if (n <= 0) continue;
    s_.q.resize(static_cast<size_t>(n * head_dim));
    s_.k.resize(s_.q.size());
    s_.v_t.resize(s_.q.size());
    s_.scores.resize(static_cast<size_t>(n * n));
    s_.head_out.resize(s_.q.size());
    for (int64_t h = 0; h < num_heads; ++h) {
      // One head's q and k as rows, v transposed, so that both products are GEMMs.
      for (int64_t t = 0; t < n; ++t) {
        const float* row = qkv + (first + t) * 3 * hidden + h * head_dim;
        for (int64_t d = 0; d < head_dim; ++d) {
          s_.q[t * head_dim + d] = row[d] * scale;
          s_.k[t * head_dim + d] = row[hidden + d];
          s_.v_t[d * n + t] = row[2 * hidden + d];
        }
      }
      cpu::linear(s_.q.data(), s_.k.data(), nullptr, n, head_dim, n, s_.scores.data());
      for (int64_t t = 0; t < n; ++t) {
        float* row = s_.scores.data() + t * n;
        const float top = *std::max_element(row, row + n);
        float sum = 0;
        for (int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - top);
        const float inv = 1.0f / sum;
        for (int64_t j = 0; j < n; ++j) row[j] *= inv;
      }
      cpu::linear(s_.scores.data(), s_.v_t.data(), nullptr, n, n, head_dim, s_.head_out.data());
      for (int64_t t = 0; t < n; ++t)
        std::copy_n(s_.head_out.data() + t * head_dim, head_dim,
                    out + (first + t) * hidden + h * head_dim);
    }
  }
}

void cpu_encoder_ops::read(encoder_buffer b, float* out) {
  const float* v = data(b);
  std::copy(v, v + rows(b) * width(b), out);
}

}  // namespace actorllm::cpu

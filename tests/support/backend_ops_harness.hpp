#pragma once
/// The backend-ops table's harness (tests/kernels/backend_ops_test.cpp): a backend under test
/// makes weights in its own form and ops over a cache of its own; the table runs every forward
/// op on it against a float64 reference written here, plainly, from the op's contract
/// (kernels/forward_ops.hpp). Errors are measured relative to the reference output's RMS, so
/// zeros where values belong fail.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/forward_ops.hpp"

namespace actorllm::testing {

/// What a backend case holds its weights and cache as, and how close it must come.
class backend_under_test {
 public:
  virtual ~backend_under_test() = default;
  virtual std::string name() const = 0;
  /// A vector (norm, bias, gate) in the backend's table.
  virtual op_weight vector(const std::vector<float>& values) = 0;
  /// A rotary table (rows, head_dim), which some backends keep in float32 whatever their type.
  virtual op_weight rotary(const std::vector<float>& table) { return vector(table); }
  /// A projection w (out, in) in the case's weight format; `effective` gets the weights the
  /// backend multiplies by (rounded or quantized as stored).
  virtual op_linear linear(const std::vector<float>& w, int64_t out, int64_t in,
                           const std::vector<float>* bias, std::vector<float>& effective) = 0;
  /// An expert's projection, as the backend keeps experts (the CPU: float32 rows).
  virtual op_linear expert_linear(const std::vector<float>& w, int64_t out, int64_t in,
                                  std::vector<float>& effective) {
    return linear(w, out, in, nullptr, effective);
  }
  /// The embedding table (vocab, dim) as the backend stores it; `effective` as for linear.
  virtual op_weight embedding(const std::vector<float>& table, int64_t vocab, int64_t dim,
                              std::vector<float>& effective) = 0;
  /// Fresh ops over a zeroed cache of `num_layers` layers of (num_blocks, kv_heads,
  /// block_size, head_dim).
  virtual forward_ops& ops(const forward_dims& dims, int64_t num_layers, int64_t num_blocks,
                           int64_t block_size) = 0;
  /// One layer's K (value false) or V cache as float32, or written from float32 (rounded to
  /// the cache's element).
  virtual std::vector<float> read_cache(int64_t layer, bool value) = 0;
  virtual void write_cache(int64_t layer, bool value, const std::vector<float>& values) = 0;
  /// Whether its ops add LoRA adapters' updates (a step without adapters is run otherwise).
  virtual bool serves_lora() const { return true; }
  /// The bound on |out - reference| / RMS(reference) for an op whose output rests on the
  /// cache (attention) or on projections (linear, mlp, experts, logits), or neither.
  virtual double tolerance(bool through_cache, bool through_projection) const = 0;
};

/// Deterministic values in [-scale, scale).
inline std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

/// max |got - want| / RMS(want); infinite when want is all zeros or sizes differ.
inline double error_over_rms(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size() || want.empty()) return INFINITY;
  double sum = 0, worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    sum += want[i] * want[i];
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::fabs(got[i] - want[i]));
  }
  const double rms = std::sqrt(sum / static_cast<double>(want.size()));
  return rms > 0 ? worst / rms : INFINITY;
}

/// The float64 reference ops.
namespace reference {

inline std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<float>& w,
                                    int64_t rows, int64_t dim, double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t d = 0; d < dim; ++d) sum += x[r * dim + d] * x[r * dim + d];
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(dim) + eps);
    for (int64_t d = 0; d < dim; ++d) y[r * dim + d] = x[r * dim + d] * inv * w[d];
  }
  return y;
}

/// y (n, out) = x (n, in) wᵀ + bias.
inline std::vector<double> linear(const std::vector<double>& x, const std::vector<float>& w,
                                  const std::vector<float>* bias, int64_t n, int64_t in,
                                  int64_t out) {
  std::vector<double> y(n * out);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias ? (*bias)[o] : 0.0;
      for (int64_t k = 0; k < in; ++k) sum += x[r * in + k] * w[o * in + k];
      y[r * out + o] = sum;
    }
  return y;
}

/// Neox rotation of (rows, heads, head_dim) at each row's position; the table holds head_dim
/// / 2 cosines then as many sines per position.
inline void rotate(std::vector<double>& x, int64_t rows, int64_t heads, int64_t head_dim,
                   const std::vector<int32_t>& positions, const std::vector<float>& table) {
  const int64_t half = head_dim / 2;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      double* v = x.data() + (r * heads + h) * head_dim;
      const float* row = table.data() + positions[r] * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double c = row[i], s = row[half + i], a = v[i], b = v[half + i];
        v[i] = a * c - b * s;
        v[half + i] = b * c + a * s;
      }
    }
}

inline double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
inline double silu(double x) {
  return x / (1.0 + std::exp(-x));
}

/// down(act(gate) * up) of x (n, dim), gate_up (2 width, dim), down (dim, width).
inline std::vector<double> mlp(const std::vector<double>& x, const std::vector<float>& gate_up,
                               const std::vector<float>& down, int64_t n, int64_t dim,
                               int64_t width, gate_activation activation) {
  const auto gu = linear(x, gate_up, nullptr, n, dim, 2 * width);
  std::vector<double> act(n * width);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t i = 0; i < width; ++i) {
      const double g = gu[r * 2 * width + i], u = gu[r * 2 * width + width + i];
      act[r * width + i] = (activation == gate_activation::gelu_tanh ? gelu_tanh(g) : silu(g)) * u;
    }
  return linear(act, down, nullptr, n, width, dim);
}

inline std::vector<double> widen(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}

}  // namespace reference

}  // namespace actorllm::testing

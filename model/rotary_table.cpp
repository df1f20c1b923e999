#include "model/rotary_table.hpp"

#include <algorithm>
#include <cmath>

namespace actorllm {

namespace {

/// YaRN's dimension whose wavelength fits `rotations` times in the original context.
double yarn_correction_dim(double rotations, int64_t dim, double base, double context) {
  return (dim * std::log(context / (rotations * 2 * M_PI))) / (2 * std::log(base));
}

void scale_yarn(std::vector<double>& inv_freq, double theta, int64_t dim,
                const rope_scaling_config& rs) {
  const double context = static_cast<double>(rs.original_max_position_embeddings);
  const double low =
      std::max(0.0, std::floor(yarn_correction_dim(rs.beta_fast, dim, theta, context)));
  const double high = std::min(static_cast<double>(dim - 1),
                               std::ceil(yarn_correction_dim(rs.beta_slow, dim, theta, context)));
  const double span = high == low ? 0.001 : high - low;
  for (size_t i = 0; i < inv_freq.size(); ++i) {
    // 1 where the pair keeps its frequency (extrapolation), 0 where it is interpolated.
    const double ramp = std::clamp((static_cast<double>(i) - low) / span, 0.0, 1.0);
    const double keep = 1.0 - ramp;
    inv_freq[i] = inv_freq[i] / rs.factor * (1.0 - keep) + inv_freq[i] * keep;
  }
}

void scale_llama3(std::vector<double>& inv_freq, const rope_scaling_config& rs) {
  const double old_len = static_cast<double>(rs.original_max_position_embeddings);
  const double low_wavelen = old_len / rs.low_freq_factor;
  const double high_wavelen = old_len / rs.high_freq_factor;
  for (auto& f : inv_freq) {
    const double wavelen = 2 * M_PI / f;
    if (wavelen > low_wavelen) {
      f /= rs.factor;
    } else if (wavelen >= high_wavelen) {
      const double smooth =
          (old_len / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
      f = (1 - smooth) * f / rs.factor + smooth * f;
    }
  }
}

std::vector<double> plain_inverse_frequencies(double theta, int64_t head_dim) {
  std::vector<double> inv_freq(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i)
    inv_freq[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / head_dim);
  return inv_freq;
}

/// Appends `rows` positions of angles pos * inv_freq, times `magnitude`.
void append_rows(std::vector<float>& table, const std::vector<double>& inv_freq, int64_t rows,
                 double magnitude) {
  const auto half = static_cast<int64_t>(inv_freq.size());
  const size_t start = table.size();
  table.resize(start + rows * 2 * half);
  float* out = table.data() + start;
  for (int64_t pos = 0; pos < rows; ++pos, out += 2 * half) {
    for (int64_t i = 0; i < half; ++i) {
      // float32 angle, as the reference implementations compute it.
      const float angle = static_cast<float>(pos) * static_cast<float>(inv_freq[i]);
      out[i] = static_cast<float>(std::cos(angle) * magnitude);
      out[half + i] = static_cast<float>(std::sin(angle) * magnitude);
    }
  }
}

}  // namespace

std::vector<double> inverse_frequencies(double theta, int64_t head_dim,
                                        const rope_scaling_config& rs,
                                        int64_t max_position_embeddings) {
  if (rs.kind == "dynamic") {
    // NTK-aware scaling with the base fixed for the longest context the factor allows (as
    // vLLM does): a base that grew with each sequence's length, as Hugging Face's dynamic
    // variant recomputes it, would re-rotate every cached key at every step.
    const double original = static_cast<double>(max_position_embeddings);
    const double longest = original * rs.factor;
    theta *= std::pow(rs.factor * longest / original - (rs.factor - 1),
                      static_cast<double>(head_dim) / (head_dim - 2));
  }
  std::vector<double> inv_freq = plain_inverse_frequencies(theta, head_dim);
  if (rs.kind == "linear") {
    for (auto& f : inv_freq) f /= rs.factor;
  } else if (rs.kind == "llama3") {
    scale_llama3(inv_freq, rs);
  } else if (rs.kind == "yarn") {
    scale_yarn(inv_freq, theta, head_dim, rs);
  }
  return inv_freq;
}

double rotary_magnitude(const rope_scaling_config& rs) {
  if (rs.attention_factor > 0) return rs.attention_factor;
  if (rs.kind == "yarn") return rs.factor > 1 ? 0.1 * std::log(rs.factor) + 1.0 : 1.0;
  if (rs.kind == "longrope" && rs.factor > 1)
    return std::sqrt(1 + std::log(rs.factor) /
                             std::log(static_cast<double>(rs.original_max_position_embeddings)));
  return 1.0;
}

rotary_table build_rotary_table(const model_config_hf& c, int64_t max_position) {
  const auto& rs = c.rope_scaling;
  rotary_table table;
  const double magnitude = rotary_magnitude(rs);
  if (rs.kind != "longrope") {
    append_rows(table.cos_sin,
                inverse_frequencies(c.rope_theta, c.head_dim, rs, c.max_position_embeddings),
                max_position, magnitude);
    return table;
  }
  // LongRoPE: each pair's frequency divided by its short (or long) factor.
  auto with_factors = [&](const std::vector<double>& factors) {
    std::vector<double> inv_freq = plain_inverse_frequencies(c.rope_theta, c.head_dim);
    for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] /= factors[i];
    return inv_freq;
  };
  const int64_t original = std::min(rs.original_max_position_embeddings, max_position);
  append_rows(table.cos_sin, with_factors(rs.short_factor), original, magnitude);
  if (max_position > original) {
    table.long_offset = original;
    append_rows(table.cos_sin, with_factors(rs.long_factor), max_position, magnitude);
  }
  return table;
}

rotary_table build_local_rotary_table(const model_config_hf& c, int64_t max_position) {
  rotary_table table;
  if (c.local_rope_theta <= 0) return table;
  append_rows(table.cos_sin, plain_inverse_frequencies(c.local_rope_theta, c.head_dim),
              max_position, 1.0);
  return table;
}

}  // namespace actorllm

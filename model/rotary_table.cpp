#include "model/rotary_table.hpp"

#include <cmath>

namespace actorllm {

std::vector<float> build_rotary_table(const model_config_hf& c, int64_t max_position) {
  const int64_t half = c.head_dim / 2;
  std::vector<double> inv_freq(half);
  for (int64_t i = 0; i < half; ++i)
    inv_freq[i] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / c.head_dim);
  const auto& rs = c.rope_scaling;
  if (rs.kind == "linear") {
    for (auto& f : inv_freq) f /= rs.factor;
  } else if (rs.kind == "llama3") {
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
  std::vector<float> table(max_position * c.head_dim);
  for (int64_t pos = 0; pos < max_position; ++pos) {
    for (int64_t i = 0; i < half; ++i) {
      // float32 angle, as the reference implementations compute it.
      const float angle = static_cast<float>(pos) * static_cast<float>(inv_freq[i]);
      table[pos * c.head_dim + i] = std::cos(angle);
      table[pos * c.head_dim + half + i] = std::sin(angle);
    }
  }
  return table;
}

}  // namespace actorllm

// Packing grouped integer weights (GPTQ, AWQ and compressed-tensors checkpoints, decoded to
// one code per weight by the model's loader, or Q4_0 quantized here at load) into q4 or q8
// panels with their scales and zero points.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "kernels/cpu/thread_team.hpp"

namespace actorllm::cpu {

namespace {

constexpr int64_t width = packed_matrix::panel_width;

/// float16 bits of v, rounded to nearest even.
uint16_t to_half_bits(float v) {
  const half h = static_cast<half>(v);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

/// One output feature's source: its part and row there.
struct quantized_row {
  const quantized_rows* part;
  int64_t row;
};

void check_layout(int64_t in, const quantized_layout& layout) {
  if (layout.bits != 4 && layout.bits != 8)
    throw std::invalid_argument("grouped integer weights of " + std::to_string(layout.bits) +
                                " bits: only 4 and 8 are packed");
  if (layout.group_size <= 0 || in % layout.group_size != 0)
    throw std::invalid_argument("group size " + std::to_string(layout.group_size) +
                                " does not divide the " + std::to_string(in) + " input features");
  if (!layout.input_order.empty() && static_cast<int64_t>(layout.input_order.size()) != in)
    throw std::invalid_argument("an input order of " + std::to_string(layout.input_order.size()) +
                                " features for " + std::to_string(in));
}

/// Writes output feature `src` into lane `lane` of panel `panel`.
void pack_quantized_row(packed_matrix& w, int64_t panel, int64_t lane, quantized_row src,
                        const quantized_layout& layout) {
  const int64_t in = w.in_features, groups = w.num_groups();
  const uint8_t* codes = src.part->codes + src.row * in;
  const float* scales = src.part->scales + src.row * groups;
  const uint8_t* zeros = src.part->zeros + src.row * groups;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t at = (panel * groups + g) * width + lane;
    if (w.format == weight_format::q4) {
      w.half_scales[at] = to_half_bits(scales[g] / w.scale_unit);
      if (!w.zeros.empty()) w.zeros[at] = zeros[g];
    } else {
      w.scales[at] = scales[g];
    }
  }
  const auto& order = layout.input_order;
  for (int64_t j = 0; j < in; ++j) {
    const int64_t k = order.empty() ? j : order[j];
    const int64_t g = j / layout.group_size;
    if (w.format == weight_format::q4) {
      uint8_t& byte = w.panels4[(panel * in + j) * (width / 2) + lane % 8];
      byte |= static_cast<uint8_t>((codes[k] & 0xf) << (lane < 8 ? 0 : 4));
    } else {
      const int value = int(codes[k]) - int(zeros[g]);
      if (value < -128 || value > 127)
        throw std::invalid_argument("an 8-bit code " + std::to_string(codes[k]) +
                                    " with zero point " + std::to_string(zeros[g]) +
                                    " falls outside int8");
      w.panels8[(panel * in + j) * width + lane] = static_cast<int8_t>(value);
    }
  }
}

/// A power of two that puts the largest |scale| of the parts in [2^14, 2^15)
/// (packed_matrix::scale_unit); 1 where every scale is 0.
float scale_unit_of(std::span<const quantized_rows> parts, int64_t groups) {
  float largest = 0.0f;
  for (const auto& part : parts)
    for (int64_t i = 0; i < part.num_rows * groups; ++i)
      largest = std::max(largest, std::fabs(part.scales[i]));
  if (!(largest > 0.0f) || !std::isfinite(largest)) return 1.0f;
  int exponent = 0;
  std::frexp(largest, &exponent);  // largest = m * 2^exponent, m in [0.5, 1)
  return std::ldexp(1.0f, exponent - 1 - 14);
}

/// The zero point every group of the parts shares, or -1.
int common_zero_of(std::span<const quantized_rows> parts, int64_t groups) {
  int common = -1;
  for (const auto& part : parts)
    for (int64_t i = 0; i < part.num_rows * groups; ++i) {
      if (common < 0) common = part.zeros[i];
      if (part.zeros[i] != common) return -1;
    }
  return common;
}

}  // namespace

float packed_matrix::q4_scale(int64_t i) const {
  half h;
  std::memcpy(&h, &half_scales[i], sizeof h);
  return static_cast<float>(h) * scale_unit;
}

packed_matrix pack_quantized(std::span<const quantized_rows> parts, int64_t in_features,
                             const quantized_layout& layout) {
  check_layout(in_features, layout);
  packed_matrix p;
  p.format = layout.bits == 4 ? weight_format::q4 : weight_format::q8;
  p.in_features = in_features;
  p.group_size = layout.group_size == in_features ? 0 : layout.group_size;
  p.input_order.assign(layout.input_order.begin(), layout.input_order.end());
  std::vector<quantized_row> rows;
  for (const auto& part : parts)
    for (int64_t r = 0; r < part.num_rows; ++r) rows.push_back({&part, r});
  p.out_features = static_cast<int64_t>(rows.size());
  const int64_t num_panels = p.num_panels(), groups = p.num_groups();
  if (p.format == weight_format::q4)
    p.panels4.assign(num_panels * in_features * width / 2, 0);
  else
    p.panels8.assign(num_panels * in_features * width, 0);
  if (p.format == weight_format::q4) {
    p.scale_unit = scale_unit_of(parts, groups);
    p.half_scales.assign(num_panels * groups * width, 0);
    const int common = common_zero_of(parts, groups);
    if (common >= 0)
      p.common_zero = static_cast<uint8_t>(common);
    else
      p.zeros.assign(num_panels * groups * width, 0);
  } else {
    p.scales.assign(num_panels * groups * width, 0.0f);
  }
  // The q4 bytes of two lanes are shared, so a panel is packed by one member. An exception
  // (an 8-bit code outside int8) is taken out of the team and rethrown here.
  std::vector<std::string> errors(num_panels);
  parallel_for(num_panels, 1, 0, [&](int64_t first, int64_t last) {
    for (int64_t panel = first; panel < last; ++panel) {
      try {
        for (int64_t lane = 0; lane < width && panel * width + lane < p.out_features; ++lane)
          pack_quantized_row(p, panel, lane, rows[panel * width + lane], layout);
      } catch (const std::invalid_argument& e) {
        errors[panel] = e.what();
      }
    }
  });
  for (const auto& e : errors)
    if (!e.empty()) throw std::invalid_argument(e);
  return p;
}

}  // namespace actorllm::cpu

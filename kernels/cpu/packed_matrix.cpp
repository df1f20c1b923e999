// Packing weights into panels (float32, 16-bit as shipped, or int8 quantized per output
// feature), and reading them back: the reference the kernel's tests and the CUDA upload use.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/float8.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "kernels/cpu/thread_team.hpp"
#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu {

namespace {

constexpr int64_t width = packed_matrix::panel_width;

ACTORLLM_AVX2 float f16_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

ACTORLLM_AVX2 uint16_t float_to_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Round to nearest even; a NaN stays a (quiet) NaN.
uint16_t float_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

/// The 16-bit value at element k of a row (read byte-wise: the row may sit at an odd address).
uint16_t raw16(const void* row, int64_t k) {
  uint16_t v;
  std::memcpy(&v, static_cast<const unsigned char*>(row) + 2 * k, 2);
  return v;
}

float element(const void* row, weight_format format, int64_t k) {
  switch (format) {
    case weight_format::f32: {
      float f;
      std::memcpy(&f, static_cast<const unsigned char*>(row) + 4 * k, 4);
      return f;
    }
    case weight_format::f16:
      return f16_to_float(raw16(row, k));
    case weight_format::bf16:
      return bf16_to_float(raw16(row, k));
    case weight_format::fp8:
      return float8_e4m3::decode(static_cast<const uint8_t*>(row)[k]);
    case weight_format::q8:
    case weight_format::q4:
      break;
  }
  throw std::logic_error("an integer matrix is not a packing source");
}

struct source_row {
  const void* data;
  weight_format format;
  float scale;  ///< fp8 rows: their scale; 1 otherwise
};

/// Writes source row `row` into lane `lane` of `panel` (in_features x 16) of w.
void pack_row(packed_matrix& w, int64_t panel, int64_t lane, source_row row,
              std::vector<float>& scratch) {
  const int64_t in = w.in_features;
  const int64_t base = panel * in * width + lane;
  if (w.format == weight_format::fp8 && row.format != weight_format::fp8)
    throw std::logic_error("fp8 panels are packed from fp8 rows only");
  auto value = [&](int64_t k) { return element(row.data, row.format, k) * row.scale; };
  switch (w.format) {
    case weight_format::fp8:
      w.scales[panel * width + lane] = row.scale * 256.0f;
      for (int64_t k = 0; k < in; ++k)
        w.panels8[base + k * width] = static_cast<const int8_t*>(row.data)[k];
      return;
    case weight_format::f32:
      for (int64_t k = 0; k < in; ++k) w.panels[base + k * width] = value(k);
      return;
    case weight_format::f16:
    case weight_format::bf16: {
      uint16_t* panel16 = w.panels16.data() + panel * w.panel_rows() * width;
      const bool f16 = w.format == weight_format::f16;
      for (int64_t k = 0; k < in; ++k)
        panel16[offset16(w.format, k, lane)] =
            row.format == w.format ? raw16(row.data, k)
                                   : (f16 ? float_to_f16(value(k)) : float_to_bf16(value(k)));
      return;
    }
    case weight_format::q8: {
      scratch.resize(in);
      float max_abs = 0.0f;
      for (int64_t k = 0; k < in; ++k) {
        scratch[k] = value(k);
        max_abs = std::max(max_abs, std::fabs(scratch[k]));
      }
      const float scale = max_abs / 127.0f;
      w.scales[panel * width + lane] = scale;
      for (int64_t k = 0; k < in; ++k) {
        const float q = scale > 0.0f ? std::round(scratch[k] / scale) : 0.0f;
        w.panels8[base + k * width] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
      }
      return;
    }
    case weight_format::q4:
      break;
  }
  throw std::logic_error("q4 panels are packed through pack_quantized");
}

/// Q4_0 (pack_matrix's comment gives the rule) of `rows`, through pack_quantized.
packed_matrix quantize_q4(const std::vector<source_row>& rows, int64_t in) {
  const int64_t group = q4_group_size;
  if (in % group != 0)
    throw std::invalid_argument("int4 quantizes groups of " + std::to_string(group) +
                                " input features: " + std::to_string(in) +
                                " is not a multiple of it");
  const int64_t out = static_cast<int64_t>(rows.size()), groups = in / group;
  scratch_vector<uint8_t> codes(out * in);
  std::vector<uint8_t> zeros(out * groups, 8);
  std::vector<float> scales(out * groups);
  parallel_for(out, 1, 0, [&](int64_t first, int64_t last) {
    for (int64_t o = first; o < last; ++o)
      for (int64_t g = 0; g < groups; ++g) {
        float max = 0.0f;
        for (int64_t k = g * group; k < (g + 1) * group; ++k) {
          const float v = element(rows[o].data, rows[o].format, k) * rows[o].scale;
          if (std::fabs(v) > std::fabs(max)) max = v;
        }
        const float scale = max / -8.0f;
        scales[o * groups + g] = scale;
        for (int64_t k = g * group; k < (g + 1) * group; ++k) {
          const float v = element(rows[o].data, rows[o].format, k) * rows[o].scale;
          const float code = scale != 0.0f ? std::floor(v / scale + 8.5f) : 8.0f;
          codes[o * in + k] = static_cast<uint8_t>(std::min(code, 15.0f));
        }
      }
  });
  const quantized_rows whole{codes.data(), scales.data(), zeros.data(), out};
  return pack_quantized({&whole, 1}, in, {4, group, {}});
}

/// Weight j (a panel row) of output feature `lane` of panel `panel`, as float32.
float panel_value(const packed_matrix& w, int64_t panel, int64_t lane, int64_t j) {
  const int64_t in = w.in_features;
  const int64_t at = (panel * in + j) * width + lane;
  const int64_t group = (panel * w.num_groups() + j / w.group_length()) * width + lane;
  switch (w.format) {
    case weight_format::f32:
      return w.panels[at];
    case weight_format::f16:
      return f16_to_float(w.panels16[at]);
    case weight_format::bf16:
      return bf16_to_float(
          w.panels16[panel * w.panel_rows() * width + offset16(weight_format::bf16, j, lane)]);
    case weight_format::q8:
      return w.panels8[at] * w.scales[group];
    case weight_format::fp8:
      // The fp8 panels' scales hold 2^8 times the row's scale (packed_matrix::scales).
      return float8_e4m3::decode(static_cast<uint8_t>(w.panels8[at])) * (w.scales[group] / 256.0f);
    case weight_format::q4: {
      const uint8_t byte = w.panels4[(panel * in + j) * (width / 2) + lane % 8];
      const int code = lane < 8 ? byte & 0xf : byte >> 4;
      return static_cast<float>(code - w.q4_zero(group)) * w.q4_scale(group);
    }
  }
  return 0.0f;
}

}  // namespace

const char* to_string(weight_format format) {
  switch (format) {
    case weight_format::f32:
      return "float32";
    case weight_format::f16:
      return "float16";
    case weight_format::bf16:
      return "bfloat16";
    case weight_format::q8:
      return "int8";
    case weight_format::fp8:
      return "float8_e4m3";
    case weight_format::q4:
      return "int4";
  }
  return "?";
}

int64_t element_size(weight_format format) {
  switch (format) {
    case weight_format::f32:
      return 4;
    case weight_format::f16:
    case weight_format::bf16:
      return 2;
    case weight_format::q8:
    case weight_format::fp8:
      return 1;
    case weight_format::q4:
      break;
  }
  throw std::logic_error("q4 is not a packing source");
}

int64_t packed_matrix::bytes() const {
  return static_cast<int64_t>(panels.size() * sizeof(float) + panels16.size() * 2 + panels8.size() +
                              panels4.size() + scales.size() * sizeof(float) +
                              half_scales.size() * sizeof(uint16_t) + zeros.size() +
                              input_order.size() * sizeof(int32_t));
}

packed_matrix pack_matrix(const float* w, int64_t out_features, int64_t in_features) {
  const matrix_rows whole{w, weight_format::f32, out_features};
  return pack_matrix({&whole, 1}, in_features, weight_format::f32);
}

packed_matrix pack_matrix(std::span<const matrix_rows> parts, int64_t in_features,
                          weight_format format) {
  packed_matrix p;
  p.format = format;
  p.in_features = in_features;
  std::vector<source_row> rows;
  for (const auto& part : parts)
    for (int64_t r = 0; r < part.num_rows; ++r)
      rows.push_back({static_cast<const unsigned char*>(part.data) +
                          r * in_features * element_size(part.format),
                      part.format, part.row_scales ? part.row_scales[r] : 1.0f});
  if (format == weight_format::q4) return quantize_q4(rows, in_features);
  p.out_features = static_cast<int64_t>(rows.size());
  const size_t n = p.num_panels() * p.panel_rows() * width;
  switch (format) {
    case weight_format::f32:
      p.panels.assign(n, 0.0f);
      break;
    case weight_format::f16:
    case weight_format::bf16:
      p.panels16.assign(n, 0);
      break;
    case weight_format::q8:
    case weight_format::fp8:
      p.panels8.assign(n, 0);
      p.scales.assign(p.num_panels() * width, 0.0f);
      break;
    case weight_format::q4:
      break;  // quantize_q4
  }
  // Panels are independent: packed on the team (a 1B model has 50k of them).
  parallel_for(p.num_panels(), 1, 0, [&](int64_t first, int64_t last) {
    std::vector<float> scratch;
    for (int64_t panel = first; panel < last; ++panel)
      for (int64_t lane = 0; lane < width && panel * width + lane < p.out_features; ++lane)
        pack_row(p, panel, lane, rows[panel * width + lane], scratch);
  });
  return p;
}

void gather_rows(const packed_matrix& w, const int32_t* ids, int64_t n, float* out) {
  const int64_t in = w.in_features;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t panel = ids[i] / width, lane = ids[i] % width;
    float* dst = out + i * in;
    if (w.input_order.empty())
      for (int64_t j = 0; j < in; ++j) dst[j] = panel_value(w, panel, lane, j);
    else
      for (int64_t j = 0; j < in; ++j) dst[w.input_order[j]] = panel_value(w, panel, lane, j);
  }
}

std::vector<float> unpack_matrix(const packed_matrix& w) {
  std::vector<int32_t> ids(w.out_features);
  for (int64_t o = 0; o < w.out_features; ++o) ids[o] = static_cast<int32_t>(o);
  std::vector<float> out(w.out_features * w.in_features);
  gather_rows(w, ids.data(), w.out_features, out.data());
  return out;
}

void unpack_matrix_bits16(const packed_matrix& w, uint16_t* out) {
  if (w.format != weight_format::f16 && w.format != weight_format::bf16)
    throw std::invalid_argument(std::string("unpack_matrix_bits16: the panels hold ") +
                                to_string(w.format) + ", not a 16-bit type");
  const int64_t in = w.in_features;
  for (int64_t o = 0; o < w.out_features; ++o) {
    const uint16_t* panel = w.panels16.data() + (o / width) * w.panel_rows() * width;
    uint16_t* row = out + o * in;
    for (int64_t j = 0; j < in; ++j) row[j] = panel[offset16(w.format, j, o % width)];
  }
}

}  // namespace actorllm::cpu

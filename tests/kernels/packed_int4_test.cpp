// Grouped integer panels (q4, and q8 with a scale per group): packing keeps every code, scale
// and zero point (q4's scales in float16, which holds GPTQ's, AWQ's and bfloat16 scales
// exactly), so unpacking reads back (code - zero) * scale exactly in the input features' own
// order (reordered groups too); Q4_0 at load follows its rule; and the kernel, at every
// row count of its tiles and on shapes whose groups cut the depth blocks unevenly, equals a
// plain float GEMM over the dequantised weights.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_vectors.hpp"

namespace actorllm {
namespace {

using cpu::weight_format;

/// v rounded to float16, as GPTQ's and AWQ's checkpoints hold their scales.
float to_half(float v) {
  return static_cast<float>(static_cast<cpu::half>(v));
}

/// A random grouped matrix: codes below 2^bits, positive and negative float16 scales, zero
/// points anywhere in the code range (AWQ's are), and a group whose scale is 0.
struct grouped_matrix {
  int64_t out, in, group;
  int bits;
  std::vector<uint8_t> codes, zeros;
  std::vector<float> scales;
  std::vector<int32_t> order;  // empty: groups in place

  grouped_matrix(int64_t out_, int64_t in_, int64_t group_, int bits_, uint32_t seed,
                 bool reordered = false)
      : out(out_), in(in_), group(group_), bits(bits_) {
    std::mt19937 rng(seed);
    const int64_t groups = in / group;
    codes.resize(out * in);
    for (auto& c : codes) c = static_cast<uint8_t>(rng() % (1u << bits));
    zeros.resize(out * groups);
    for (auto& z : zeros) z = static_cast<uint8_t>(bits == 4 ? rng() % 17 : 128);
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    scales.resize(out * groups);
    for (auto& s : scales) s = to_half(dist(rng));
    scales[0] = 0.0f;
    if (reordered) {
      order.resize(in);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
    }
  }

  /// The group of input feature k: its place in `order`, over the group size.
  int64_t group_of(int64_t k) const {
    if (order.empty()) return k / group;
    return (std::find(order.begin(), order.end(), k) - order.begin()) / group;
  }

  /// w[o][k] = float(code - zero) * scale, from quantized_rows' definition.
  std::vector<float> dequantised() const {
    std::vector<float> w(out * in);
    const int64_t groups = in / group;
    for (int64_t k = 0; k < in; ++k) {
      const int64_t g = group_of(k);
      for (int64_t o = 0; o < out; ++o)
        w[o * in + k] = static_cast<float>(int(codes[o * in + k]) - int(zeros[o * groups + g])) *
                        scales[o * groups + g];
    }
    return w;
  }

  cpu::packed_matrix pack() const {
    // Two parts, as q, k and v are packed into one matrix.
    const int64_t first = out / 3, groups = in / group;
    const cpu::quantized_rows parts[] = {{codes.data(), scales.data(), zeros.data(), first},
                                         {codes.data() + first * in, scales.data() + first * groups,
                                          zeros.data() + first * groups, out - first}};
    return cpu::pack_quantized(parts, in, {bits, group, order});
  }
};

using testing::random_vector;

/// The kernel against y = x w^T + bias in double over the dequantised weights, for the row
/// counts of every tile height, a block of several tiles, and one past a row block.
void expect_kernel_matches(const cpu::packed_matrix& packed, const std::vector<float>& w) {
  // The float tiles' exact products (packed_isa_test bounds avx512_vnni's 8-bit activations).
  const testing::scoped_kernel_isa exact(testing::best_float_isa());
  const int64_t in = packed.in_features, out = packed.out_features;
  const auto bias = random_vector(out, 2);
  for (int n : {1, 2, 3, 4, 5, 6, 7, 13, 33, 97}) {
    const auto x = random_vector(n * in, 3 + n);
    std::vector<float> got(n * out, -7.0f);
    cpu::linear_packed(x.data(), packed, bias.data(), n, got.data());
    for (int i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double want = bias[o], magnitude = std::fabs(bias[o]);
        for (int64_t k = 0; k < in; ++k) {
          want += double(x[i * in + k]) * w[o * in + k];
          magnitude += std::fabs(double(x[i * in + k]) * w[o * in + k]);
        }
        ASSERT_NEAR(got[i * out + o], want, 1e-5 * (1.0 + magnitude))
            << cpu::to_string(packed.format) << " in " << in << " group " << packed.group_length()
            << " n " << n << " row " << i << " feature " << o;
      }
  }
}

TEST(packed_int4, grouped_codes_read_back_exactly_and_the_kernel_matches_float) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  struct shape {
    int64_t out, in, group;
  };
  // Groups of 32 and 64; 40, which cuts the 256-deep blocks unevenly; one group per row
  // deeper than a block (384); a partial last panel (37, 50 features).
  for (const shape s : {shape{37, 96, 32}, shape{16, 320, 64}, shape{50, 200, 40},
                        shape{33, 384, 384}, shape{20, 640, 128}}) {
    const grouped_matrix m(s.out, s.in, s.group, 4, static_cast<uint32_t>(s.in + s.group));
    const auto packed = m.pack();
    EXPECT_EQ(packed.format, weight_format::q4);
    EXPECT_EQ(packed.panels4.size(), size_t(packed.num_panels() * s.in * 8));
    EXPECT_TRUE(packed.panels8.empty() && packed.panels.empty());
    const auto want = m.dequantised();
    ASSERT_EQ(cpu::unpack_matrix(packed), want) << s.in << " / " << s.group;
    expect_kernel_matches(packed, want);
  }
}

TEST(packed_int4, reordered_groups_read_x_in_their_order) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  for (int bits : {4, 8}) {
    const grouped_matrix m(40, 256, 64, bits, 11, /*reordered=*/true);
    const auto packed = m.pack();
    EXPECT_EQ(packed.input_order, m.order);
    const auto want = m.dequantised();
    ASSERT_EQ(cpu::unpack_matrix(packed), want) << bits;
    expect_kernel_matches(packed, want);
    // The gather of a row is that row of the unpacked matrix.
    std::vector<float> row(256);
    const int32_t id = 39;
    cpu::gather_rows(packed, &id, 1, row.data());
    EXPECT_TRUE(std::equal(row.begin(), row.end(), want.begin() + 39 * 256));
  }
}

TEST(packed_int4, eight_bit_groups_pack_as_int8_with_a_scale_per_group) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const grouped_matrix m(37, 192, 64, 8, 12);
  const auto packed = m.pack();
  EXPECT_EQ(packed.format, weight_format::q8);
  EXPECT_EQ(packed.group_size, 64);
  EXPECT_EQ(packed.scales.size(), size_t(3 * 3 * 16));
  EXPECT_TRUE(packed.zeros.empty());
  const auto want = m.dequantised();
  ASSERT_EQ(cpu::unpack_matrix(packed), want);
  expect_kernel_matches(packed, want);
}

TEST(packed_int4, layouts_that_cannot_be_packed_are_refused) {
  grouped_matrix m(16, 96, 32, 4, 13);
  const cpu::quantized_rows rows{m.codes.data(), m.scales.data(), m.zeros.data(), 16};
  EXPECT_THROW(cpu::pack_quantized({&rows, 1}, 96, {3, 32, {}}), std::invalid_argument);
  EXPECT_THROW(cpu::pack_quantized({&rows, 1}, 96, {4, 40, {}}), std::invalid_argument);
  EXPECT_THROW(cpu::pack_quantized({&rows, 1}, 96, {4, 0, {}}), std::invalid_argument);
  const std::vector<int32_t> short_order(95);
  EXPECT_THROW(cpu::pack_quantized({&rows, 1}, 96, {4, 32, short_order}), std::invalid_argument);
  // 8 bits: code 255 with zero point 0 is outside int8.
  m.codes[5] = 255;
  std::fill(m.zeros.begin(), m.zeros.end(), 0);
  try {
    cpu::pack_quantized({&rows, 1}, 96, {8, 32, {}});
    FAIL() << "an 8-bit code outside int8 was packed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("outside int8"), std::string::npos) << e.what();
  }
}

/// --quantization int4's rule (pack_matrix's comment), written out: per group of 32, m = the
/// weight of largest magnitude (the first such), scale = m / -8, code = min(15, floor(w /
/// scale + 8.5)), read back as (code - 8) * the scale in float16 (as Q4_0 keeps it).
std::vector<float> reference_q4_0(const std::vector<float>& w, int64_t in) {
  std::vector<float> out(w.size());
  for (size_t g0 = 0; g0 < w.size(); g0 += 32) {
    float m = 0.0f;
    for (size_t k = g0; k < g0 + 32; ++k)
      if (std::fabs(w[k]) > std::fabs(m)) m = w[k];
    const float scale = m / -8.0f;
    for (size_t k = g0; k < g0 + 32; ++k) {
      const float code = scale != 0.0f ? std::min(15.0f, std::floor(w[k] / scale + 8.5f)) : 8.0f;
      out[k] = (code - 8.0f) * to_half(scale);
    }
  }
  (void)in;
  return out;
}

// q4's scales are float16 times a power of two chosen for the matrix: bfloat16 scales over
// many binades come back exactly, float32 ones within float16's rounding; a zero point that
// every group shares takes no bytes, and int4 weighs 4.5 bits a weight, Q4_0's.
TEST(packed_int4, scales_keep_float16_precision_and_a_common_zero_takes_no_bytes) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  grouped_matrix m(20, 128, 32, 4, 21);
  std::mt19937 rng(22);
  for (auto& s : m.scales) {
    // bfloat16 values from 2^-20 to 2^5, both signs (8 significant bits, float16 holds 11).
    const float v = std::ldexp(1.0f + static_cast<float>(rng() % 128) / 128.0f,
                               static_cast<int>(rng() % 26) - 20);
    s = rng() % 2 ? v : -v;
  }
  std::fill(m.zeros.begin(), m.zeros.end(), uint8_t{8});
  auto packed = m.pack();
  EXPECT_EQ(cpu::unpack_matrix(packed), m.dequantised());
  int exponent = 0;
  EXPECT_EQ(std::frexp(packed.scale_unit, &exponent), 0.5f) << "a power of two";
  EXPECT_TRUE(packed.zeros.empty());
  EXPECT_EQ(packed.common_zero, 8);
  EXPECT_TRUE(packed.scales.empty());
  const int64_t weights = packed.num_panels() * 16 * 128;
  EXPECT_EQ(packed.bytes(), weights / 2 + weights / 32 * 2);  // 4.5 bits a weight
  expect_kernel_matches(packed, m.dequantised());

  // float32 scales: within float16's rounding (2^-11 of each) of the exact weights.
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  for (auto& s : m.scales) s = dist(rng);
  m.zeros[5] = 3;  // one group's own zero point: every group's kept
  packed = m.pack();
  EXPECT_FALSE(packed.zeros.empty());
  const auto want = m.dequantised(), got = cpu::unpack_matrix(packed);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], std::fabs(want[i]) * std::ldexp(1.0, -11)) << i;
  EXPECT_NE(got, want) << "float32 scales are rounded";
  expect_kernel_matches(packed, got);
}

TEST(packed_int4, q4_0_at_load_equals_its_rule) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int64_t in = 320, out = 37;
  auto w = random_vector(out * in, 14);
  for (int k = 0; k < 32; ++k) w[2 * in + k] = 0.0f;  // a group of zeros: scale 0
  w[3 * in + 5] = 4.0f;                               // a group's largest weight, positive
  const cpu::matrix_rows whole{w.data(), weight_format::f32, out};
  const auto packed = cpu::pack_matrix({&whole, 1}, in, weight_format::q4);
  EXPECT_EQ(packed.group_size, cpu::q4_group_size);
  const auto want = reference_q4_0(w, in);
  ASSERT_EQ(cpu::unpack_matrix(packed), want);
  EXPECT_EQ(want[3 * in + 5], 4.0f);  // the largest maps to code 0: -8 * (4 / -8)
  expect_kernel_matches(packed, want);
  const cpu::matrix_rows odd{w.data(), weight_format::f32, 1};
  EXPECT_THROW(cpu::pack_matrix({&odd, 1}, 48, weight_format::q4), std::invalid_argument);
}

}  // namespace
}  // namespace actorllm

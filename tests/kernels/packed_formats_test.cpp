// Packed panels in the checkpoint's 16-bit formats and int8: packing keeps 16-bit values bit
// for bit, int8 quantization follows its documented rule exactly, unpacking and the gather
// read the panels back, and the kernel of every format equals a naive loop over the
// dequantised weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_vectors.hpp"

namespace actorllm {
namespace {

using cpu::weight_format;

using testing::random_vector;

/// bfloat16 by truncation: any 16-bit pattern is a valid source.
std::vector<uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<uint16_t> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    out[i] = static_cast<uint16_t>(bits >> 16);
  }
  return out;
}

float from_bf16(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// IEEE binary16 to float32 from the format's definition (sign, 5-bit exponent biased by 15,
/// 10-bit fraction; exponent 0 is subnormal: fraction * 2^-24).
float from_f16(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(fraction), -24);
  if (exponent == 31) return fraction ? NAN : sign * INFINITY;
  return sign * std::ldexp(1.0f + fraction / 1024.0f, exponent - 15);
}

/// Finite f16 patterns of moderate size (exponents 5..19, subnormals included).
std::vector<uint16_t> random_f16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint16_t> out(n);
  for (auto& h : out) {
    const uint32_t r = rng();
    h = static_cast<uint16_t>((r & 0x8000) | (((r >> 16) % 20) << 10) | (r & 0x3ff));
  }
  return out;
}

void expect_kernel_matches(const cpu::packed_matrix& packed, const std::vector<float>& w, int in,
                           int out) {
  const auto bias = random_vector(out, 2);
  for (int n : {1, 3, 6, 7, 33, 100}) {
    const auto x = random_vector(n * in, 3 + n);
    std::vector<float> got(n * out, -7.0f);
    cpu::linear_packed(x.data(), packed, bias.data(), n, got.data());
    for (int i = 0; i < n; ++i)
      for (int o = 0; o < out; ++o) {
        double want = bias[o];
        for (int k = 0; k < in; ++k) want += double(x[i * in + k]) * w[o * in + k];
        ASSERT_NEAR(got[i * out + o], want, 1e-4 * (1.0 + std::fabs(want)))
            << cpu::to_string(packed.format) << " n " << n << " row " << i << " feature " << o;
      }
  }
}

TEST(packed_formats, bf16_sources_pack_bit_for_bit_and_the_kernel_widens_them_exactly) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 300, out = 37;
  const auto raw = to_bf16(random_vector(out * in, 1));
  const cpu::matrix_rows parts[] = {{raw.data(), weight_format::bf16, 20},
                                    {raw.data() + 20 * in, weight_format::bf16, out - 20}};
  const auto packed = cpu::pack_matrix(parts, in, weight_format::bf16);
  // The float tiles widen bf16 exactly (avx512_bf16 rounds x instead: packed_isa_test).
  const testing::scoped_kernel_isa exact(testing::best_float_isa());
  ASSERT_EQ(packed.panels16.size(), size_t(3 * in * 16));
  EXPECT_TRUE(packed.panels.empty());
  EXPECT_EQ(packed.bytes(), 3 * in * 16 * 2);
  std::vector<float> want(out * in);
  for (size_t i = 0; i < want.size(); ++i) want[i] = from_bf16(raw[i]);
  EXPECT_EQ(cpu::unpack_matrix(packed), want);
  expect_kernel_matches(packed, want, in, out);
}

// bf16 panels hold input features in pairs (vdpbf16ps's operand layout): panel row k of
// lane f at (k & ~1) * 16 + 2f + (k & 1); an odd count pads the last pair with zeros. Every
// reader (unpacking, the 16-bit upload, the float tiles, the pair tiles' gate) agrees.
TEST(packed_formats, bf16_panels_hold_input_features_in_pairs_and_an_odd_count_pads_the_last) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 301, out = 20;
  const auto raw = to_bf16(random_vector(out * in, 11));
  const cpu::matrix_rows rows{raw.data(), weight_format::bf16, out};
  const auto packed = cpu::pack_matrix({&rows, 1}, in, weight_format::bf16);
  ASSERT_EQ(packed.panel_rows(), in + 1);
  ASSERT_EQ(packed.panels16.size(), size_t(2 * (in + 1) * 16));
  for (int o = 0; o < out; ++o) {
    const uint16_t* panel = packed.panels16.data() + (o / 16) * (in + 1) * 16;
    for (int k = 0; k < in; ++k)
      ASSERT_EQ(panel[(k / 2) * 32 + 2 * (o % 16) + k % 2], raw[o * in + k]) << o << " " << k;
    EXPECT_EQ(panel[(in / 2) * 32 + 2 * (o % 16) + 1], 0) << "the pad of feature " << o;
  }
  std::vector<float> want(out * in);
  for (size_t i = 0; i < want.size(); ++i) want[i] = from_bf16(raw[i]);
  EXPECT_EQ(cpu::unpack_matrix(packed), want);
  std::vector<uint16_t> bits(out * in);
  cpu::unpack_matrix_bits16(packed, bits.data());
  EXPECT_EQ(bits, raw);
  for (cpu::kernel_isa isa : {cpu::kernel_isa::avx2, cpu::kernel_isa::avx512,
                              cpu::kernel_isa::avx512_bf16, cpu::kernel_isa::amx}) {
    if (!cpu::cpu_runs(isa)) continue;
    // An odd count keeps x in float32 in every set (the pair tiles take pairs of x).
    const testing::scoped_kernel_isa use(isa);
    expect_kernel_matches(packed, want, in, out);
  }
}

TEST(packed_formats, f16_sources_at_odd_addresses_pack_bit_for_bit) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 513, out = 40;
  const auto raw = random_f16(out * in, 4);
  // The tensor one byte into a buffer, as after a safetensors header of odd length.
  std::vector<unsigned char> file(raw.size() * 2 + 1);
  std::memcpy(file.data() + 1, raw.data(), raw.size() * 2);
  const cpu::matrix_rows whole{file.data() + 1, weight_format::f16, out};
  const auto packed = cpu::pack_matrix({&whole, 1}, in, weight_format::f16);
  std::vector<float> want(out * in);
  for (size_t i = 0; i < want.size(); ++i) want[i] = from_f16(raw[i]);
  EXPECT_EQ(cpu::unpack_matrix(packed), want);
  expect_kernel_matches(packed, want, in, out);
}

TEST(packed_formats, float32_to_bf16_rounds_to_nearest_even) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: to the even one, 1.
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: to the even one, 1 + 2^-6.
  const std::vector<float> w = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 1e-3f};
  const cpu::matrix_rows whole{w.data(), weight_format::f32, 1};
  const auto got = cpu::unpack_matrix(cpu::pack_matrix({&whole, 1}, 4, weight_format::bf16));
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[1], 1.0f + 1.0f / 64);
  EXPECT_EQ(got[2], -2.5f);
  EXPECT_EQ(got[3], from_bf16(0x3a83));  // 1e-3 = 0x3a83126f: the dropped half is below 0x8000
}

/// The rule of weight_format::q8, written out: per output feature, scale = max |w| / 127,
/// q = round(w / scale) with halves away from zero; the weight read back is q * scale.
std::vector<float> reference_q8(const std::vector<float>& w, int in, int out) {
  std::vector<float> deq(w.size());
  for (int o = 0; o < out; ++o) {
    float max_abs = 0;
    for (int k = 0; k < in; ++k) max_abs = std::max(max_abs, std::fabs(w[o * in + k]));
    const float scale = max_abs / 127.0f;
    for (int k = 0; k < in; ++k) {
      const float q = scale > 0 ? std::round(w[o * in + k] / scale) : 0.0f;
      deq[o * in + k] = q * scale;
    }
  }
  return deq;
}

TEST(packed_formats, int8_quantization_per_output_feature_equals_the_reference) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 700, out = 50;  // several depth blocks, a partial last panel
  auto w = random_vector(out * in, 5);
  for (int k = 0; k < in; ++k) w[7 * in + k] = 0.0f;      // a row of zeros: scale 0
  for (int k = 0; k < in; ++k) w[8 * in + k] *= 1000.0f;  // rows of very different ranges
  const cpu::matrix_rows whole{w.data(), weight_format::f32, out};
  const auto packed = cpu::pack_matrix({&whole, 1}, in, weight_format::q8);
  EXPECT_EQ(packed.bytes(), 4 * in * 16 + 4 * 16 * 4);
  const auto want = reference_q8(w, in, out);
  EXPECT_EQ(cpu::unpack_matrix(packed), want);
  expect_kernel_matches(packed, want, in, out);
  EXPECT_EQ(packed.scales[7], 0.0f);  // the row of zeros
  int max_q = 0;
  for (int k = 0; k < in; ++k) max_q = std::max(max_q, std::abs(int(packed.panels8[k * 16 + 8])));
  EXPECT_EQ(max_q, 127);  // a row's largest weight maps to +-127
}

TEST(packed_formats, int8_of_bf16_rows_quantizes_the_bf16_values) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 64, out = 16;
  const auto raw = to_bf16(random_vector(out * in, 6));
  std::vector<float> wide(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) wide[i] = from_bf16(raw[i]);
  const cpu::matrix_rows whole{raw.data(), weight_format::bf16, out};
  EXPECT_EQ(cpu::unpack_matrix(cpu::pack_matrix({&whole, 1}, in, weight_format::q8)),
            reference_q8(wide, in, out));
}

/// float8 E4M3FN from the OCP 8-bit floating point specification: sign, 4 exponent bits
/// biased by 7, 3 mantissa bits; exponent 0 is subnormal (m / 8 * 2^-6); 0x7f is NaN.
float from_e4m3(uint8_t code) {
  const int exponent = (code >> 3) & 0xf, mantissa = code & 7;
  const float sign = (code & 0x80) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(mantissa / 8.0f, -6);
  return sign * std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
}

TEST(packed_formats, fp8_codes_pack_as_shipped_and_read_as_code_times_scale) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 300, out = 37;
  std::mt19937 rng(10);
  std::vector<uint8_t> codes(out * in);
  for (auto& c : codes) {
    c = static_cast<uint8_t>(rng());
    if ((c & 0x7f) == 0x7f) c ^= 1;  // no NaN
  }
  codes[0] = 0x01;  // the smallest subnormal, 2^-9
  codes[1] = 0xfe;  // -448, the largest magnitude
  std::vector<float> scales(out);
  for (int o = 0; o < out; ++o) scales[o] = 1e-3f * (1 + o);
  const cpu::matrix_rows parts[] = {
      {codes.data(), weight_format::fp8, 20, scales.data()},
      {codes.data() + 20 * in, weight_format::fp8, out - 20, scales.data() + 20}};
  const auto packed = cpu::pack_matrix(parts, in, weight_format::fp8);
  EXPECT_EQ(packed.bytes(), 3 * in * 16 + 3 * 16 * 4);
  std::vector<float> want(out * in);
  for (int o = 0; o < out; ++o)
    for (int k = 0; k < in; ++k) want[o * in + k] = from_e4m3(codes[o * in + k]) * scales[o];
  EXPECT_EQ(cpu::unpack_matrix(packed), want);
  expect_kernel_matches(packed, want, in, out);
}

TEST(packed_formats, gather_reads_rows_of_every_format) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 24, out = 35;
  const auto w = random_vector(out * in, 7);
  const cpu::matrix_rows whole{w.data(), weight_format::f32, out};
  const int32_t ids[] = {34, 0, 17, 17};
  for (auto format :
       {weight_format::f32, weight_format::f16, weight_format::bf16, weight_format::q8}) {
    const auto packed = cpu::pack_matrix({&whole, 1}, in, format);
    const auto all = cpu::unpack_matrix(packed);
    std::vector<float> got(4 * in);
    cpu::gather_rows(packed, ids, 4, got.data());
    for (int i = 0; i < 4; ++i)
      for (int k = 0; k < in; ++k)
        ASSERT_EQ(got[i * in + k], all[ids[i] * in + k]) << cpu::to_string(format);
  }
}

TEST(packed_formats, slices_off_panel_boundaries_get_their_features) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 40, q = 24, kv = 12, out = q + 2 * kv;  // q ends mid-panel
  const auto w = random_vector(out * in, 8);
  const auto packed = cpu::pack_matrix(w.data(), out, in);
  const int n = 5;
  const auto x = random_vector(n * in, 9);
  std::vector<float> fused(n * out), qs(n * q), ks(n * kv), vs(n * kv);
  cpu::linear_packed(x.data(), packed, nullptr, n, fused.data());
  const cpu::output_slice slices[] = {{q, qs.data()}, {kv, ks.data()}, {kv, vs.data()}};
  cpu::linear_packed_split(x.data(), packed, nullptr, n, slices);
  for (int t = 0; t < n; ++t) {
    for (int j = 0; j < q; ++j) ASSERT_EQ(qs[t * q + j], fused[t * out + j]);
    for (int j = 0; j < kv; ++j) ASSERT_EQ(ks[t * kv + j], fused[t * out + q + j]);
    for (int j = 0; j < kv; ++j) ASSERT_EQ(vs[t * kv + j], fused[t * out + q + kv + j]);
  }
}

}  // namespace
}  // namespace actorllm

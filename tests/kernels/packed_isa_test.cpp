// Each instruction set's packed tiles (AVX2, and AVX-512 where the CPU runs it), integer
// paths (avx2_int8, and avx512_vnni where the CPU runs it) and bf16 pair tiles (avx512_bf16)
// against a double-precision GEMM over the weights unpack_matrix reads back: every panel format
// (f32, f16, bf16, int8 per channel and per group, float8, Q4_0, GPTQ-style 4-bit with zero points
// and reordered groups), every tile height of both sets (1-12 rows), blocks of several tiles
// (the widened path), a partial last panel, depth blocks cut by groups, one thread and two.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/packed_linear.hpp"
#include "kernels/cpu/thread_team.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_vectors.hpp"

namespace actorllm {
namespace {

using cpu::weight_format;
using testing::random_vector;
using testing::scoped_kernel_isa;

/// (out, in) weights packed in every format the tiles read. in must be a multiple of 96.
std::vector<cpu::packed_matrix> packed_in_every_format(int64_t out, int64_t in, uint32_t seed) {
  const auto w = random_vector(out * in, seed);
  const cpu::matrix_rows rows{w.data(), weight_format::f32, out};
  std::vector<cpu::packed_matrix> packed;
  packed.push_back(cpu::pack_matrix(w.data(), out, in));
  for (weight_format f : {weight_format::f16, weight_format::bf16, weight_format::q8,
                          weight_format::q4})  // q4: Q4_0, groups of 32
    packed.push_back(cpu::pack_matrix({&rows, 1}, in, f));
  // float8 codes as shipped, one scale per row (no NaN codes).
  std::mt19937 rng(seed);
  std::vector<uint8_t> fp8(out * in);
  for (auto& c : fp8) c = static_cast<uint8_t>((rng() % 0x7f) | (rng() % 2) << 7);
  std::vector<float> row_scales(out);
  for (auto& s : row_scales) s = 1e-3f * static_cast<float>(1 + rng() % 20);
  const cpu::matrix_rows fp8_rows{fp8.data(), weight_format::fp8, out, row_scales.data()};
  packed.push_back(cpu::pack_matrix({&fp8_rows, 1}, in, weight_format::fp8));
  // Grouped integer codes: 4-bit with zero points in reordered groups of 96 (which cut the
  // 256-deep blocks unevenly), and 8-bit with a scale per group of 32.
  std::vector<uint8_t> codes(out * in), zeros(out * in / 32);
  std::vector<float> scales(out * in / 32);
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % 16);
  for (auto& z : zeros) z = static_cast<uint8_t>(rng() % 17);
  for (auto& s : scales) s = 0.05f * (static_cast<float>(rng() % 200) / 100.0f - 1.0f);
  std::vector<int32_t> order(in);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  const cpu::quantized_rows q4{codes.data(), scales.data(), zeros.data(), out};
  packed.push_back(cpu::pack_quantized({&q4, 1}, in, {4, 96, order}));
  for (auto& c : codes) c = static_cast<uint8_t>(rng() % 256);
  std::fill(zeros.begin(), zeros.end(), uint8_t{128});
  const cpu::quantized_rows q8{codes.data(), scales.data(), zeros.data(), out};
  packed.push_back(cpu::pack_quantized({&q8, 1}, in, {8, 32, {}}));
  return packed;
}

/// Whether the amx set's tiles take `packed` (int8 or int4) at n rows: batches of 32 rows or
/// more (4 for per-channel int8), in_features a multiple of 32; x rounded to bf16, and the
/// weights too except per-channel int8's.
bool amx_takes_quantized(const cpu::packed_matrix& packed, int64_t n) {
  return cpu::kernel_isa_in_use() == cpu::kernel_isa::amx &&
         (packed.format == weight_format::q8 || packed.format == weight_format::q4) &&
         n >= (packed.per_channel_int8() ? 4 : 32) && packed.in_features % 32 == 0;
}

/// Whether linear_packed rounds x to 8 bits for `packed` and n rows (the integer path of
/// avx2_int8, avx512_vnni and the rest: int8 and int4 panels, any number of rows, blocks of 32
/// that tile the groups; amx's batches aside).
bool integer_path_runs(const cpu::packed_matrix& packed, int64_t n) {
  return cpu::rounds_activations(cpu::kernel_isa_in_use()) &&
         (packed.format == weight_format::q8 || packed.format == weight_format::q4) && n >= 1 &&
         packed.in_features % 32 == 0 && packed.group_length() % 32 == 0 &&
         !amx_takes_quantized(packed, n);
}

/// Whether linear_packed rounds x to bf16 for `packed` and n rows (the avx512_bf16 set's
/// pair tiles and the amx set's tiles: bf16 panels, batches of more than one row).
bool bf16_pairs_run(const cpu::packed_matrix& packed, int64_t n) {
  return cpu::rounds_activations_to_bf16(cpu::kernel_isa_in_use()) &&
         packed.format == weight_format::bf16 && n > 1 && packed.in_features % 2 == 0;
}
/// bf16 keeps 8 significant bits: rounding moves x by at most 2^-8 of itself.
constexpr double bf16_unit_roundoff = 1.0 / 256.0;

/// The most that rounding x (in the panels' row order) to 8 bits per block of 32 can move one
/// output: each x within half a step, max |x| of its block / 127, of its value.
double activation_rounding_bound(const std::vector<float>& x_row, const float* w_row,
                                 const std::vector<int32_t>& order) {
  double bound = 0.0;
  const int64_t in = static_cast<int64_t>(x_row.size());
  auto feature = [&](int64_t j) { return order.empty() ? j : order[j]; };
  for (int64_t b = 0; b < in; b += 32) {
    double amax = 0.0;
    for (int64_t j = b; j < b + 32; ++j)
      amax = std::max(amax, double(std::fabs(x_row[feature(j)])));
    for (int64_t j = b; j < b + 32; ++j) bound += std::fabs(w_row[feature(j)]) * amax / 254.0;
  }
  return bound;
}

/// linear_packed under the current instruction set against y = x w^T + bias in double, within
/// float rounding, plus what rounding x to 8 bits (or x and the weights to bf16) can cost
/// where the set does that.
void expect_tiles_match_unpacked(const cpu::packed_matrix& packed, const std::vector<int>& rows) {
  const int64_t in = packed.in_features, out = packed.out_features;
  const std::vector<float> w = cpu::unpack_matrix(packed);
  const auto bias = random_vector(out, 2);
  for (int n : rows) {
    const auto x = random_vector(n * in, 3 + n);
    std::vector<float> got(n * out, -7.0f);
    cpu::linear_packed(x.data(), packed, n % 2 ? bias.data() : nullptr, n, got.data());
    for (int i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        double want = n % 2 ? bias[o] : 0.0, magnitude = std::fabs(want);
        for (int64_t k = 0; k < in; ++k) {
          want += double(x[i * in + k]) * w[o * in + k];
          magnitude += std::fabs(double(x[i * in + k]) * w[o * in + k]);
        }
        double rounding = 0.0;
        if (bf16_pairs_run(packed, n)) rounding = magnitude * bf16_unit_roundoff;
        if (amx_takes_quantized(packed, n)) rounding = magnitude * 2 * bf16_unit_roundoff;
        if (integer_path_runs(packed, n)) {
          const std::vector<float> row(x.begin() + i * in, x.begin() + (i + 1) * in);
          rounding = activation_rounding_bound(row, w.data() + o * in, packed.input_order);
        }
        ASSERT_NEAR(got[i * out + o], want, 1e-5 * (1.0 + magnitude) + rounding)
            << cpu::to_string(cpu::kernel_isa_in_use()) << " " << cpu::to_string(packed.format)
            << " group " << packed.group_length() << " in " << in << " out " << out << " n " << n
            << " row " << i << " feature " << o;
      }
  }
}

void expect_isa_matches_unpacked(cpu::kernel_isa isa) {
  const scoped_kernel_isa use(isa);
  const int saved = cpu::num_threads();
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    // Every tile height of both sets, two and three tiles, a whole row block and more.
    const std::vector<int> rows =
        threads == 1 ? std::vector<int>{1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 25, 97}
                     : std::vector<int>{1, 4, 24, 200};
    for (auto [out, in] : {std::pair<int64_t, int64_t>{37, 288}, {100, 576}})
      for (const auto& packed : packed_in_every_format(out, in, static_cast<uint32_t>(out)))
        expect_tiles_match_unpacked(packed, rows);
  }
  cpu::set_num_threads(saved);
}

TEST(packed_isa, avx2_tiles_match_the_unpacked_weights) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx2)) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  expect_isa_matches_unpacked(cpu::kernel_isa::avx2);
}

TEST(packed_isa, avx512_tiles_match_the_unpacked_weights) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx512)) GTEST_SKIP() << "no AVX-512 on this CPU";
  expect_isa_matches_unpacked(cpu::kernel_isa::avx512);
}

// The integer paths: within the bound of rounding x to 8 bits, for every format they take (and
// the float tiles, exactly, for the rest and for more rows).
TEST(packed_isa, avx2_int8_matches_the_unpacked_weights_within_x_s_rounding) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx2_int8)) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  expect_isa_matches_unpacked(cpu::kernel_isa::avx2_int8);
}

TEST(packed_isa, avx512_vnni_matches_the_unpacked_weights_within_x_s_rounding) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx512_vnni)) GTEST_SKIP() << "no AVX-512 VNNI/VBMI here";
  expect_isa_matches_unpacked(cpu::kernel_isa::avx512_vnni);
}

/// x . w over `in` features in double, and the sum of the products' magnitudes.
std::pair<double, double> dot_in_double(const float* x, const float* w, int64_t in) {
  double sum = 0.0, magnitude = 0.0;
  for (int64_t k = 0; k < in; ++k) {
    sum += double(x[k]) * w[k];
    magnitude += std::fabs(double(x[k]) * w[k]);
  }
  return {sum, magnitude};
}

/// With x on its 8-bit grid (whole multiples of 1/8 up to 127/8, each block reaching 127/8),
/// rounding costs nothing: the integer products of `integer` equal the float ones of
/// `float_set`. And off the grid they differ from the float tiles', so the integer path ran.
void expect_integer_path_exact_on_the_grid(cpu::kernel_isa float_set, cpu::kernel_isa integer) {
  const int64_t out = 37, in = 288;
  for (const auto& packed : packed_in_every_format(out, in, 5)) {
    // (Reordered groups quantize x in their own order, where these blocks do not line up.)
    if ((packed.format != weight_format::q8 && packed.format != weight_format::q4) ||
        !packed.input_order.empty())
      continue;
    SCOPED_TRACE(cpu::to_string(packed.format));
    for (int n = 1; n <= 4; ++n) {
      std::mt19937 rng(static_cast<uint32_t>(n));
      std::vector<float> on_grid(n * in);
      for (int64_t i = 0; i < n * in; ++i)
        on_grid[i] = static_cast<float>(static_cast<int>(rng() % 255) - 127) / 8.0f;
      for (int64_t b = 0; b < n * in; b += 32)
        on_grid[b + rng() % 32] = (b % 64 ? 127 : -127) / 8.0f;
      const auto off_grid = random_vector(n * in, 40 + n);
      std::vector<float> want(n * out), got(n * out), float_tiles(n * out), rounded(n * out);
      {
        const scoped_kernel_isa use(float_set);
        cpu::linear_packed(on_grid.data(), packed, nullptr, n, want.data());
        cpu::linear_packed(off_grid.data(), packed, nullptr, n, float_tiles.data());
      }
      const scoped_kernel_isa use(integer);
      cpu::linear_packed(on_grid.data(), packed, nullptr, n, got.data());
      cpu::linear_packed(off_grid.data(), packed, nullptr, n, rounded.data());
      const std::vector<float> w = cpu::unpack_matrix(packed);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t o = 0; o < out; ++o) {
          const auto [exact, magnitude] = dot_in_double(&on_grid[i * in], &w[o * in], in);
          ASSERT_NEAR(want[i * out + o], exact, 2e-6 * magnitude + 1e-6) << "float tiles";
          ASSERT_NEAR(got[i * out + o], exact, 2e-6 * magnitude + 1e-6)
              << cpu::to_string(integer) << " n " << n << " row " << i << " feature " << o;
        }
      EXPECT_NE(rounded, float_tiles) << cpu::to_string(integer) << " n " << n;
    }
  }
}

TEST(packed_isa, avx2_int8_is_exact_for_x_on_its_grid) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx2_int8)) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  expect_integer_path_exact_on_the_grid(cpu::kernel_isa::avx2, cpu::kernel_isa::avx2_int8);
}

TEST(packed_isa, avx512_vnni_is_exact_for_x_on_its_grid) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx512_vnni)) GTEST_SKIP() << "no AVX-512 VNNI/VBMI here";
  expect_integer_path_exact_on_the_grid(cpu::kernel_isa::avx512, cpu::kernel_isa::avx512_vnni);
}

TEST(packed_isa, avx512_bf16_matches_the_unpacked_weights_within_x_s_rounding) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx512_bf16)) GTEST_SKIP() << "no AVX-512 BF16 here";
  expect_isa_matches_unpacked(cpu::kernel_isa::avx512_bf16);
}

/// With x on bf16's grid the products of `isa` (avx512_bf16's pair tiles, amx's tiles) are
/// the float tiles' (a bf16 product is exact in float32); off it they differ, so the bf16
/// products ran. One row (a single stream, which reads the weights at the memory's pace
/// either way) keeps the float tiles, and equals them. Batches of 2 to 200 rows: one and two
/// 16-row tiles, whole 32-row blocks and a shorter last one; 37 features: two panels and one.
void expect_bf16_products_exact_for_x_on_their_grid(cpu::kernel_isa isa, int64_t in) {
  const int64_t out = 37;
  const auto w_float = random_vector(out * in, 9);
  const cpu::matrix_rows rows{w_float.data(), weight_format::f32, out};
  const cpu::packed_matrix packed = cpu::pack_matrix({&rows, 1}, in, weight_format::bf16);
  const std::vector<float> w = cpu::unpack_matrix(packed);
  for (int n : {1, 2, 12, 13, 16, 17, 32, 40, 200}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::vector<float> on_grid(n * in);  // whole multiples of 1/8 below 16: 8 bits or fewer
    for (auto& v : on_grid) v = static_cast<float>(static_cast<int>(rng() % 255) - 127) / 8.0f;
    const auto off_grid = random_vector(n * in, 60 + n);
    std::vector<float> want(n * out), got(n * out), float_tiles(n * out), rounded(n * out);
    {
      const scoped_kernel_isa use(cpu::kernel_isa::avx512);
      cpu::linear_packed(on_grid.data(), packed, nullptr, n, want.data());
      cpu::linear_packed(off_grid.data(), packed, nullptr, n, float_tiles.data());
    }
    const scoped_kernel_isa use(isa);
    cpu::linear_packed(on_grid.data(), packed, nullptr, n, got.data());
    cpu::linear_packed(off_grid.data(), packed, nullptr, n, rounded.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        const auto [exact, magnitude] = dot_in_double(&on_grid[i * in], &w[o * in], in);
        ASSERT_NEAR(got[i * out + o], exact, 2e-6 * magnitude + 1e-6)
            << "n " << n << " row " << i << " feature " << o;
        ASSERT_NEAR(want[i * out + o], exact, 2e-6 * magnitude + 1e-6) << "float tiles";
      }
    if (n > 1)
      EXPECT_NE(rounded, float_tiles) << "n " << n;
    else
      EXPECT_EQ(rounded, float_tiles) << "n " << n;
  }
}

TEST(packed_isa, avx512_bf16_is_exact_for_x_on_its_grid) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx512_bf16)) GTEST_SKIP() << "no AVX-512 BF16 here";
  expect_bf16_products_exact_for_x_on_their_grid(cpu::kernel_isa::avx512_bf16, 288);
}

TEST(packed_isa, amx_matches_the_unpacked_weights_within_x_s_rounding) {
  if (!cpu::cpu_runs(cpu::kernel_isa::amx)) GTEST_SKIP() << "no AMX tiles here";
  expect_isa_matches_unpacked(cpu::kernel_isa::amx);
}

// 288 input features: nine steps of the tiles. 290 (not a multiple of 32) leaves the tiles
// for avx512_bf16's pair tiles.
TEST(packed_isa, amx_is_exact_for_x_on_its_grid) {
  if (!cpu::cpu_runs(cpu::kernel_isa::amx)) GTEST_SKIP() << "no AMX tiles here";
  expect_bf16_products_exact_for_x_on_their_grid(cpu::kernel_isa::amx, 288);
  expect_bf16_products_exact_for_x_on_their_grid(cpu::kernel_isa::amx, 290);
}

// Per-channel int8 in batches of 4 rows or more: the codes themselves meet x in the tiles
// (exact in bf16) and each feature's scale the sums once, so with x on bf16's grid the outputs
// are the float products' (the weights rounded to bf16 would be off by up to 2^-9 of them).
// 4, 16, 25, 40 and 100 rows: one tile of rows, a shorter last block; 37 features: a partial
// panel and a lone one.
TEST(packed_isa, amx_per_channel_int8_is_exact_for_x_on_bf16_s_grid) {
  if (!cpu::cpu_runs(cpu::kernel_isa::amx)) GTEST_SKIP() << "no AMX tiles here";
  const scoped_kernel_isa use(cpu::kernel_isa::amx);
  const int64_t out = 37, in = 288;
  const auto w_float = random_vector(out * in, 29);
  const cpu::matrix_rows rows{w_float.data(), weight_format::f32, out};
  const cpu::packed_matrix packed = cpu::pack_matrix({&rows, 1}, in, weight_format::q8);
  ASSERT_TRUE(packed.per_channel_int8());
  const std::vector<float> w = cpu::unpack_matrix(packed);
  const auto bias = random_vector(out, 30);
  for (int n : {4, 16, 25, 32, 40, 100}) {
    std::mt19937 rng(static_cast<uint32_t>(n));
    std::vector<float> x(n * in);  // whole multiples of 1/8 below 16: 8 bits or fewer
    for (auto& v : x) v = static_cast<float>(static_cast<int>(rng() % 255) - 127) / 8.0f;
    std::vector<float> got(n * out);
    cpu::linear_packed(x.data(), packed, bias.data(), n, got.data());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o) {
        const auto [exact, magnitude] = dot_in_double(&x[i * in], &w[o * in], in);
        ASSERT_NEAR(got[i * out + o], exact + bias[o], 2e-6 * magnitude + 1e-6)
            << "n " << n << " row " << i << " feature " << o;
      }
  }
}

// The tiles, not the pair tiles, take a batch where in_features is a multiple of 32: their
// float32 sums come in another order, so some outputs differ in their last bits, within
// bf16's rounding of x of each other.
TEST(packed_isa, amx_tiles_take_the_batches) {
  if (!cpu::cpu_runs(cpu::kernel_isa::amx)) GTEST_SKIP() << "no AMX tiles here";
  const int64_t out = 48, in = 512, n = 32;
  const auto w_float = random_vector(out * in, 19);
  const cpu::matrix_rows rows{w_float.data(), weight_format::f32, out};
  const cpu::packed_matrix packed = cpu::pack_matrix({&rows, 1}, in, weight_format::bf16);
  const auto x = random_vector(n * in, 20);
  std::vector<float> pairs(n * out), tiles(n * out);
  {
    const scoped_kernel_isa use(cpu::kernel_isa::avx512_bf16);
    cpu::linear_packed(x.data(), packed, nullptr, n, pairs.data());
  }
  const scoped_kernel_isa use(cpu::kernel_isa::amx);
  cpu::linear_packed(x.data(), packed, nullptr, n, tiles.data());
  EXPECT_NE(pairs, tiles);
  for (int64_t i = 0; i < n * out; ++i) ASSERT_NEAR(tiles[i], pairs[i], 1e-4) << i;
}

// Every set is named, and its name names it (ACTORLLM_CPU_ISA reads the names).
TEST(packed_isa, every_set_is_found_by_its_name) {
  for (cpu::kernel_isa isa :
       {cpu::kernel_isa::avx2, cpu::kernel_isa::avx2_int8, cpu::kernel_isa::avx512,
        cpu::kernel_isa::avx512_vnni, cpu::kernel_isa::avx512_bf16, cpu::kernel_isa::amx})
    EXPECT_EQ(cpu::kernel_isa_named(cpu::to_string(isa)), isa) << cpu::to_string(isa);
  EXPECT_THROW(cpu::kernel_isa_named("sse2"), std::invalid_argument);
}

// The best set the CPU runs is the default, and a set it lacks is refused by name.
TEST(packed_isa, the_default_is_the_best_set_the_cpu_runs) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx2)) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  EXPECT_EQ(cpu::kernel_isa_in_use(),
            cpu::cpu_runs(cpu::kernel_isa::amx)           ? cpu::kernel_isa::amx
            : cpu::cpu_runs(cpu::kernel_isa::avx512_bf16) ? cpu::kernel_isa::avx512_bf16
            : cpu::cpu_runs(cpu::kernel_isa::avx512_vnni) ? cpu::kernel_isa::avx512_vnni
            : cpu::cpu_runs(cpu::kernel_isa::avx512)      ? cpu::kernel_isa::avx512
                                                          : cpu::kernel_isa::avx2_int8);
  if (!cpu::cpu_runs(cpu::kernel_isa::avx512)) {
    EXPECT_THROW(cpu::set_kernel_isa(cpu::kernel_isa::avx512), std::invalid_argument);
  }
}

}  // namespace
}  // namespace actorllm

// Each CPU op against a slow, obvious reference on random inputs of several shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/attention_item.hpp"
#include "kernels/cpu/ops.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_vectors.hpp"

namespace actorllm {
namespace {

using testing::random_vector;

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1.0f + std::fabs(want[i]))) << "at " << i;
}

TEST(cpu_ops, linear_matches_naive_matmul) {
  for (auto [n, in, out] : {std::tuple{1, 64, 48}, {5, 33, 17}, {32, 128, 96}}) {
    auto x = random_vector(n * in, 1), w = random_vector(out * in, 2), b = random_vector(out, 3);
    std::vector<float> y(n * out), want(n * out);
    cpu::linear(x.data(), w.data(), b.data(), n, in, out, y.data());
    for (int i = 0; i < n; ++i)
      for (int o = 0; o < out; ++o) {
        double acc = b[o];
        for (int k = 0; k < in; ++k) acc += double(x[i * in + k]) * w[o * in + k];
        want[i * out + o] = static_cast<float>(acc);
      }
    expect_near_all(y, want, 1e-4f);
  }
}

TEST(cpu_ops, rms_norm_and_fused_add) {
  const int n = 7, dim = 96;
  auto x = random_vector(n * dim, 4), w = random_vector(dim, 5), r = random_vector(n * dim, 6);
  std::vector<float> out(n * dim), want(n * dim), want_res(n * dim);
  cpu::rms_norm(x.data(), w.data(), n, dim, 1e-5f, out.data());
  for (int i = 0; i < n; ++i) {
    double ss = 0, ss2 = 0;
    for (int j = 0; j < dim; ++j) {
      ss += double(x[i * dim + j]) * x[i * dim + j];
      want_res[i * dim + j] = x[i * dim + j] + r[i * dim + j];
      ss2 += double(want_res[i * dim + j]) * want_res[i * dim + j];
    }
    for (int j = 0; j < dim; ++j) {
      want[i * dim + j] = float(x[i * dim + j] / std::sqrt(ss / dim + 1e-5) * w[j]);
    }
    for (int j = 0; j < dim; ++j)
      x[i * dim + j] = float(want_res[i * dim + j] / std::sqrt(ss2 / dim + 1e-5) * w[j]);
  }
  expect_near_all(out, want, 1e-5f);
  auto fused_x = random_vector(n * dim, 4);  // same x as above
  cpu::fused_add_rms_norm(fused_x.data(), r.data(), w.data(), n, dim, 1e-5f);
  expect_near_all(r, want_res, 1e-6f);
  expect_near_all(fused_x, x, 1e-5f);
}

TEST(cpu_ops, silu_and_mul) {
  // Gates of a few units and of ±100 (where e^-g overflows a float); 50 is no multiple of 8.
  const int n = 3, hidden = 50;
  for (float range : {4.0f, 100.0f}) {
    auto gu = random_vector(n * 2 * hidden, 7, range);
    std::vector<float> out(n * hidden), want(n * hidden);
    cpu::silu_and_mul(gu.data(), n, hidden, out.data());
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < hidden; ++j) {
        const double g = gu[i * 2 * hidden + j], u = gu[i * 2 * hidden + hidden + j];
        want[i * hidden + j] = float(g / (1 + std::exp(-g)) * u);
      }
    expect_near_all(out, want, 1e-5f);
  }
}

TEST(cpu_ops, log_softmax_matches_a_double_reference) {
  // Logits of a few units, and of ±100 where exp(x) alone over- or underflows a float; a vocab
  // of 100 and one of 1 (whose only log-probability is 0).
  for (auto [n, vocab, range] : {std::tuple{2, 100, 10.0f}, {3, 100, 100.0f}, {2, 1, 5.0f}}) {
    auto logits = random_vector(n * vocab, 8, range);
    logits[vocab / 2] += 50.0f;  // one clear favourite in the first row
    std::vector<float> lp(n * vocab), want(n * vocab);
    cpu::log_softmax(logits.data(), n, vocab, lp.data());
    for (int i = 0; i < n; ++i) {
      const float* row = logits.data() + i * vocab;
      double mx = row[0];
      for (int j = 1; j < vocab; ++j) mx = std::max(mx, double(row[j]));
      double sum = 0;
      for (int j = 0; j < vocab; ++j) sum += std::exp(double(row[j]) - mx);
      for (int j = 0; j < vocab; ++j) want[i * vocab + j] = float(row[j] - mx - std::log(sum));
    }
    expect_near_all(lp, want, 1e-5f);
  }
}

/// Rotates pairs (a, b) of the first `rot` dims of each of `heads` vectors of head_dim per
/// token, by position * 10000^(-2i/rot), the obvious way in double; the other dims stay.
std::vector<float> naive_rotary(std::vector<float> x, const std::vector<int32_t>& positions,
                                int heads, int head_dim, int rot, bool neox) {
  for (size_t t = 0; t < positions.size(); ++t)
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < rot / 2; ++i) {
        float* v = x.data() + (t * heads + h) * head_dim;
        const int a = neox ? i : 2 * i, b = neox ? i + rot / 2 : 2 * i + 1;
        const double angle = positions[t] * std::pow(10000.0, -2.0 * i / rot);
        const double re = v[a] * std::cos(angle) - v[b] * std::sin(angle);
        const double im = v[b] * std::cos(angle) + v[a] * std::sin(angle);
        v[a] = float(re), v[b] = float(im);
      }
  return x;
}

TEST(cpu_ops, rotary_neox_and_gptj_match_complex_rotation) {
  // q and k of different head counts (grouped-query attention), whole and partial rotation.
  const int n = 4, heads = 3, kv_heads = 2, head_dim = 8, max_pos = 64;
  const std::vector<int32_t> positions{0, 5, 17, 63};
  for (int rot : {8, 4}) {
    std::vector<float> cos_sin(max_pos * rot);
    for (int p = 0; p < max_pos; ++p)
      for (int i = 0; i < rot / 2; ++i) {
        const double angle = p * std::pow(10000.0, -2.0 * i / rot);
        cos_sin[p * rot + i] = float(std::cos(angle));
        cos_sin[p * rot + rot / 2 + i] = float(std::sin(angle));
      }
    for (bool neox : {true, false}) {
      auto q = random_vector(n * heads * head_dim, 9),
           k = random_vector(n * kv_heads * head_dim, 10);
      const auto want_q = naive_rotary(q, positions, heads, head_dim, rot, neox);
      const auto want_k = naive_rotary(k, positions, kv_heads, head_dim, rot, neox);
      cpu::rotary_embedding(positions.data(), q.data(), k.data(), n, heads, kv_heads, head_dim,
                            cos_sin.data(), rot, neox);
      SCOPED_TRACE(::testing::Message() << "rot " << rot << (neox ? " neox" : " gptj"));
      expect_near_all(q, want_q, 1e-5f);
      expect_near_all(k, want_k, 1e-5f);
    }
  }
}

/// A paged-attention case: four sequences (a one-token prefill, a 37-token prefill, a chunk of
/// 5 after 11 cached tokens, and a decode at position 69) over a shuffled block layout, with
/// NaN in every cache slot no sequence has written, as a fresh pool may hold.
struct attention_shape {
  int heads, kv_heads, head_dim, block_size;
};

class paged_attention_test : public ::testing::TestWithParam<attention_shape> {
 protected:
  void SetUp() override {
    const auto [heads, kv_heads, head_dim, block_size] = GetParam();
    for (int s = 0; s < num_seqs; ++s) qsl.push_back(qsl.back() + q_lens[s]);
    max_blocks = (70 + block_size - 1) / block_size;
    tables.resize(num_seqs * max_blocks);
    std::iota(tables.begin(), tables.end(), 0);
    std::shuffle(tables.begin(), tables.end(), std::mt19937(11));
    block_elems = kv_heads * block_size * head_dim;
    kc = random_vector(tables.size() * block_elems, 12);
    vc = random_vector(tables.size() * block_elems, 13);
    for (int s = 0; s < num_seqs; ++s)
      for (int pos = seq_lens[s]; pos < max_blocks * block_size; ++pos)
        for (int h = 0; h < kv_heads; ++h)
          for (int d = 0; d < head_dim; ++d)
            kc[slot(s, pos, h) + d] = vc[slot(s, pos, h) + d] = NAN;
    q = random_vector(qsl.back() * heads * head_dim, 14);
  }

  int slot(int s, int pos, int kv_head) const {
    const int block_size = GetParam().block_size, head_dim = GetParam().head_dim;
    return tables[s * max_blocks + pos / block_size] * block_elems +
           (kv_head * block_size + pos % block_size) * head_dim;
  }

  /// softmax(q k^T * scale) v in double, over the cache values as `k`, `v` hold them.
  std::vector<float> reference(const std::vector<float>& k, const std::vector<float>& v) const {
    const auto [heads, kv_heads, head_dim, block_size] = GetParam();
    std::vector<float> want(q.size());
    for (int s = 0; s < num_seqs; ++s)
      for (int j = 0; j < q_lens[s]; ++j) {
        const int t = qsl[s] + j, pos = seq_lens[s] - q_lens[s] + j;
        for (int h = 0; h < heads; ++h) {
          const int kvh = h / (heads / kv_heads);
          std::vector<double> sc(pos + 1);
          double mx = -1e30, sum = 0;
          for (int key = 0; key <= pos; ++key) {
            double dot = 0;
            for (int d = 0; d < head_dim; ++d)
              dot += q[(t * heads + h) * head_dim + d] * k[slot(s, key, kvh) + d];
            sc[key] = dot * scale;
            mx = std::max(mx, sc[key]);
          }
          for (auto& x : sc) sum += (x = std::exp(x - mx));
          for (int d = 0; d < head_dim; ++d) {
            double acc = 0;
            for (int key = 0; key <= pos; ++key) acc += sc[key] / sum * v[slot(s, key, kvh) + d];
            want[(t * heads + h) * head_dim + d] = float(acc);
          }
        }
      }
    return want;
  }

  template <class T>
  std::vector<float> run(const std::vector<T>& k, const std::vector<T>& v) const {
    const auto [heads, kv_heads, head_dim, block_size] = GetParam();
    const cpu::paged_batch batch{qsl.data(), seq_lens.data(), tables.data(), num_seqs, max_blocks};
    std::vector<float> out(q.size(), NAN);
    cpu::paged_attention(q.data(), k.data(), v.data(), batch, heads, kv_heads, head_dim, block_size,
                         scale, out.data());
    return out;
  }

  static constexpr int num_seqs = 4;
  static constexpr float scale = 0.25f;
  const std::vector<int32_t> seq_lens{1, 37, 16, 70}, q_lens{1, 37, 5, 1};
  std::vector<int32_t> qsl{0}, tables;
  int max_blocks = 0, block_elems = 0;
  std::vector<float> kc, vc, q;
};

TEST_P(paged_attention_test, matches_a_double_reference) {
  expect_near_all(run(kc, vc), reference(kc, vc), 1e-5f);
}

TEST_P(paged_attention_test, the_portable_kernel_matches_the_reference_too) {
  const auto [heads, kv_heads, head_dim, block_size] = GetParam();
  const int group = heads / kv_heads;
  std::vector<float> out(q.size(), NAN), scratch(group * 72);
  for (int s = 0; s < num_seqs; ++s)
    for (int t = qsl[s]; t < qsl[s + 1]; ++t)
      for (int h = 0; h < kv_heads; ++h) {
        const cpu::detail::attention_item item{
            .query = q.data() + (t * heads + h * group) * head_dim,
            .out = out.data() + (t * heads + h * group) * head_dim,
            .blocks = tables.data() + s * max_blocks,
            .visible = seq_lens[s] - (qsl[s + 1] - t) + 1,
            .group = group,
            .head_dim = head_dim,
            .block_size = block_size,
            .block_elems = block_elems,
            .head_offset = h * block_size * head_dim,
            .scale = scale,
        };
        cpu::detail::attend_portable(item, kc.data(), vc.data(), scratch.data());
      }
  expect_near_all(out, reference(kc, vc), 1e-5f);
}

TEST_P(paged_attention_test, a_float16_cache_matches_float32_over_the_rounded_values) {
  std::vector<cpu::half> kh(kc.size()), vh(vc.size());
  std::vector<float> kr(kc.size()), vr(vc.size());
  for (size_t i = 0; i < kc.size(); ++i) {
    kh[i] = static_cast<cpu::half>(kc[i]), kr[i] = static_cast<float>(kh[i]);
    vh[i] = static_cast<cpu::half>(vc[i]), vr[i] = static_cast<float>(vh[i]);
  }
  const auto got = run(kh, vh);
  expect_near_all(got, run(kr, vr), 1e-6f);
  expect_near_all(got, reference(kc, vc), 2e-3f);
}

TEST_P(paged_attention_test, a_float8_cache_matches_float32_over_the_rounded_values) {
  std::vector<cpu::float8_e4m3> k8(kc.size()), v8(vc.size());
  std::vector<float> kr(kc.size()), vr(vc.size());
  for (size_t i = 0; i < kc.size(); ++i) {
    k8[i] = cpu::float8_e4m3(kc[i]), kr[i] = static_cast<float>(k8[i]);
    v8[i] = cpu::float8_e4m3(vc[i]), vr[i] = static_cast<float>(v8[i]);
  }
  const auto got = run(k8, v8);
  expect_near_all(got, run(kr, vr), 1e-6f);
  // Three mantissa bits: values within 1/16 of themselves, outputs within a few hundredths.
  expect_near_all(got, reference(kc, vc), 5e-2f);
}

// Every instruction set the CPU runs, over float32, float16 and float8 caches: each matches
// the reference (the default set is the best one, so the others are checked here).
TEST_P(paged_attention_test, each_instruction_set_matches_the_reference) {
  std::vector<cpu::half> kh(kc.size()), vh(vc.size());
  std::vector<cpu::float8_e4m3> k8(kc.size()), v8(vc.size());
  std::vector<float> kr(kc.size()), vr(vc.size()), k8r(kc.size()), v8r(vc.size());
  for (size_t i = 0; i < kc.size(); ++i) {
    kh[i] = static_cast<cpu::half>(kc[i]), kr[i] = static_cast<float>(kh[i]);
    vh[i] = static_cast<cpu::half>(vc[i]), vr[i] = static_cast<float>(vh[i]);
    k8[i] = cpu::float8_e4m3(kc[i]), k8r[i] = static_cast<float>(k8[i]);
    v8[i] = cpu::float8_e4m3(vc[i]), v8r[i] = static_cast<float>(v8[i]);
  }
  for (cpu::kernel_isa isa : {cpu::kernel_isa::avx2, cpu::kernel_isa::avx512}) {
    if (!cpu::cpu_runs(isa)) continue;
    SCOPED_TRACE(cpu::to_string(isa));
    const testing::scoped_kernel_isa use(isa);
    expect_near_all(run(kc, vc), reference(kc, vc), 1e-5f);
    expect_near_all(run(kh, vh), reference(kr, vr), 1e-5f);
    expect_near_all(run(k8, v8), reference(k8r, v8r), 1e-5f);
  }
}

// head_dim 8 (stories260K), 16, 32 and 64 with block sizes that are multiples of 8 take the
// AVX2 kernel where the CPU has it, and those of 16, 32 and 64 the AVX-512 one where it has
// that; head_dim 12 or block size 12 take the portable one.
INSTANTIATE_TEST_SUITE_P(
    cpu_ops, paged_attention_test,
    ::testing::Values(attention_shape{8, 2, 16, 16}, attention_shape{8, 4, 8, 16},
                      attention_shape{4, 4, 64, 16}, attention_shape{8, 1, 32, 8},
                      attention_shape{4, 2, 128, 16}, attention_shape{4, 2, 48, 8},
                      attention_shape{8, 2, 12, 16}, attention_shape{8, 2, 16, 12}));

TEST(cpu_ops, reshape_and_cache_into_float16_rounds_each_value) {
  // Rows of 8 and 64 are whole vectors of eight; 12 and 20 end on values one at a time.
  for (const int head_dim : {8, 12, 20, 64}) {
    const int kv_heads = 2, block_size = 4, num_blocks = 2;
    const int block_elems = kv_heads * block_size * head_dim;
    std::vector<cpu::half> kc(num_blocks * block_elems, cpu::half(0)),
        vc(num_blocks * block_elems, cpu::half(0));
    auto key = random_vector(kv_heads * head_dim, 21),
         value = random_vector(kv_heads * head_dim, 22);
    key[1] = 1.0f + 1.0f / 2048;          // a tie between two halves: to the even one, 1.0
    key[2] = 1.0f + 3.0f / 2048;          // the other tie: up to the even one
    key[3] = 70000.0f;                    // past the largest half: infinity
    key[4] = -std::nanf("");              // stays NaN
    value[5] = 1e-6f;                     // a subnormal half
    value[head_dim + 7] = 65519.0f;       // rounds down to 65504, the largest half
    const std::vector<int64_t> slots{6};  // block 1, offset 2
    cpu::reshape_and_cache(key.data(), value.data(), kc.data(), vc.data(), slots.data(), 1,
                           kv_heads, head_dim, block_size);
    for (int h = 0; h < kv_heads; ++h)
      for (int d = 0; d < head_dim; ++d) {
        const int at = block_elems + (h * block_size + 2) * head_dim + d;
        const cpu::half k = static_cast<cpu::half>(key[h * head_dim + d]);
        if (k != k) {
          EXPECT_TRUE(kc[at] != kc[at]) << head_dim << " " << d;
        } else {
          EXPECT_EQ(kc[at], k) << head_dim << " " << d;
        }
        EXPECT_EQ(vc[at], static_cast<cpu::half>(value[h * head_dim + d])) << head_dim << " " << d;
      }
    const int row = block_elems + 2 * head_dim;
    EXPECT_EQ(static_cast<float>(kc[row + 1]), 1.0f);
    EXPECT_EQ(static_cast<float>(kc[row + 2]), 1.0f + 4.0f / 2048);
    EXPECT_TRUE(std::isinf(static_cast<float>(kc[row + 3])));
    EXPECT_EQ(static_cast<float>(vc[block_elems + (block_size + 2) * head_dim + 7]), 65504.0f);
    EXPECT_EQ(kc[0], cpu::half(0));  // nothing written outside the slot
  }
}

TEST(cpu_ops, reshape_and_cache_into_float8_rounds_each_value) {
  const int kv_heads = 2, head_dim = 8, block_size = 4, num_blocks = 2;
  const int block_elems = kv_heads * block_size * head_dim;
  std::vector<cpu::float8_e4m3> kc(num_blocks * block_elems), vc(num_blocks * block_elems);
  auto key = random_vector(kv_heads * head_dim, 23), value = random_vector(kv_heads * head_dim, 24);
  key[0] = 1000.0f;                     // saturates
  value[1] = -3e-3f;                    // a subnormal: 1.54 steps of 2^-9, rounded to 2
  const std::vector<int64_t> slots{6};  // block 1, offset 2
  cpu::reshape_and_cache(key.data(), value.data(), kc.data(), vc.data(), slots.data(), 1, kv_heads,
                         head_dim, block_size);
  for (int h = 0; h < kv_heads; ++h)
    for (int d = 0; d < head_dim; ++d) {
      const int at = block_elems + (h * block_size + 2) * head_dim + d;
      EXPECT_EQ(kc[at].bits, cpu::float8_e4m3(key[h * head_dim + d]).bits);
      EXPECT_EQ(vc[at].bits, cpu::float8_e4m3(value[h * head_dim + d]).bits);
    }
  EXPECT_EQ(static_cast<float>(kc[block_elems + 2 * head_dim]), 448.0f);
  EXPECT_EQ(static_cast<float>(vc[block_elems + 2 * head_dim + 1]), -2.0f / 512.0f);
}

// Every float8 E4M3FN code against the format's definition, and the rounding into it.
TEST(float8_e4m3, every_code_decodes_by_the_definition_and_encodes_back) {
  for (int code = 0; code < 256; ++code) {
    const int sign = code >> 7, exponent = (code >> 3) & 15, mantissa = code & 7;
    const float got = cpu::float8_e4m3::decode(static_cast<uint8_t>(code));
    if (exponent == 15 && mantissa == 7) {
      EXPECT_TRUE(std::isnan(got)) << code;
      continue;
    }
    const double magnitude = exponent == 0 ? std::ldexp(mantissa / 8.0, -6)
                                           : std::ldexp(1.0 + mantissa / 8.0, exponent - 7);
    EXPECT_EQ(got, static_cast<float>(sign ? -magnitude : magnitude)) << code;
    EXPECT_EQ(cpu::float8_e4m3(got).bits, code) << code;
  }
  EXPECT_EQ(cpu::float8_e4m3(-0.0f).bits, 0x80);
}

TEST(float8_e4m3, rounds_to_nearest_even_and_saturates) {
  // Neighbours 1.0 (0x38) and 1.125 (0x39): their midpoint goes to the even code, 1.0.
  EXPECT_EQ(cpu::float8_e4m3(1.0625f).bits, 0x38);
  EXPECT_EQ(cpu::float8_e4m3(1.0626f).bits, 0x39);
  // 1.125 (0x39) and 1.25 (0x3a): the midpoint goes to 1.25, and a carry moves the exponent.
  EXPECT_EQ(cpu::float8_e4m3(1.1875f).bits, 0x3a);
  EXPECT_EQ(cpu::float8_e4m3(1.96875f).bits, 0x40);  // 1.875 | 2.0 -> 2.0
  // Subnormals, steps of 2^-9: 1.5 steps rounds to 2, 2.5 to 2, the largest to the first normal.
  EXPECT_EQ(cpu::float8_e4m3(1.5f / 512).bits, 0x02);
  EXPECT_EQ(cpu::float8_e4m3(2.5f / 512).bits, 0x02);
  EXPECT_EQ(cpu::float8_e4m3(7.9f / 512).bits, 0x08);
  EXPECT_EQ(cpu::float8_e4m3(0.1f / 512).bits, 0x00);
  // Beyond the largest finite value, 448: saturated, infinities included; NaN stays NaN.
  EXPECT_EQ(cpu::float8_e4m3(447.0f).bits, 0x7e);
  EXPECT_EQ(cpu::float8_e4m3(1e9f).bits, 0x7e);
  EXPECT_EQ(cpu::float8_e4m3(-INFINITY).bits, 0xfe);
  EXPECT_EQ(cpu::float8_e4m3(NAN).bits & 0x7f, 0x7f);
}

TEST(cpu_ops, reshape_and_cache_then_copy_and_swap_blocks) {
  const int kv_heads = 2, head_dim = 4, block_size = 4, num_blocks = 3;
  const int block_elems = kv_heads * block_size * head_dim;
  std::vector<float> kc(num_blocks * block_elems, 0), vc(num_blocks * block_elems, 0);
  auto key = random_vector(3 * kv_heads * head_dim, 15),
       value = random_vector(3 * kv_heads * head_dim, 16);
  const std::vector<int64_t> slots{5, -1, 11};
  cpu::reshape_and_cache(key.data(), value.data(), kc.data(), vc.data(), slots.data(), 3, kv_heads,
                         head_dim, block_size);
  for (int h = 0; h < kv_heads; ++h)
    for (int d = 0; d < head_dim; ++d) {
      EXPECT_EQ(kc[1 * block_elems + (h * block_size + 1) * head_dim + d], key[h * head_dim + d]);
      EXPECT_EQ(vc[2 * block_elems + (h * block_size + 3) * head_dim + d],
                value[(2 * kv_heads + h) * head_dim + d]);
    }
  const int64_t block_bytes = block_elems * sizeof(float);
  cpu::copy_blocks({kc.data()}, {vc.data()}, {{1, 0}}, block_bytes);
  EXPECT_TRUE(std::equal(kc.begin(), kc.begin() + block_elems, kc.begin() + block_elems));
  std::vector<float> host(2 * block_elems, 0);
  cpu::swap_blocks(vc.data(), host.data(), {{2, 1}}, block_bytes);
  EXPECT_TRUE(std::equal(host.begin() + block_elems, host.end(), vc.begin() + 2 * block_elems));
}

}  // namespace
}  // namespace actorllm

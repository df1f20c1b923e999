// Each CPU op against a slow, obvious reference on random inputs of several shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/cpu/ops.hpp"

namespace actorllm {
namespace {

std::vector<float> random_vector(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

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

TEST(cpu_ops, silu_and_mul_and_log_softmax) {
  const int n = 3, hidden = 50;
  auto gu = random_vector(n * 2 * hidden, 7, 4.0f);
  std::vector<float> out(n * hidden), want(n * hidden);
  cpu::silu_and_mul(gu.data(), n, hidden, out.data());
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < hidden; ++j) {
      const double g = gu[i * 2 * hidden + j], u = gu[i * 2 * hidden + hidden + j];
      want[i * hidden + j] = float(g / (1 + std::exp(-g)) * u);
    }
  expect_near_all(out, want, 1e-5f);

  auto logits = random_vector(2 * 100, 8, 10.0f);
  std::vector<float> lp(200);
  cpu::log_softmax(logits.data(), 2, 100, lp.data());
  for (int i = 0; i < 2; ++i) {
    double total = 0;
    for (int j = 0; j < 100; ++j) total += std::exp(double(lp[i * 100 + j]));
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
}

TEST(cpu_ops, rotary_neox_and_gptj_match_complex_rotation) {
  const int n = 4, heads = 3, kv_heads = 1, head_dim = 8, rot = 8, max_pos = 64;
  std::vector<float> cos_sin(max_pos * rot);
  for (int p = 0; p < max_pos; ++p)
    for (int i = 0; i < rot / 2; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * i / rot);
      cos_sin[p * rot + i] = float(std::cos(angle));
      cos_sin[p * rot + rot / 2 + i] = float(std::sin(angle));
    }
  const std::vector<int32_t> positions{0, 5, 17, 63};
  for (bool neox : {true, false}) {
    auto q = random_vector(n * heads * head_dim, 9), k = random_vector(n * kv_heads * head_dim, 10);
    auto want_q = q;
    for (int t = 0; t < n; ++t)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < rot / 2; ++i) {
          float* v = want_q.data() + (t * heads + h) * head_dim;
          const int a = neox ? i : 2 * i, b = neox ? i + rot / 2 : 2 * i + 1;
          const double angle = positions[t] * std::pow(10000.0, -2.0 * i / rot);
          const double re = v[a] * std::cos(angle) - v[b] * std::sin(angle);
          const double im = v[b] * std::cos(angle) + v[a] * std::sin(angle);
          v[a] = float(re), v[b] = float(im);
        }
    cpu::rotary_embedding(positions.data(), q.data(), k.data(), n, heads, kv_heads, head_dim,
                          cos_sin.data(), rot, neox);
    expect_near_all(q, want_q, 1e-5f);
  }
}

/// Reference attention over contiguous K/V, then the paged op over a shuffled block layout.
/// head_dim 16 takes the vectorized float16 rows, 12 the scalar ones.
class paged_attention_test : public ::testing::TestWithParam<int> {};

TEST_P(paged_attention_test, matches_contiguous_reference) {
  const int heads = 8, kv_heads = 2, head_dim = GetParam(), block_size = 16;
  const std::vector<int32_t> seq_lens{1, 37, 16, 70},
      q_lens{1, 37, 5, 1};  // prefill, chunk, decode
  const int num_seqs = 4, max_blocks = 5, num_blocks = num_seqs * max_blocks;
  std::vector<int32_t> tables(num_seqs * max_blocks);
  std::iota(tables.begin(), tables.end(), 0);
  std::shuffle(tables.begin(), tables.end(), std::mt19937(11));
  std::vector<int32_t> qsl{0};
  for (int s = 0; s < num_seqs; ++s) qsl.push_back(qsl.back() + q_lens[s]);
  const int tokens = qsl.back();
  const int block_elems = kv_heads * block_size * head_dim;
  auto kc = random_vector(num_blocks * block_elems, 12),
       vc = random_vector(num_blocks * block_elems, 13);
  auto q = random_vector(tokens * heads * head_dim, 14);
  std::vector<float> out(tokens * heads * head_dim, NAN), want(out.size());
  const float scale = 0.25f;
  auto slot = [&](int s, int pos, int h) {
    return tables[s * max_blocks + pos / block_size] * block_elems +
           (h * block_size + pos % block_size) * head_dim;
  };
  for (int s = 0; s < num_seqs; ++s)
    for (int j = 0; j < q_lens[s]; ++j) {
      const int t = qsl[s] + j, pos = seq_lens[s] - q_lens[s] + j;
      for (int h = 0; h < heads; ++h) {
        const int kvh = h / (heads / kv_heads);
        std::vector<double> sc(pos + 1);
        double mx = -1e30, sum = 0;
        for (int k = 0; k <= pos; ++k) {
          double dot = 0;
          for (int d = 0; d < head_dim; ++d)
            dot += q[(t * heads + h) * head_dim + d] * kc[slot(s, k, kvh) + d];
          sc[k] = dot * scale;
          mx = std::max(mx, sc[k]);
        }
        for (auto& x : sc) sum += (x = std::exp(x - mx));
        for (int d = 0; d < head_dim; ++d) {
          double acc = 0;
          for (int k = 0; k <= pos; ++k) acc += sc[k] / sum * vc[slot(s, k, kvh) + d];
          want[(t * heads + h) * head_dim + d] = float(acc);
        }
      }
    }
  const cpu::paged_batch batch{qsl.data(), seq_lens.data(), tables.data(), num_seqs, max_blocks};
  cpu::paged_attention(q.data(), kc.data(), vc.data(), batch, heads, kv_heads, head_dim, block_size,
                       scale, out.data());
  expect_near_all(out, want, 1e-5f);

  // A float16 cache: the same as the float32 kernel over the same values rounded to half.
  std::vector<cpu::half> kh(kc.size()), vh(vc.size());
  std::vector<float> kr(kc.size()), vr(vc.size());
  for (size_t i = 0; i < kc.size(); ++i) {
    kh[i] = static_cast<cpu::half>(kc[i]), kr[i] = static_cast<float>(kh[i]);
    vh[i] = static_cast<cpu::half>(vc[i]), vr[i] = static_cast<float>(vh[i]);
  }
  std::vector<float> out_half(out.size(), NAN), want_rounded(out.size());
  cpu::paged_attention(q.data(), kh.data(), vh.data(), batch, heads, kv_heads, head_dim, block_size,
                       scale, out_half.data());
  cpu::paged_attention(q.data(), kr.data(), vr.data(), batch, heads, kv_heads, head_dim, block_size,
                       scale, want_rounded.data());
  expect_near_all(out_half, want_rounded, 1e-6f);
  expect_near_all(out_half, want, 2e-3f);
}

INSTANTIATE_TEST_SUITE_P(cpu_ops, paged_attention_test, ::testing::Values(16, 12));

TEST(cpu_ops, reshape_and_cache_into_float16_rounds_each_value) {
  const int kv_heads = 2, head_dim = 8, block_size = 4, num_blocks = 2;
  const int block_elems = kv_heads * block_size * head_dim;
  std::vector<cpu::half> kc(num_blocks * block_elems, cpu::half(0)),
      vc(num_blocks * block_elems, cpu::half(0));
  auto key = random_vector(kv_heads * head_dim, 21), value = random_vector(kv_heads * head_dim, 22);
  const std::vector<int64_t> slots{6};  // block 1, offset 2
  cpu::reshape_and_cache(key.data(), value.data(), kc.data(), vc.data(), slots.data(), 1, kv_heads,
                         head_dim, block_size);
  for (int h = 0; h < kv_heads; ++h)
    for (int d = 0; d < head_dim; ++d) {
      const int at = block_elems + (h * block_size + 2) * head_dim + d;
      EXPECT_EQ(kc[at], static_cast<cpu::half>(key[h * head_dim + d]));
      EXPECT_EQ(vc[at], static_cast<cpu::half>(value[h * head_dim + d]));
    }
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

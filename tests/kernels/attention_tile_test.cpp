// Prefill chunks through the tile kernels (attention_tile_avx512.cpp, attention_tile_avx2.cpp;
// each instruction set the CPU runs): chunks with and without earlier context, beside decode
// tokens in one batch, with sliding windows, soft-capping and spans seen both ways, against a
// double reference. A group wider than a tile's sixteen lanes takes the one-query kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_vectors.hpp"

namespace actorllm {
namespace {

using testing::random_vector;

struct tile_case {
  int heads, kv_heads, head_dim, block_size;
  int sliding_window = 0;
  float softcap = 0.0f;
  bool spans = false;
};

class attention_tile_test : public ::testing::TestWithParam<tile_case> {
 protected:
  void SetUp() override {
    const tile_case& c = GetParam();
    for (int s = 0; s < num_seqs; ++s) qsl.push_back(qsl.back() + q_lens[s]);
    max_blocks = (seq_lens[0] + c.block_size - 1) / c.block_size;
    tables.resize(num_seqs * max_blocks);
    std::iota(tables.begin(), tables.end(), 0);
    std::shuffle(tables.begin(), tables.end(), std::mt19937(21));
    block_elems = c.kv_heads * c.block_size * c.head_dim;
    kc = random_vector(tables.size() * block_elems, 22);
    vc = random_vector(tables.size() * block_elems, 23);
    for (int s = 0; s < num_seqs; ++s)  // slots past each sequence: never read
      for (int pos = seq_lens[s]; pos < max_blocks * c.block_size; ++pos)
        for (int h = 0; h < c.kv_heads; ++h)
          std::fill_n(kc.begin() + slot(s, pos, h), c.head_dim, NAN),
              std::fill_n(vc.begin() + slot(s, pos, h), c.head_dim, NAN);
    q = random_vector(qsl.back() * c.heads * c.head_dim, 24);
    for (float& x : q) x *= 3.0f;  // scores large enough for the cap to bend them
    spans.assign(2 * qsl.back(), 0);
    if (c.spans)  // the whole prompt's tokens 10..19 see keys 10..24, past themselves
      for (int t = qsl[1] + 10; t < qsl[1] + 20; ++t) spans[2 * t] = 10, spans[2 * t + 1] = 25;
  }

  int slot(int s, int pos, int kv_head) const {
    const tile_case& c = GetParam();
    return tables[s * max_blocks + pos / c.block_size] * block_elems +
           (kv_head * c.block_size + pos % c.block_size) * c.head_dim;
  }

  /// softmax over the keys each query sees, in double, one query head at a time.
  std::vector<float> reference() const {
    const tile_case& c = GetParam();
    std::vector<float> want(q.size());
    for (int s = 0; s < num_seqs; ++s)
      for (int j = 0; j < q_lens[s]; ++j) {
        const int t = qsl[s] + j, pos = seq_lens[s] - q_lens[s] + j;
        int first = c.sliding_window > 0 ? std::max(0, pos + 1 - c.sliding_window) : 0;
        int end = pos + 1;
        if (spans[2 * t + 1] > spans[2 * t])
          first = std::min(first, spans[2 * t]), end = std::max(end, spans[2 * t + 1]);
        for (int h = 0; h < c.heads; ++h) {
          const int kvh = h / (c.heads / c.kv_heads);
          std::vector<double> score(end, 0.0);
          double best = -1e300, sum = 0;
          for (int key = first; key < end; ++key) {
            double dot = 0;
            for (int d = 0; d < c.head_dim; ++d)
              dot += q[(t * c.heads + h) * c.head_dim + d] * kc[slot(s, key, kvh) + d];
            score[key] = dot * scale;
            if (c.softcap > 0) score[key] = c.softcap * std::tanh(score[key] / c.softcap);
            best = std::max(best, score[key]);
          }
          for (int key = first; key < end; ++key) sum += score[key] = std::exp(score[key] - best);
          for (int d = 0; d < c.head_dim; ++d) {
            double acc = 0;
            for (int key = first; key < end; ++key)
              acc += score[key] / sum * vc[slot(s, key, kvh) + d];
            want[(t * c.heads + h) * c.head_dim + d] = static_cast<float>(acc);
          }
        }
      }
    return want;
  }

  std::vector<float> run() const {
    const tile_case& c = GetParam();
    const cpu::paged_batch batch{qsl.data(), seq_lens.data(), tables.data(),
                                 num_seqs,   max_blocks,      spans.data()};
    std::vector<float> out(q.size(), NAN);
    cpu::paged_attention(q.data(), kc.data(), vc.data(), batch, c.heads, c.kv_heads, c.head_dim,
                         c.block_size, {scale, c.sliding_window, c.softcap}, out.data());
    return out;
  }

  static constexpr int num_seqs = 4;
  static constexpr float scale = 0.125f;
  // A chunk after 50 tokens of context, a whole prompt, a decode token, a prompt of 9.
  const std::vector<int32_t> seq_lens{70, 37, 40, 9}, q_lens{20, 37, 1, 9};
  std::vector<int32_t> qsl{0}, tables, spans;
  int max_blocks = 0, block_elems = 0;
  std::vector<float> kc, vc, q;
};

void expect_all_within(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST_P(attention_tile_test, matches_a_double_reference_with_every_instruction_set) {
  const auto want = reference();
  for (cpu::kernel_isa isa : {cpu::kernel_isa::avx2, cpu::kernel_isa::avx512}) {
    if (!cpu::cpu_runs(isa)) continue;
    SCOPED_TRACE(cpu::to_string(isa));
    const testing::scoped_kernel_isa use(isa);
    expect_all_within(run(), want, 2e-5f);
  }
}

// Groups of 1, 2 and 4 query heads fill the sixteen lanes with 16, 8 and 4 tokens; a group of
// 3 leaves a lane empty (five tokens); a group of 24 does not fit and takes the one-query kernel.
INSTANTIATE_TEST_SUITE_P(
    cpu_ops, attention_tile_test,
    ::testing::Values(tile_case{4, 4, 64, 16}, tile_case{8, 4, 32, 8}, tile_case{8, 2, 16, 16},
                      tile_case{6, 2, 48, 16}, tile_case{24, 1, 16, 8}, tile_case{4, 4, 64, 16, 7},
                      tile_case{8, 2, 32, 16, 0, 5.0f}, tile_case{4, 2, 64, 8, 12, 0.0f, true},
                      tile_case{4, 4, 16, 16, 0, 0, true}),
    [](const ::testing::TestParamInfo<tile_case>& info) {
      const tile_case& c = info.param;
      return "heads" + std::to_string(c.heads) + "_kv" + std::to_string(c.kv_heads) + "_dim" +
             std::to_string(c.head_dim) + "_block" + std::to_string(c.block_size) +
             (c.sliding_window ? "_window" + std::to_string(c.sliding_window) : "") +
             (c.softcap > 0 ? "_softcap" : "") + (c.spans ? "_spans" : "");
    });

}  // namespace
}  // namespace actorllm

// The packed GEMM against a naive loop: every tile height (1..6 rows and the remainders of
// a row block), a partial last panel (alone or second of a wide tile's two), several depth
// blocks, with and without bias, on one thread and on a team.
#include "kernels/cpu/packed_linear.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/packed_tiles.hpp"
#include "tests/support/random_vectors.hpp"

namespace actorllm {
namespace {

using testing::random_vector;

TEST(packed_linear, row_tiles_split_the_next_blocks_requests_and_cover_it) {
  for (int64_t rows : {256, 128, 96, 7}) {
    for (int64_t num_tiles = 1; num_tiles <= std::min<int64_t>(rows, 16); ++num_tiles) {
      std::vector<int> asked(rows + 1, 0);
      for (int64_t i = 0; i < num_tiles; ++i) {
        const cpu::panels::next_block_share share =
            cpu::panels::next_block_share_of(i, num_tiles, rows);
        ASSERT_TRUE(share.on);
        // The tile reads the block's rows; each read asks for one row of its share, in order,
        // from the share's first to at most the next share's first.
        const int64_t next_first = (i + 1) * rows / num_tiles;
        for (int64_t k = 0; k < rows; ++k) {
          const int64_t row = share.row(k);
          ASSERT_GE(row, share.first);
          ASSERT_LE(row, next_first) << rows << " " << num_tiles << " " << i;
          if (k > 0) {
            EXPECT_LE(row - share.row(k - 1), 1);
          }
          asked[row] = 1;
        }
      }
      // No row of the block goes unasked.
      for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(asked[r], 1) << rows << " " << num_tiles;
    }
  }
}

TEST(packed_linear, panels_go_out_in_equal_chunks_a_multiple_of_the_team) {
  for (int64_t team : {1, 2, 3, 4})
    for (int64_t panels : {1, 3, 48, 100, 144, 2000})
      for (int64_t per_chunk : {4, 16}) {
        const int64_t chunks = cpu::chunks_for_team(panels, per_chunk, team);
        ASSERT_GE(chunks, 1);
        ASSERT_LE(chunks, panels);
        if (panels >= team) {
          EXPECT_EQ(chunks % team, 0) << panels << " " << team;
        }
        // Chunk c: [c * panels / chunks, (c + 1) * panels / chunks): sizes within one panel.
        const int64_t smallest = panels / chunks, largest = (panels + chunks - 1) / chunks;
        EXPECT_LE(largest - smallest, 1);
        EXPECT_LE(smallest, per_chunk) << panels << " " << per_chunk << " " << team;
      }
  // A 768-wide int8 projection (48 panels) on two members: 4 chunks of 12, not 3 of 16.
  EXPECT_EQ(cpu::chunks_for_team(48, 16, 2), 4);
}

TEST(packed_linear, matches_naive_matmul_for_every_tile_and_panel_shape) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int saved = cpu::num_threads();
  for (int threads : {1, 2}) {
    cpu::set_num_threads(threads);
    // One panel; odd and even counts of them (the wide tiles take two at a time), the last
    // partial.
    for (auto [in, out] : {std::pair{40, 16}, {300, 37}, {513, 100}, {96, 60}}) {
      const auto w = random_vector(out * in, 1), bias = random_vector(out, 2);
      const cpu::packed_matrix packed = cpu::pack_matrix(w.data(), out, in);
      ASSERT_EQ(packed.num_panels(), (out + 15) / 16);
      for (int n : {1, 2, 3, 4, 5, 6, 7, 13, 97, 200}) {
        const auto x = random_vector(n * in, 3 + n);
        for (const float* b : {static_cast<const float*>(nullptr), bias.data()}) {
          std::vector<float> got(n * out, -7.0f);
          cpu::linear_packed(x.data(), packed, b, n, got.data());
          for (int i = 0; i < n; ++i)
            for (int o = 0; o < out; ++o) {
              double want = b ? b[o] : 0.0;
              for (int k = 0; k < in; ++k) want += double(x[i * in + k]) * w[o * in + k];
              ASSERT_NEAR(got[i * out + o], want, 1e-4 * (1.0 + std::fabs(want)))
                  << "threads " << threads << " in " << in << " out " << out << " n " << n
                  << " row " << i << " feature " << o;
            }
        }
      }
    }
  }
  cpu::set_num_threads(saved);
}

TEST(packed_linear, split_outputs_equal_the_fused_output_cut_into_slices) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 70, q = 48, kv = 32, out = q + 2 * kv;
  const auto w = random_vector(out * in, 5), bias = random_vector(out, 6);
  const cpu::packed_matrix packed = cpu::pack_matrix(w.data(), out, in);
  for (int n : {1, 7, 33}) {
    const auto x = random_vector(n * in, 7);
    std::vector<float> fused(n * out), qs(n * q), ks(n * kv), vs(n * kv);
    cpu::linear_packed(x.data(), packed, bias.data(), n, fused.data());
    const cpu::output_slice slices[] = {{q, qs.data()}, {kv, ks.data()}, {kv, vs.data()}};
    cpu::linear_packed_split(x.data(), packed, bias.data(), n, slices);
    for (int t = 0; t < n; ++t) {
      for (int j = 0; j < q; ++j) ASSERT_EQ(qs[t * q + j], fused[t * out + j]);
      for (int j = 0; j < kv; ++j) ASSERT_EQ(ks[t * kv + j], fused[t * out + q + j]);
      for (int j = 0; j < kv; ++j) ASSERT_EQ(vs[t * kv + j], fused[t * out + q + kv + j]);
    }
  }
}

TEST(packed_linear, large_weights_sit_on_huge_page_boundaries_and_stay_exact) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const int in = 1100, out = 1024;  // 4.5 MB of panels: the huge-page path
  const auto w = random_vector(out * in, 8), x = random_vector(in, 9);
  const cpu::packed_matrix packed = cpu::pack_matrix(w.data(), out, in);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(packed.panels.data()) % (uintptr_t(2) << 20), 0u);
  std::vector<float> got(out);
  cpu::linear_packed(x.data(), packed, nullptr, 1, got.data());
  for (int o = 0; o < out; ++o) {
    double want = 0;
    for (int k = 0; k < in; ++k) want += double(x[k]) * w[o * in + k];
    ASSERT_NEAR(got[o], want, 1e-3 * (1.0 + std::fabs(want))) << o;
  }
}

}  // namespace
}  // namespace actorllm

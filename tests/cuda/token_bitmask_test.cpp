// The device bitmask against the host's grammar::apply_token_mask: random masks (mostly open,
// mostly closed, words all set or all clear, short masks) over rows of a batch where only
// some rows are constrained; the other rows must come back untouched, bit for bit.
#include "kernels/cuda/token_bitmask.cuh"

#include <gtest/gtest.h>

#include "grammar/token_mask.hpp"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaTokenBitmask, MatchesTheHostMaskAndLeavesOtherRowsAlone) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(18);
  for (int vocab : {7, 32, 1000, 32000, 128256, 151936}) {
    const int n = 11;
    const int64_t words = (vocab + 31) / 32;
    const auto logits = random_floats(size_t(n) * vocab, rng, -10, 10);
    const std::vector<int32_t> rows{0, 3, 4, 10};
    std::vector<uint32_t> masks(rows.size() * words);
    for (size_t m = 0; m < rows.size(); ++m)
      for (int64_t w = 0; w < words; ++w) {
        uint32_t bits = rng();
        if (m == 1) bits &= rng() & rng();  // mostly closed
        if (m == 2) bits |= rng() | rng();  // mostly open
        if (w % 7 == 0) bits = 0;
        if (w % 11 == 0) bits = ~0u;
        masks[m * words + w] = bits;
      }
    // The last mask ends early: ids past its words are blocked too.
    const int64_t short_words = std::max<int64_t>(1, words / 2);
    std::vector<float> expected = logits;
    for (size_t m = 0; m < rows.size(); ++m) {
      const int64_t width = m + 1 == rows.size() ? short_words : words;
      grammar::apply_token_mask(
          std::span<float>(expected.data() + size_t(rows[m]) * vocab, size_t(vocab)),
          std::span<const uint32_t>(masks.data() + m * words, size_t(width)));
    }
    // The device takes one width for all masks: give the short one zero words past its end.
    for (int64_t w = short_words; w < words; ++w) masks[(rows.size() - 1) * words + w] = 0;

    auto d_logits = upload(logits);
    auto d_rows = upload(rows);
    auto d_masks = upload(masks);
    apply_token_bitmask(d_logits.as<float>(), vocab, d_rows.as<int32_t>(), d_masks.as<uint32_t>(),
                        int64_t(rows.size()), words, nullptr);
    sync_device();
    const auto got = download<float>(d_logits, size_t(n) * vocab);
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_EQ(0, std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)))
        << "vocab " << vocab;
  }
}

TEST(CudaTokenBitmask, NarrowerMasksBlockTheIdsPastThem) {
  REQUIRE_CUDA_DEVICE();
  const int vocab = 100;
  const std::vector<float> logits(vocab, 1.0f);
  const std::vector<int32_t> rows{0};
  const std::vector<uint32_t> masks{~0u};  // one word: ids 0..31 allowed, the rest blocked
  auto d_logits = upload(logits);
  auto d_rows = upload(rows);
  auto d_masks = upload(masks);
  apply_token_bitmask(d_logits.as<float>(), vocab, d_rows.as<int32_t>(), d_masks.as<uint32_t>(), 1,
                      1, nullptr);
  sync_device();
  const auto got = download<float>(d_logits, vocab);
  for (int id = 0; id < vocab; ++id) EXPECT_EQ(got[id], id < 32 ? 1.0f : -INFINITY) << id;
}

}  // namespace
}  // namespace actorllm::cuda

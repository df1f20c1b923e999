// The device's batched LoRA update against the host's (cpu::add_lora, itself checked against
// the definition in double precision): rows of three adapters, one without a pair for the
// projection, and of the base model in one batch, each dtype, odd shapes, y a slice of wider
// rows; base rows and the columns past each row untouched.
#include "kernels/cpu/lora.hpp"

#include <gtest/gtest.h>

#include <tuple>

#include "kernels/cuda/lora.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaLora, MatchesTheHostUpdate) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  for (dtype t : all_dtypes()) {
    for (auto [n, in, out] : {std::tuple{1, 64, 64}, {7, 37, 91}, {33, 288, 768}}) {
      const std::vector<int64_t> ranks{8, 0, 16, 3};  // adapter 1 skips this projection
      std::vector<std::vector<float>> a(ranks.size()), b_t(ranks.size());
      std::vector<cpu::lora_weights> host;
      std::vector<device_buffer> d_a, d_b;
      std::vector<const float*> a_ptrs, b_ptrs;
      std::vector<int32_t> rank32;
      std::vector<float> scalings;
      for (size_t k = 0; k < ranks.size(); ++k) {
        a[k] = random_floats(ranks[k] * in, rng);
        b_t[k] = random_floats(ranks[k] * out, rng);
        const float scaling = ranks[k] ? 2.0f / float(ranks[k]) : 1.0f;
        host.push_back(ranks[k] ? cpu::lora_weights{a[k].data(), b_t[k].data(), ranks[k], scaling}
                                : cpu::lora_weights{});
        d_a.push_back(upload(a[k]));
        d_b.push_back(upload(b_t[k]));
        a_ptrs.push_back(ranks[k] ? d_a.back().as<float>() : nullptr);
        b_ptrs.push_back(ranks[k] ? d_b.back().as<float>() : nullptr);
        rank32.push_back(static_cast<int32_t>(ranks[k]));
        scalings.push_back(scaling);
      }
      const int64_t stride = out + 5;
      auto x = random_floats(size_t(n) * in, rng), y = random_floats(size_t(n) * stride, rng);
      round_to(x, t);
      round_to(y, t);
      std::vector<int32_t> which(n);
      for (int64_t r = 0; r < n; ++r) which[r] = static_cast<int32_t>(r % 5) - 1;  // -1 .. 3
      std::vector<float> expected = y, scratch;
      cpu::add_lora(x.data(), n, in, expected.data(), out, stride, which, host, scratch);

      device_tensor d_x(x, t), d_y(y, t);
      auto d_which = upload(which);
      auto d_a_ptrs = upload(a_ptrs), d_b_ptrs = upload(b_ptrs), d_ranks = upload(rank32),
           d_scalings = upload(scalings);
      device_buffer d_shrunk(size_t(n) * 16 * sizeof(float));
      const lora_batch batch{d_a_ptrs.as<const float* const>(),
                             d_b_ptrs.as<const float* const>(),
                             d_ranks.as<int32_t>(),
                             d_scalings.as<float>(),
                             static_cast<int32_t>(ranks.size()),
                             16};
      add_lora(d_x.get(), n, in, d_y.get(), out, stride, d_which.as<int32_t>(), batch,
               d_shrunk.as<float>(), t, nullptr);
      sync_device();
      std::vector<float> want = expected;
      round_to(want, t);
      const tolerance tol = t == dtype::f32 ? tolerance{1e-4f, 1e-4f} : default_tolerance(t);
      EXPECT_TRUE(all_close(d_y.download(), want, tol)) << dtype_name(t) << " n " << n;
    }
  }
}

}  // namespace
}  // namespace actorllm::cuda

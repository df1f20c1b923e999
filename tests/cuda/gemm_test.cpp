// cuBLAS linear layers against the CPU reference: fp32, fp16 and bf16 with fp32 accumulation,
// decode-like and prefill-like shapes, with and without bias.
#include "kernels/cuda/gemm.cuh"

#include <gtest/gtest.h>

#include <tuple>

#include "kernels/cpu/ops.hpp"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaGemm, LinearMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(21);
  gemm_context gemm;
  for (dtype t : all_dtypes()) {
    for (auto [n, in, out] : {std::tuple{1, 64, 172},
                              {7, 256, 384},
                              {64, 1024, 512},
                              {300, 512, 1000},
                              {1, 4096, 1024}}) {
      for (bool with_bias : {false, true}) {
        auto x = random_floats(size_t(n) * in, rng), w = random_floats(size_t(out) * in, rng);
        auto bias = random_floats(out, rng);
        round_to(x, t);
        round_to(w, t);
        round_to(bias, t);
        std::vector<float> expected(size_t(n) * out);
        cpu::linear(x.data(), w.data(), with_bias ? bias.data() : nullptr, n, in, out,
                    expected.data());

        device_tensor d_x(x, t), d_w(w, t), d_bias(bias, t), d_y(expected.size(), t);
        d_y.poison();
        gemm.linear(d_x.get(), d_w.get(), with_bias ? d_bias.get() : nullptr, n, in, out, d_y.get(),
                    t, nullptr);
        sync_device();
        // Accumulation order differs: allow 1e-5 of sum |x| |w| per element, plus the
        // output rounding of the storage type.
        const auto actual = d_y.download();
        const float rtol = t == dtype::f32 ? 1e-5f : default_tolerance(t).rtol;
        size_t bad = 0;
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < out; ++j) {
            double magnitude = with_bias ? std::fabs(bias[j]) : 0.0;
            for (int k = 0; k < in; ++k)
              magnitude += std::fabs(double(x[size_t(i) * in + k]) * w[size_t(j) * in + k]);
            const double e = expected[size_t(i) * out + j], a = actual[size_t(i) * out + j];
            if (!(std::fabs(a - e) <= 1e-5 * magnitude + rtol * std::fabs(e) + 1e-6)) ++bad;
          }
        EXPECT_EQ(bad, 0u) << dtype_name(t) << " " << n << "x" << in << "x" << out
                           << " bias=" << with_bias;
      }
    }
  }
}

TEST(CudaGemm, StreamsCanChangeBetweenCalls) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(22);
  gemm_context gemm(size_t{4} << 20);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto x = random_floats(8 * 32, rng), w = random_floats(16 * 32, rng);
  std::vector<float> expected(8 * 16);
  cpu::linear(x.data(), w.data(), nullptr, 8, 32, 16, expected.data());
  device_tensor d_x(x, dtype::f32), d_w(w, dtype::f32), d_y(expected.size(), dtype::f32);
  for (cudaStream_t s : {cudaStream_t{nullptr}, stream, cudaStream_t{nullptr}}) {
    d_y.poison();
    gemm.linear(d_x.get(), d_w.get(), nullptr, 8, 32, 16, d_y.get(), dtype::f32, s);
    CUDA_CHECK(cudaStreamSynchronize(s));
    EXPECT_TRUE(all_close(d_y.download(), expected, {1e-5f, 1e-5f}));
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace actorllm::cuda

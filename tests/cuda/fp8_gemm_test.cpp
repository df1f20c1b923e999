// W8A8 float8 GEMMs through cuBLASLt against a double-precision reference of the same
// quantization: x rounded to E4M3 with the per-tensor scale max |x| / 448, times the E4M3
// weight codes, each output column times its row's scale, plus the bias. Needs sm_89+.
#include "kernels/cuda/fp8_gemm.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

TEST(CudaFp8Gemm, LayoutsItTakes) {
  std::vector<uint8_t> codes(64 * 32);
  std::vector<float> scales(64);
  quantized_matrix w{weight_code::fp8, 64, 32, 32, codes.data(), scales.data(), nullptr, nullptr};
  EXPECT_TRUE(fp8_gemm_takes(w));
  w.group_size = 16;  // two scales a row
  EXPECT_FALSE(fp8_gemm_takes(w));
  w.group_size = 32;
  w.code = weight_code::q8;
  EXPECT_FALSE(fp8_gemm_takes(w));
  const std::vector<float> x{0.5f, -896.0f, 3.0f};
  EXPECT_EQ(fp8_activation_scale(x.data(), 3), 2.0f);
  const std::vector<float> zeros(4, 0.0f);
  EXPECT_EQ(fp8_activation_scale(zeros.data(), 4), 1.0f);
}

TEST(CudaFp8Gemm, MatchesTheQuantizedReference) {
  REQUIRE_CUDA_DEVICE();
  if (!fp8_gemm_supported()) GTEST_SKIP() << "no float8 tensor cores (sm_89+)";
  std::mt19937 rng(61);
  fp8_gemm gemm;
  for (dtype t : all_dtypes()) {
    for (auto [n, in, out] : {std::tuple{40, 128, 64}, {257, 512, 256}, {17, 64, 1024}}) {
      auto x = random_floats(size_t(n) * in, rng, -3, 3);
      round_to(x, t);
      std::vector<uint8_t> codes(size_t(out) * in);
      std::uniform_int_distribution<int> byte(0, 255);
      for (auto& c : codes) {
        c = static_cast<uint8_t>(byte(rng));
        if ((c & 0x7f) == 0x7f) c ^= 1;  // no NaN codes
      }
      auto scales = random_floats(size_t(out), rng, 0.001f, 0.01f);
      auto bias = random_floats(size_t(out), rng);
      round_to(bias, t);

      const float s = fp8_activation_scale(x.data(), int64_t(x.size()));
      std::vector<float> expected(size_t(n) * out);
      for (int i = 0; i < n; ++i)
        for (int o = 0; o < out; ++o) {
          double dot = 0;
          for (int k = 0; k < in; ++k) {
            const float xq = cpu::float8_e4m3::decode(cpu::float8_e4m3::encode(x[i * in + k] / s));
            dot += double(xq) * cpu::float8_e4m3::decode(codes[size_t(o) * in + k]);
          }
          expected[size_t(i) * out + o] = float(dot * s * scales[o] + bias[o]);
        }

      device_tensor d_x(x, t), d_bias(bias, t), d_y(expected.size(), t);
      auto d_codes = upload(codes);
      auto d_scales = upload(scales);
      const quantized_matrix w{weight_code::fp8,     out,     in,     in, d_codes.as<uint8_t>(),
                               d_scales.as<float>(), nullptr, nullptr};
      d_y.poison();
      gemm.linear(d_x.get(), w, d_bias.get(), n, d_y.get(), t, nullptr);
      sync_device();
      EXPECT_LT(rms_relative_error(d_y.download(), expected), t == dtype::bf16 ? 2e-2 : 2e-3)
          << dtype_name(t) << " " << n << "x" << in << "x" << out;
    }
  }
}

}  // namespace
}  // namespace actorllm::cuda

// Linear layers on quantized weights (int8, int4 with zero points, float8 E4M3) against a
// double-precision reference from the layout's own definition (cuda::dequantized_weight):
// quantized_gemv for decode shapes, dequantize then cuBLAS for prefill shapes, desc_act's
// column order through gather_columns, in every activation type, with and without bias.
#include "kernels/cuda/quantized_linear.cuh"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "kernels/cuda/gemm.cuh"
#include "tests/cuda/cuda_test_util.hpp"

namespace actorllm::cuda {
namespace {

using namespace testing;

/// A random quantized matrix owning its host parts.
struct random_quantized {
  std::vector<uint8_t> codes, zeros;
  std::vector<float> scales;
  std::vector<int32_t> order;
  quantized_matrix view;

  random_quantized(weight_code code, int64_t out, int64_t in, int64_t group, bool permuted,
                   std::mt19937& rng) {
    view.code = code;
    view.out_features = out;
    view.in_features = in;
    view.group_size = group;
    std::uniform_int_distribution<int> byte(0, 255);
    codes.resize(static_cast<size_t>(view.code_bytes()));
    for (auto& c : codes) {
      c = static_cast<uint8_t>(byte(rng));
      if (code == weight_code::fp8 && (c & 0x7f) == 0x7f) c ^= 1;  // not NaN
    }
    scales = random_floats(static_cast<size_t>(out * view.num_groups()), rng, 0.002f, 0.02f);
    if (code == weight_code::q4) {
      zeros.resize(scales.size());
      for (auto& z : zeros) z = static_cast<uint8_t>(byte(rng) % 16);
      view.zeros = zeros.data();
    }
    if (permuted) {
      order.resize(static_cast<size_t>(in));
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      view.input_order = order.data();
    }
    view.codes = codes.data();
    view.scales = scales.data();
  }
};

/// y = x @ w^T + bias in double, with x's input features in their own order, and the sum of
/// |w x| per output for the tolerance.
void reference_linear(const quantized_matrix& w, const std::vector<float>& x, const float* bias,
                      int64_t n, std::vector<float>& y, std::vector<double>& magnitude) {
  const int64_t in = w.in_features, out = w.out_features;
  y.assign(static_cast<size_t>(n * out), 0.0f);
  magnitude.assign(y.size(), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias ? bias[o] : 0.0, size = bias ? std::fabs(bias[o]) : 0.0;
      for (int64_t r = 0; r < in; ++r) {
        const double term = double(dequantized_weight(w, o, r)) *
                            x[i * in + (w.input_order ? w.input_order[r] : r)];
        sum += term;
        size += std::fabs(term);
      }
      y[i * out + o] = static_cast<float>(sum);
      magnitude[i * out + o] = size;
    }
}

/// Every element within 1e-5 of its magnitude (accumulation order), `weight_rounding` of it
/// (a 16-bit dequantized copy), and the output type's rounding; a zero output fails.
size_t count_misses(const std::vector<float>& actual, const std::vector<float>& expected,
                    const std::vector<double>& magnitude, double weight_rounding, dtype t) {
  const double rtol = t == dtype::f32 ? 1e-6 : default_tolerance(t).rtol;
  size_t bad = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double limit =
        (1e-5 + weight_rounding) * magnitude[i] + rtol * std::fabs(expected[i]) + 1e-6;
    if (!(std::fabs(double(actual[i]) - expected[i]) <= limit)) ++bad;
  }
  return bad;
}

const std::tuple<int64_t, int64_t, int64_t> shapes[] = {
    // out, in, group (in: one scale per output feature)
    {200, 256, 32},
    {96, 512, 128},
    {64, 1024, 1024},
    {33, 48, 16},  // a row shorter than one warp's 512 columns, an odd number of outputs
};

const weight_code codes[] = {weight_code::q8, weight_code::q4, weight_code::fp8};

// Few rows: the codes are read in registers (chunks of eight rows, 13 = 8 + 5).
TEST(CudaQuantizedLinear, GemvMatchesTheLayoutsDefinition) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(7);
  for (dtype t : all_dtypes())
    for (weight_code code : codes)
      for (auto [out, in, group] : shapes)
        for (bool permuted : {false, true})
          for (int64_t n : {1, 2, 3, 8, 13}) {
            const random_quantized host(code, out, in, group, permuted, rng);
            const device_quantized_matrix w(host.view);
            auto x = random_floats(static_cast<size_t>(n * in), rng);
            auto bias = random_floats(static_cast<size_t>(out), rng);
            round_to(x, t);
            round_to(bias, t);
            const bool with_bias = n % 2 == 1;
            std::vector<float> want;
            std::vector<double> magnitude;
            reference_linear(host.view, x, with_bias ? bias.data() : nullptr, n, want, magnitude);

            device_tensor d_x(x, t), d_bias(bias, t), d_y(want.size(), t);
            device_tensor d_ordered(x.size(), t);
            d_y.poison();
            const void* input = d_x.get();
            if (permuted) {
              gather_columns(d_x.get(), w.view().input_order, n, in, d_ordered.get(), t, nullptr);
              input = d_ordered.get();
            }
            quantized_gemv(input, w.view(), with_bias ? d_bias.get() : nullptr, n, d_y.get(), t,
                           nullptr);
            sync_device();
            EXPECT_EQ(count_misses(d_y.download(), want, magnitude, 0.0, t), 0u)
                << dtype_name(t) << " " << weight_code_name(code) << " " << n << "x" << in << "->"
                << out << " group " << group << (permuted ? " desc_act" : "");
          }
}

// Many rows: the matrix is dequantized into the activation type, exactly as the layout
// defines each weight (then rounded once), and multiplied by cuBLAS.
TEST(CudaQuantizedLinear, DequantizeThenGemmMatchesTheLayoutsDefinition) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(8);
  gemm_context gemm;
  for (dtype t : all_dtypes())
    for (weight_code code : codes)
      for (auto [out, in, group] : shapes) {
        const random_quantized host(code, out, in, group, /*permuted=*/true, rng);
        const device_quantized_matrix w(host.view);
        std::vector<float> weights(static_cast<size_t>(out * in));
        for (int64_t o = 0; o < out; ++o)
          for (int64_t r = 0; r < in; ++r)
            weights[o * in + r] = dequantized_weight(host.view, o, r);
        round_to(weights, t);
        device_tensor d_w(weights.size(), t);
        d_w.poison();
        dequantize(w.view(), d_w.get(), t, nullptr);
        sync_device();
        EXPECT_EQ(d_w.download(), weights) << dtype_name(t) << " " << weight_code_name(code);

        const int64_t n = 40;
        auto x = random_floats(static_cast<size_t>(n * in), rng);
        round_to(x, t);
        std::vector<float> want;
        std::vector<double> magnitude;
        reference_linear(host.view, x, nullptr, n, want, magnitude);
        device_tensor d_x(x, t), d_ordered(x.size(), t), d_y(want.size(), t);
        d_y.poison();
        gather_columns(d_x.get(), w.view().input_order, n, in, d_ordered.get(), t, nullptr);
        gemm.linear(d_ordered.get(), d_w.get(), nullptr, n, in, out, d_y.get(), t, nullptr);
        sync_device();
        const double weight_rounding = t == dtype::f32 ? 0.0 : t == dtype::f16 ? 1e-3 : 8e-3;
        EXPECT_EQ(count_misses(d_y.download(), want, magnitude, weight_rounding, t), 0u)
            << dtype_name(t) << " " << weight_code_name(code) << " " << out << "x" << in;
      }
}

// The kernels refuse what they cannot read, before touching the device.
TEST(CudaQuantizedLinear, LayoutsTheKernelsCannotRunAreRefused) {
  std::mt19937 rng(9);
  const random_quantized ok(weight_code::q4, 16, 64, 32, false, rng);
  EXPECT_EQ(quantized_layout_error(ok.view), "");
  quantized_matrix bad = ok.view;
  bad.in_features = 40;  // not a multiple of 16
  EXPECT_NE(quantized_layout_error(bad), "");
  bad = ok.view;
  bad.group_size = 24;  // does not divide 64
  EXPECT_NE(quantized_layout_error(bad), "");
  bad = ok.view;
  bad.zeros = nullptr;  // 4-bit codes need their zero points
  EXPECT_NE(quantized_layout_error(bad), "");
  EXPECT_THROW(device_quantized_matrix{bad}, std::invalid_argument);
}

}  // namespace
}  // namespace actorllm::cuda

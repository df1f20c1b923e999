// Quantized projections reach the CUDA runner in the device's layout, and that layout holds
// the very weights the CPU multiplies by: for GPTQ (with and without desc_act), AWQ,
// compressed-tensors, float8 checkpoints and int8 / int4 at load, every projection read back
// through cuda::dequantized_weight equals cpu::unpack_matrix of its panels exactly. A layout
// the kernels cannot run stays a dense matrix. Runs without a device, in a CUDA build.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/llama_model.hpp"
#include "model/packed_weights.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/test_data.hpp"
#if ACTORLLM_HAS_CUDA
#include "actors/gpu_worker/cuda_backend.hpp"
#include "actors/gpu_worker/cuda_weights.hpp"
#include "kernels/cpu/float8.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "tests/actors/host_tensor_values.hpp"
#endif

namespace actorllm {
namespace {

#if ACTORLLM_HAS_CUDA
/// The dense (out, in) matrix of a device-layout view, in the input features' own order.
std::vector<float> dense_from_device_layout(const cuda::quantized_matrix& q) {
  std::vector<float> w(static_cast<size_t>(q.out_features * q.in_features));
  for (int64_t o = 0; o < q.out_features; ++o)
    for (int64_t r = 0; r < q.in_features; ++r)
      w[o * q.in_features + (q.input_order ? q.input_order[r] : r)] =
          cuda::dequantized_weight(q, o, r);
  return w;
}

/// Every projection of `model` is quantized on the device as `code`, and reads back as the
/// CPU's panels; the LM head too where it is quantized and untied.
void expect_projections_read_back(const llama_model& model, cuda::weight_code code) {
  ASSERT_TRUE(model.packed_only());
  testing::recorded_weights sent;
  const auto table = make_cuda_weight_table(model, sent);
  const packed_llama_weights& packed = *model.cpu_weights();
  for (size_t l = 0; l < packed.layers.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const std::string at = "layers." + std::to_string(l) + ".";
    const auto& panels = packed.layers[l];
    const std::pair<const char*, const cpu::packed_matrix*> projections[] = {
        {"qkv", &panels.qkv},
        {"o", &panels.o},
        {"gate_up", &panels.gate_up},
        {"down", &panels.down}};
    for (const auto& [name, matrix] : projections) {
      const quantized_host_matrix* quantized = sent.quantized(at + name);
      ASSERT_NE(quantized, nullptr) << name;
      EXPECT_EQ(quantized->code, code);
      EXPECT_EQ(!quantized->input_order.empty(), !matrix->input_order.empty());
      EXPECT_EQ(dense_from_device_layout(quantized->view()), cpu::unpack_matrix(*matrix));
      EXPECT_EQ(sent.find(at + name), nullptr) << name << " went dense too";
    }
  }
  if (const auto* head = sent.quantized("lm_head")) {
    EXPECT_EQ(dense_from_device_layout(head->view()), cpu::unpack_matrix(packed.lm_head));
  }
}

constexpr const char* quantizable_llama =
    "--dim 128 --layers 2 --heads 4 --kv-heads 2 --hidden 384 --vocab 320 --dtype bf16";

TEST(cuda_quantized_layout, checkpoint_formats_read_back_as_the_cpu_panels) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const struct {
    const char* args;
    cuda::weight_code code;
  } formats[] = {
      {"--quantize gptq4 --group-size 32", cuda::weight_code::q4},
      {"--quantize gptq4-act --group-size 64", cuda::weight_code::q4},
      {"--quantize gptq8 --group-size 128", cuda::weight_code::q8},
      {"--quantize awq4 --group-size 64", cuda::weight_code::q4},
      {"--quantize w4a16 --group-size -1", cuda::weight_code::q4},
      {"--quantize w8a16 --group-size 64", cuda::weight_code::q8},
      {"--quantize fp8-channel", cuda::weight_code::fp8},
      {"--quantize fp8-tensor", cuda::weight_code::fp8},
  };
  for (const auto& f : formats) {
    SCOPED_TRACE(f.args);
    const testing::random_model ckpt("cuda-layout", std::string(quantizable_llama) + " " + f.args);
    const llama_model model(ckpt.dir());
    expect_projections_read_back(model, f.code);
    // The startup log says so.
    EXPECT_NE(cuda_backend_provider(1, "auto").describe_weights(model).find(
                  " projections stay so on the device"),
              std::string::npos);
  }
}

TEST(cuda_quantized_layout, int8_and_int4_at_load_read_back_as_the_cpu_panels) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const testing::random_model ckpt("cuda-layout-at-load", quantizable_llama);
  expect_projections_read_back(llama_model(ckpt.dir(), {}, {"auto", "int8"}),
                               cuda::weight_code::q8);
  expect_projections_read_back(llama_model(ckpt.dir(), {}, {"auto", "int4"}),
                               cuda::weight_code::q4);
}

// stories260K's MLP is 172 wide: its down projection's rows are not a multiple of the
// kernels' 16 columns, so it goes to the device dense (unpacked) while q, k, v stay int8.
TEST(cuda_quantized_layout, a_layout_the_kernels_cannot_run_stays_dense) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const llama_model model(testing::stories260k_dir(), {}, {"auto", "int8"});
  testing::recorded_weights sent;
  const auto table = make_cuda_weight_table(model, sent);
  const quantized_host_matrix* qkv = sent.quantized("layers.0.qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(sent.quantized("layers.0.down"), nullptr);
  const auto* down = sent.find("layers.0.down");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->values.type, cuda::dtype::f32);
  const auto& panels = model.cpu_weights()->layers.at(0).down;
  EXPECT_EQ(testing::host_values(down->values, panels.out_features * panels.in_features),
            cpu::unpack_matrix(panels));
  EXPECT_FALSE(device_layout_of(panels).has_value());
  EXPECT_FALSE(cuda::quantized_layout_error({cuda::weight_code::q8, 64, 172, 172, qkv->codes.data(),
                                             qkv->scales.data(), nullptr, nullptr})
                   .empty());
}

TEST(cuda_quantized_layout, sixteen_bit_panels_are_not_quantized) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const testing::random_model ckpt("cuda-layout-bf16", quantizable_llama);
  const llama_model model(ckpt.dir());
  ASSERT_TRUE(model.packed_only());
  testing::recorded_weights sent;
  const auto table = make_cuda_weight_table(model, sent);
  EXPECT_TRUE(sent.empty_of_quantized());
  const auto* qkv = sent.find("layers.0.qkv");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->values.type, cuda::dtype::bf16);
  EXPECT_FALSE(qkv->values.empty());
}

// Every E4M3FN code's value: the kernels' reference decodes as the format defines it, and
// as the CPU's packing does.
TEST(cuda_quantized_layout, e4m3_values_follow_the_format) {
  EXPECT_EQ(cuda::e4m3_value(0x00), 0.0f);
  EXPECT_EQ(cuda::e4m3_value(0x38), 1.0f);           // exponent 7, mantissa 0
  EXPECT_EQ(cuda::e4m3_value(0x7e), 448.0f);         // the largest
  EXPECT_EQ(cuda::e4m3_value(0x01), 1.0f / 512.0f);  // the smallest subnormal
  EXPECT_EQ(cuda::e4m3_value(0x07), 7.0f / 512.0f);
  EXPECT_EQ(cuda::e4m3_value(0xb8), -1.0f);
  EXPECT_TRUE(std::isnan(cuda::e4m3_value(0x7f)));
  EXPECT_TRUE(std::isnan(cuda::e4m3_value(0xff)));
  for (int code = 0; code < 256; ++code)
    if ((code & 0x7f) != 0x7f) {
      EXPECT_EQ(cuda::e4m3_value(static_cast<uint8_t>(code)),
                cpu::float8_e4m3::decode(static_cast<uint8_t>(code)))
          << code;
    }
}
#endif

}  // namespace
}  // namespace actorllm

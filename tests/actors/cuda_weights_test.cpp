// The CUDA runner's host view of a model whose matrices are packed 16-bit panels only:
// host_weights_of hands them over as bf16, unpacked only when the runner uploads each one, and
// for a bf16 checkpoint that is exactly the checkpoint's bits: the float32 model's weights cut
// to their upper 16 bits, tied head and all. Needs no device (plain C++ over the model), only
// a build with CUDA.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "model/llama_model.hpp"
#include "tests/support/random_models.hpp"
#if ACTORLLM_HAS_CUDA
#include "actors/gpu_worker/cuda_weights.hpp"
#include "tests/actors/host_tensor_values.hpp"
#endif

namespace actorllm {
namespace {

#if ACTORLLM_HAS_CUDA
std::vector<float> values(const cuda::host_tensor& t, int64_t n) {
  return testing::host_values(t, n);
}
std::vector<float> values(const float* p, int64_t n) {
  return p ? std::vector<float>(p, p + n) : std::vector<float>();
}

/// A matrix of the bf16 model goes over as bf16, written only on demand (no copy is made when
/// the view is), and its bits are the upper half of the float32 model's (exact: the float32
/// model widened the same checkpoint).
void expect_bf16_bits(const cuda::host_tensor& got, const cuda::host_tensor& want, int64_t n) {
  ASSERT_EQ(got.type, cuda::dtype::bf16);
  EXPECT_EQ(got.data, nullptr);
  ASSERT_TRUE(got.write);
  const std::vector<char> bits = testing::host_bytes(got, n);
  const std::vector<float> wide = values(want, n);
  ASSERT_EQ(static_cast<int64_t>(wide.size()), n);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t half;
    uint32_t full;
    std::memcpy(&half, bits.data() + 2 * i, 2);
    std::memcpy(&full, &wide[i], 4);
    ASSERT_EQ(half, full >> 16) << "element " << i;
    ASSERT_EQ(full & 0xffffu, 0u) << "element " << i << " is not a bf16 value";
  }
}

void expect_same_upload(const std::string& args) {
  testing::random_model ckpt("cuda-weights", args + " --dtype bf16");
  const llama_model packed(ckpt.dir());
  const llama_model float32(ckpt.dir(), {}, {"float32", "none"});
  ASSERT_TRUE(packed.packed_only());
  const auto& c = float32.config();
  const int64_t dim = c.hidden_size, qkv = c.q_size() + 2 * c.kv_size();
  const auto got = host_weights_of(packed), want = host_weights_of(float32);
  const cuda::llama_host_weights& g = got;
  const cuda::llama_host_weights& w = want;
  expect_bf16_bits(g.embed, w.embed, c.vocab_size * dim);
  EXPECT_EQ(g.lm_head.empty(), w.lm_head.empty());  // tied: both read the embedding
  if (!w.lm_head.empty()) expect_bf16_bits(g.lm_head, w.lm_head, c.vocab_size * dim);
  for (size_t l = 0; l < g.layers.size(); ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const auto &gl = g.layers[l], &wl = w.layers[l];
    expect_bf16_bits(gl.qkv, wl.qkv, qkv * dim);
    expect_bf16_bits(gl.o, wl.o, dim * c.q_size());
    expect_bf16_bits(gl.gate_up, wl.gate_up, 2 * c.intermediate_size * dim);
    expect_bf16_bits(gl.down, wl.down, dim * c.intermediate_size);
    EXPECT_EQ(values(gl.input_norm, dim), values(wl.input_norm, dim));
  }
}

TEST(cuda_weights, a_bf16_model_uploads_exactly_the_float32_models_weights) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  expect_same_upload("--dim 64 --layers 2 --heads 4 --kv-heads 2 --hidden 96 --vocab 512");
}

TEST(cuda_weights, a_tied_bf16_model_uploads_its_embedding_once) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  expect_same_upload("--arch llama-tied");
}
#endif

}  // namespace
}  // namespace actorllm

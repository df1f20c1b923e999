// The CUDA runner's host view of a model whose matrices are packed 16-bit panels only:
// host_weights_of widens them to float32 for the upload, and for a bf16 checkpoint that is
// exactly the float32 model's weights, tied head and all. Needs no device (plain C++ over the
// model), only a build with CUDA.
#include <gtest/gtest.h>

#include <vector>

#include "model/llama_model.hpp"
#include "tests/support/random_models.hpp"
#if ACTORLLM_HAS_CUDA
#include "actors/gpu_worker/cuda_weights.hpp"
#endif

namespace actorllm {
namespace {

#if ACTORLLM_HAS_CUDA
std::vector<float> values(const float* p, int64_t n) {
  return p ? std::vector<float>(p, p + n) : std::vector<float>();
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
  EXPECT_EQ(values(g.embed, c.vocab_size * dim), values(w.embed, c.vocab_size * dim));
  EXPECT_EQ(g.lm_head == nullptr, w.lm_head == nullptr);  // tied: both read the embedding
  EXPECT_EQ(values(g.lm_head, c.vocab_size * dim), values(w.lm_head, c.vocab_size * dim));
  for (size_t l = 0; l < g.layers.size(); ++l) {
    const auto &gl = g.layers[l], &wl = w.layers[l];
    EXPECT_EQ(values(gl.qkv, qkv * dim), values(wl.qkv, qkv * dim)) << l;
    EXPECT_EQ(values(gl.o, dim * c.q_size()), values(wl.o, dim * c.q_size())) << l;
    EXPECT_EQ(values(gl.gate_up, 2 * c.intermediate_size * dim),
              values(wl.gate_up, 2 * c.intermediate_size * dim))
        << l;
    EXPECT_EQ(values(gl.down, dim * c.intermediate_size),
              values(wl.down, dim * c.intermediate_size))
        << l;
    EXPECT_EQ(values(gl.input_norm, dim), values(wl.input_norm, dim)) << l;
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

// What the device receives of a model whose matrices are packed 16-bit panels only:
// make_cuda_weight_table hands them over as bf16, unpacked only when the sink stores each one, and
// for a bf16 checkpoint that is exactly the checkpoint's bits: the float32 model's weights cut
// to their upper 16 bits, tied head and all. Needs no device (plain C++ over the model), only
// a build with CUDA.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
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

/// The tensor stored as `name`.
const testing::recorded_weights::dense& stored(const testing::recorded_weights& r,
                                               const std::string& name) {
  const auto* d = r.find(name);
  if (!d) throw std::runtime_error(name + " was not stored");
  return *d;
}

void expect_same_upload(const std::string& args) {
  testing::random_model ckpt("cuda-weights", args + " --dtype bf16");
  const llama_model packed(ckpt.dir());
  const llama_model float32(ckpt.dir(), {}, {"float32", "none"});
  ASSERT_TRUE(packed.packed_only());
  const auto& c = float32.config();
  const int64_t dim = c.hidden_size, qkv = c.q_size() + 2 * c.kv_size();
  testing::recorded_weights g, w;
  const auto got = make_cuda_weight_table(packed, g);
  const auto want = make_cuda_weight_table(float32, w);
  expect_bf16_bits(stored(g, "embed").values, stored(w, "embed").values, c.vocab_size * dim);
  // Tied: neither stores a head, and both read the embedding table as it.
  const bool tied = w.find("lm_head") == nullptr;
  EXPECT_EQ(g.find("lm_head") == nullptr, tied);
  const auto* head = static_cast<const cuda::linear_weight*>(got->refs.head.matrix);
  EXPECT_EQ(head->dense == got->refs.embed, tied);
  if (!tied)
    expect_bf16_bits(stored(g, "lm_head").values, stored(w, "lm_head").values, c.vocab_size * dim);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const std::string at = "layers." + std::to_string(l) + ".";
    const auto bits = [&](const char* name, int64_t n) {
      expect_bf16_bits(stored(g, at + name).values, stored(w, at + name).values, n);
    };
    bits("qkv", qkv * dim);
    bits("o", dim * c.q_size());
    bits("gate_up", 2 * c.intermediate_size * dim);
    bits("down", dim * c.intermediate_size);
    EXPECT_EQ(values(stored(g, at + "input_norm").values, dim),
              values(stored(w, at + "input_norm").values, dim));
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

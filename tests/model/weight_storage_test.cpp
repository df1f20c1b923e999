// Weights kept as shipped: a bf16 or f16 checkpoint stays 16-bit (--dtype auto), packed panels
// are the only copy, every matrix reads back bit for bit as the checkpoint's values, and the
// logits equal float32's up to summation order; --quantization int8 quantizes per output
// channel exactly as its rule says, within a stated KL bound of float32; what cannot be
// served this way is refused by name, or (auto) kept in float32 saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "model/llama_model.hpp"
#include "model/safetensors.hpp"
#include "tests/model/weight_test_support.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_models.hpp"

namespace actorllm {
namespace {

using cpu::weight_format;
using namespace actorllm::testing;

/// The checkpoint's tensors `names` stacked by rows, read from the file by the formats' rules;
/// a float8 tensor as code * its float32 weight_scale (compressed-tensors: shape (rows, 1) per
/// output channel, (1) per tensor).
std::vector<float> file_rows(const tensor_store& store, std::initializer_list<std::string> names) {
  std::vector<float> out;
  for (const auto& name : names) {
    const tensor_view& v = store.get(name);
    const auto* bytes = static_cast<const unsigned char*>(v.data);
    if (v.dtype == tensor_dtype::f8_e4m3) {
      const tensor_view& s = store.get(name + "_scale");
      const auto* scales = static_cast<const float*>(s.data);
      const int64_t cols = v.shape[1];
      for (int64_t i = 0; i < v.numel(); ++i)
        out.push_back(e4m3_value(bytes[i]) * scales[s.numel() == 1 ? 0 : i / cols]);
      continue;
    }
    for (int64_t i = 0; i < v.numel(); ++i)
      out.push_back(v.dtype == tensor_dtype::bf16  ? bf16_value(bytes + 2 * i)
                    : v.dtype == tensor_dtype::f16 ? f16_value(bytes + 2 * i)
                                                   : reinterpret_cast<const float*>(v.data)[i]);
  }
  return out;
}

/// int8 per output channel, symmetric, as --quantization int8 documents it: scale =
/// max |w| / 127 over the row, q = round(w / scale) (halves away from zero), read as q * scale.
std::vector<float> int8_reference(const std::vector<float>& w, int64_t in) {
  std::vector<float> out(w.size());
  for (size_t r = 0; r < w.size() / in; ++r) {
    float max_abs = 0;
    for (int64_t k = 0; k < in; ++k) max_abs = std::max(max_abs, std::fabs(w[r * in + k]));
    const float scale = max_abs / 127.0f;
    for (int64_t k = 0; k < in; ++k)
      out[r * in + k] = (scale > 0 ? std::round(w[r * in + k] / scale) : 0.0f) * scale;
  }
  return out;
}

/// Every matrix of `model` as float32 against `reference`(the file's rows) for layer 0, the
/// last layer, the embedding table and the LM head.
void expect_matrices(const llama_model& model, const tensor_store& store,
                     const std::function<std::vector<float>(std::vector<float>, int64_t)>& ref) {
  const auto& c = model.config();
  const auto* p = model.cpu_weights();
  ASSERT_NE(p, nullptr);
  for (int64_t l : {int64_t(0), c.num_layers - 1}) {
    const std::string a = "model.layers." + std::to_string(l) + ".self_attn.";
    const std::string m = "model.layers." + std::to_string(l) + ".mlp.";
    const auto& pl = p->layers[l];
    EXPECT_EQ(cpu::unpack_matrix(pl.qkv),
              ref(file_rows(store, {a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"}),
                  c.hidden_size))
        << l;
    EXPECT_EQ(cpu::unpack_matrix(pl.o), ref(file_rows(store, {a + "o_proj.weight"}), c.q_size()));
    EXPECT_EQ(cpu::unpack_matrix(pl.gate_up),
              ref(file_rows(store, {m + "gate_proj.weight", m + "up_proj.weight"}), c.hidden_size));
    EXPECT_EQ(cpu::unpack_matrix(pl.down),
              ref(file_rows(store, {m + "down_proj.weight"}), c.intermediate_size));
  }
  EXPECT_EQ(cpu::unpack_matrix(p->embedding_table()),
            ref(file_rows(store, {"model.embed_tokens.weight"}), c.hidden_size));
  const std::string head =
      store.contains("lm_head.weight") ? "lm_head.weight" : "model.embed_tokens.weight";
  EXPECT_EQ(cpu::unpack_matrix(p->lm_head), ref(file_rows(store, {head}), c.hidden_size));
}

const auto as_is = [](std::vector<float> w, int64_t) { return w; };

constexpr const char* small_llama = "--dim 256 --layers 3 --heads 4 --kv-heads 2 --hidden 688";

TEST(weight_storage, a_bf16_checkpoint_stays_bf16_and_reads_back_bit_for_bit) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  testing::random_model ckpt("bf16", std::string(small_llama) + " --vocab 512 --dtype bf16");
  const llama_model model(ckpt.dir());
  EXPECT_EQ(model.storage().format, weight_format::bf16);
  EXPECT_EQ(model.storage().description, "bfloat16 (the checkpoint's bfloat16; --dtype auto)");
  EXPECT_TRUE(model.packed_only());
  EXPECT_TRUE(model.weights().embed.empty());  // no float32 copy of any matrix
  EXPECT_TRUE(model.weights().layers[0].qkv.empty());
  EXPECT_EQ(model.cpu_weights()->layers[0].qkv.format, weight_format::bf16);
  expect_matrices(model, tensor_store(ckpt.dir()), as_is);

  // bf16 widens exactly in the float tiles: only the order of the sums differs from float32's
  // forward.
  const llama_model float32(ckpt.dir(), {}, {"float32", "none"});
  EXPECT_EQ(float32.storage().description, "float32 (--dtype float32)");
  // float32 too keeps its panels alone: nothing here needs the rows beside them.
  EXPECT_TRUE(float32.packed_only());
  EXPECT_TRUE(float32.weights().layers[0].qkv.empty());
  EXPECT_EQ(float32.cpu_weights()->layers[0].qkv.format, weight_format::f32);
  expect_matrices(float32, tensor_store(ckpt.dir()), as_is);
  {
    const testing::scoped_kernel_isa exact(testing::best_float_isa());
    const kl_stats kl = kl_from_float32(float32, model);
    EXPECT_LT(kl.max, 1e-9) << kl.mean;
  }
  // avx512_bf16 and amx (the default where the CPU runs either) round the prompt's x to bf16
  // for the pair tiles or the AMX tiles: close, not exact (measured: max 2e-5).
  for (const auto isa : {cpu::kernel_isa::avx512_bf16, cpu::kernel_isa::amx}) {
    if (!cpu::cpu_runs(isa)) continue;
    const testing::scoped_kernel_isa rounded(isa);
    const kl_stats kl = kl_from_float32(float32, model);
    EXPECT_GT(kl.max, 1e-9) << cpu::to_string(isa) << "'s bf16 products did not run";
    EXPECT_LT(kl.max, 1e-3) << cpu::to_string(isa) << " " << kl.mean;
  }
  EXPECT_LT(model.bytes_read_per_token(), float32.bytes_read_per_token() * 0.51);
}

TEST(weight_storage, int8_equals_the_reference_quantization_within_a_kl_bound) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  testing::random_model ckpt("int8", std::string(small_llama) + " --vocab 512 --dtype bf16");
  const llama_model model(ckpt.dir(), {}, {"auto", "int8"});
  EXPECT_EQ(model.storage().format, weight_format::q8);
  EXPECT_EQ(model.storage().description,
            "int8, one scale per output channel, quantized at load from the checkpoint's "
            "bfloat16");
  expect_matrices(model, tensor_store(ckpt.dir()), int8_reference);
  const llama_model float32(ckpt.dir(), {}, {"float32", "none"});
  // Bound: mean 2e-3, max 5e-3 nats per step (measured 6.1e-4 and 9.4e-4 on this model).
  const kl_stats kl = kl_from_float32(float32, model);
  EXPECT_LT(kl.mean, 2e-3);
  EXPECT_LT(kl.max, 5e-3);
  EXPECT_LT(model.bytes_read_per_token(), float32.bytes_read_per_token() * 0.27);
}

TEST(weight_storage, tied_f16_checkpoints_gather_the_embedding_from_the_head) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  testing::random_model ckpt("f16", "--arch qwen3 --dtype f16");
  const llama_model model(ckpt.dir());
  EXPECT_EQ(model.storage().format, weight_format::f16);
  EXPECT_TRUE(model.cpu_weights()->embed.empty());  // one table: the head's panels
  expect_matrices(model, tensor_store(ckpt.dir()), as_is);
  const llama_model float32(ckpt.dir(), {}, {"float32", "none"});
  EXPECT_LT(kl_from_float32(float32, model).max, 1e-9);
  const llama_model int8(ckpt.dir(), {}, {"auto", "int8"});
  // Bound: mean 0.05, max 0.15 nats (measured 0.015 and 0.046): rows of only 64 weights,
  // whose largest sets the scale, and the sharp logits of a tied, q/k-normed tiny model.
  const kl_stats kl = kl_from_float32(float32, int8);
  EXPECT_LT(kl.mean, 0.05);
  EXPECT_LT(kl.max, 0.15);
}

TEST(weight_storage, a_float32_checkpoint_converts_to_the_dtype_asked_for) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  testing::random_model ckpt("f32", "--dim 64 --layers 1 --heads 4 --hidden 96 --vocab 512");
  EXPECT_EQ(llama_model(ckpt.dir()).storage().description,
            "float32 (the checkpoint's float32; --dtype auto)");
  const llama_model bf16(ckpt.dir(), {}, {"bfloat16", "none"});
  EXPECT_EQ(bf16.storage().description,
            "bfloat16 (--dtype bfloat16, from the checkpoint's float32)");
  EXPECT_EQ(bf16.cpu_weights()->layers[0].down.format, weight_format::bf16);
}

TEST(weight_storage, experts_keep_float32_under_auto_and_refuse_16_bit_or_int8) {
  testing::random_model ckpt("moe", "--arch mixtral --dtype bf16");
  const llama_model model(ckpt.dir());
  EXPECT_EQ(model.storage().format, weight_format::f32);
  EXPECT_EQ(model.storage().description,
            "float32 (the checkpoint's bfloat16 widened: 16-bit and int8 weights do not cover "
            "experts yet)");
  EXPECT_FALSE(model.packed_only());  // float32 rows, which the experts read
  EXPECT_FALSE(model.weights().layers[0].qkv.empty());
  try {
    llama_model(ckpt.dir(), {}, {"bfloat16", "none"});
    FAIL() << "bfloat16 experts loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "--dtype bfloat16: 16-bit and int8 weights do not cover experts yet (--dtype "
              "float32 serves it)");
  }
  EXPECT_THROW(llama_model(ckpt.dir(), {}, {"auto", "int8"}), std::runtime_error);
}

/// A float8 checkpoint (compressed-tensors, --quantize of make_random_model.py) of the small
/// Llama and the float32 checkpoint it was quantized from (the same seed).
void expect_float8_checkpoint(const std::string& strategy) {
  const std::string args = std::string(small_llama) + " --vocab 512";
  testing::random_model ckpt("fp8-" + strategy, args + " --dtype bf16 --quantize fp8-" + strategy);
  testing::random_model original("fp8-original-" + strategy, args);
  const llama_model model(ckpt.dir());
  EXPECT_TRUE(model.packed_only());
  EXPECT_EQ(model.storage().description,
            "float8_e4m3 projections as shipped, one scale per output channel or tensor; "
            "embedding and LM head bfloat16 (the checkpoint's bfloat16; --dtype auto)");
  const auto& layer = model.cpu_weights()->layers[0];
  EXPECT_EQ(layer.qkv.format, weight_format::fp8);
  EXPECT_EQ(layer.down.format, weight_format::fp8);
  EXPECT_EQ(model.cpu_weights()->lm_head.format, weight_format::bf16);
  expect_matrices(model, tensor_store(ckpt.dir()), as_is);
  const llama_model float32(original.dir());
  const kl_stats kl = kl_from_float32(float32, model);
  ::testing::Test::RecordProperty("kl_mean_" + strategy, std::to_string(kl.mean));
  ::testing::Test::RecordProperty("kl_max_" + strategy, std::to_string(kl.max));
  // Bound: mean 0.02, max 0.05 nats (measured 5.5e-3 and 1.0e-2 per channel, 5.5e-3 and
  // 8.1e-3 per tensor, on this model): 3 mantissa bits per weight, and the embedding and
  // head rounded to bfloat16 besides.
  EXPECT_LT(kl.mean, 0.02);
  EXPECT_LT(kl.max, 0.05);
}

TEST(weight_storage, float8_per_channel_checkpoints_read_back_exactly_within_a_kl_bound) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  expect_float8_checkpoint("channel");
}

TEST(weight_storage, float8_per_tensor_checkpoints_read_back_exactly_within_a_kl_bound) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  expect_float8_checkpoint("tensor");
}

TEST(weight_storage, float8_layouts_not_read_here_are_refused_by_name) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  testing::random_model ckpt("fp8-refused",
                             "--dim 64 --layers 1 --heads 4 --hidden 96 --vocab "
                             "512 --dtype bf16 --quantize fp8-channel");
  EXPECT_NE(refusal_of(ckpt.dir(), {{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}})
                .find("quant_method 'fp8' with weight_block_size (block-wise scales) is not "
                      "supported yet"),
            std::string::npos);
  auto group = nlohmann::json::parse(
      R"({"quant_method": "compressed-tensors", "format": "int-quantized", "config_groups":
          {"group_0": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}}})");
  EXPECT_NE(refusal_of(ckpt.dir(), group)
                .find("quant_method 'compressed-tensors' in format 'int-quantized' is not "
                      "supported yet"),
            std::string::npos);
  auto wrong_type = nlohmann::json::parse(
      R"({"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups":
          {"group_0": {"weights": {"num_bits": "8"}}}})");
  EXPECT_EQ(refusal_of(ckpt.dir(), wrong_type).rfind("config.json: quantization_config: ", 0), 0u);
  const auto fp8 = nlohmann::json{{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}};
  EXPECT_EQ(refusal_of(ckpt.dir(), fp8, {"auto", "int8"}),
            "--quantization int8: the checkpoint is float8 already (quantization_config)");
  EXPECT_EQ(refusal_of(ckpt.dir(), fp8), "loaded");  // vLLM's own fp8 name for the same layout
}

TEST(weight_storage, unsupported_quantization_methods_are_refused_by_name) {
  testing::random_model ckpt("quant", "--dim 64 --layers 1 --heads 4 --hidden 96 --vocab 512");
  try {
    llama_model(ckpt.dir(), {}, {"auto", "awq"});
    FAIL() << "--quantization awq accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--quantization awq is not supported"), std::string::npos)
        << e.what();
  }
  // A checkpoint that says it is quantized in a format not read here.
  std::ifstream in(ckpt.dir() / "config.json");
  auto config = nlohmann::json::parse(in);
  in.close();
  config["quantization_config"] = {{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}};
  std::ofstream(ckpt.dir() / "config.json") << config.dump();
  try {
    llama_model model(ckpt.dir());
    FAIL() << "a bitsandbytes checkpoint loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("quant_method 'bitsandbytes' is not supported"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace actorllm

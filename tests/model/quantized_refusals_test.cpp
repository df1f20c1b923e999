// Quantized layouts that are not read here are refused by name at load, and a GPTQ, AWQ or
// compressed-tensors file whose tensors disagree with its config (a packed tensor too short,
// a wrong dtype, a g_idx out of range or with uneven groups, a group size that does not
// divide the input features, a weight_shape that says otherwise) fails to load with an error
// naming the tensor: never a crash, never a read past a tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/llama_model.hpp"
#include "tests/model/weight_test_support.hpp"
#include "tests/support/random_models.hpp"

namespace actorllm {
namespace {

using namespace actorllm::testing;

constexpr const char* tiny = "--dim 64 --layers 1 --heads 4 --hidden 128 --vocab 512 --dtype f16";

/// A tensor of a safetensors file, as its header and bytes say.
struct raw_tensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

/// Rewrites `dir`/model.safetensors after `edit` changes its tensors (by name).
void rewrite(const std::filesystem::path& dir,
             const std::function<void(std::map<std::string, raw_tensor>&)>& edit) {
  const auto path = dir / "model.safetensors";
  std::ifstream in(path, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  uint64_t header_len;
  std::memcpy(&header_len, file.data(), 8);
  const auto header = nlohmann::json::parse(file.substr(8, header_len));
  std::map<std::string, raw_tensor> tensors;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    const auto begin = info["data_offsets"][0].get<size_t>(),
               end = info["data_offsets"][1].get<size_t>();
    tensors[name] = {info["dtype"], info["shape"].get<std::vector<int64_t>>(),
                     file.substr(8 + header_len + begin, end - begin)};
  }
  edit(tensors);
  nlohmann::json out = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    out[name] = {{"dtype", t.dtype},
                 {"shape", t.shape},
                 {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data += t.bytes;
  }
  const std::string text = out.dump();
  const uint64_t len = text.size();
  std::ofstream(path, std::ios::binary)
      << std::string(reinterpret_cast<const char*>(&len), 8) << text << data;
}

/// The error of loading `dir`, or "loaded".
std::string load_outcome(const std::filesystem::path& dir) {
  try {
    llama_model model(dir);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "loaded";
}

/// `t` cut (or zero-padded) to `shape` of elements of `size` bytes.
void reshape(raw_tensor& t, std::vector<int64_t> shape, size_t size) {
  t.bytes.resize(shape[0] * shape[1] * size);
  t.shape = std::move(shape);
}

void set_int32(raw_tensor& t, int64_t i, int32_t value) {
  std::memcpy(t.bytes.data() + 4 * i, &value, 4);
}

TEST(quantized_refusals, layouts_not_read_here_are_refused_by_name) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  testing::random_model ckpt("quant-refused",
                             std::string(tiny) + " --quantize gptq4 --group-size 32");
  ASSERT_EQ(load_outcome(ckpt.dir()), "loaded");
  const std::string gptq = R"({"quant_method": "gptq", "bits": 4, "group_size": 32)";
  const std::string ct =
      R"({"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups":
          {"group_0": {)";
  const std::pair<std::string, std::string> cases[] = {
      {gptq + R"(, "sym": false})", "quant_method 'gptq' with sym false (asymmetric)"},
      {R"({"quant_method": "gptq", "bits": 3, "group_size": 32})",
       "quant_method 'gptq' with bits 3"},
      {gptq + R"(, "checkpoint_format": "gptq_v2"})",
       "quant_method 'gptq' with checkpoint_format 'gptq_v2'"},
      {gptq + R"(, "checkpoint_format": "marlin"})",
       "quant_method 'gptq' with checkpoint_format 'marlin'"},
      {gptq.substr(0, gptq.find(", \"group_size")) + R"(, "group_size": 0})",
       "quant_method 'gptq' with group_size 0"},
      {R"({"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemv"})",
       "quant_method 'awq' with version 'gemv'"},
      {R"({"quant_method": "awq", "bits": 4, "group_size": 32, "zero_point": false})",
       "quant_method 'awq' without zero_point"},
      {ct + R"("input_activations": {"num_bits": 8, "type": "int"},
          "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}}}})",
       "in format 'pack-quantized' (group group_0: input_activations: activation quantization)"},
      {ct + R"("weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32,
          "symmetric": false}}}})",
       "in format 'pack-quantized' (group group_0: asymmetric weights)"},
      {ct + R"("weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32,
          "actorder": "group"}}}})",
       "in format 'pack-quantized' (group group_0: actorder \"group\")"},
      {ct + R"("weights": {"num_bits": 2, "type": "int", "strategy": "channel"}}}})",
       "in format 'pack-quantized' (group group_0: weights"},
      {R"({"quant_method": "compressed-tensors", "format": "marlin-24", "config_groups": {}})",
       "quant_method 'compressed-tensors' in format 'marlin-24'"},
  };
  for (const auto& [config, refusal] : cases) {
    const std::string error = refusal_of(ckpt.dir(), nlohmann::json::parse(config));
    EXPECT_NE(error.find(refusal), std::string::npos) << config << "\n -> " << error;
    EXPECT_NE(error.find("is not supported yet"), std::string::npos) << error;
  }
}

// A quantization_config over plain weights would run the floats while the log says the method.
TEST(quantized_refusals, a_quantization_config_over_plain_weights_is_refused) {
  testing::random_model plain("quant-plain", tiny);
  for (
      const char* config :
      {R"({"quant_method": "gptq", "bits": 4, "group_size": 32})",
       R"({"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm", "zero_point": true})",
       R"({"quant_method": "fp8", "activation_scheme": "dynamic"})"}) {
    const std::string error = refusal_of(plain.dir(), nlohmann::json::parse(config));
    EXPECT_NE(error.find("no projection of layer 0 is stored quantized"), std::string::npos)
        << config << "\n -> " << error;
    EXPECT_NE(error.find("model.layers.0.self_attn.q_proj.weight' holds plain weights"),
              std::string::npos)
        << error;
  }
}

/// Loads a fresh checkpoint of `quantize` after `edit` (of its tensors, then of its
/// quantization_config) and returns the error.
std::string error_after(const std::string& quantize,
                        const std::function<void(std::map<std::string, raw_tensor>&)>& edit,
                        const nlohmann::json& config_patch = nlohmann::json::object()) {
  testing::random_model ckpt("quant-hostile",
                             std::string(tiny) + " --quantize " + quantize + " --group-size 32");
  rewrite(ckpt.dir(), edit);
  if (!config_patch.empty()) {
    std::ifstream in(ckpt.dir() / "config.json");
    auto config = nlohmann::json::parse(in);
    in.close();
    config["quantization_config"].merge_patch(config_patch);
    std::ofstream(ckpt.dir() / "config.json") << config.dump();
  }
  return load_outcome(ckpt.dir());
}

const std::string q_proj = "model.layers.0.self_attn.q_proj";

TEST(quantized_refusals, tensors_that_disagree_with_the_config_are_load_errors) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  auto no_edit = [](std::map<std::string, raw_tensor>&) {};
  // qweight one int32 row short of (64 * 4 / 32, 64).
  EXPECT_EQ(error_after("gptq4",
                        [](auto& t) {
                          reshape(t[q_proj + ".qweight"], {7, 64}, 4);
                        }),
            "tensor '" + q_proj + ".qweight' has shape [7, 64], expected [8, 64]");
  EXPECT_EQ(error_after("gptq4", [](auto& t) { t[q_proj + ".qzeros"].dtype = "F32"; }),
            "tensor '" + q_proj + ".qzeros' must be int32 (I32)");
  EXPECT_EQ(error_after("gptq4", [](auto& t) { t.erase(q_proj + ".scales"); }),
            "checkpoint is missing tensor '" + q_proj + ".scales'");
  EXPECT_EQ(error_after("gptq4", [](auto& t) { set_int32(t[q_proj + ".g_idx"], 5, 2); }),
            "tensor '" + q_proj + ".g_idx': input feature 5 is in group 2, outside [0, 2)");
  EXPECT_EQ(error_after("gptq4", [](auto& t) { set_int32(t[q_proj + ".g_idx"], 5, -1); }),
            "tensor '" + q_proj + ".g_idx': input feature 5 is in group -1, outside [0, 2)");
  EXPECT_EQ(error_after("gptq4", [](auto& t) { set_int32(t[q_proj + ".g_idx"], 0, 1); }),
            "tensor '" + q_proj + ".g_idx': group 0 has 31 input features, expected 32");
  EXPECT_EQ(error_after("gptq4", no_edit, {{"group_size", 48}}),
            "'" + q_proj + "': group_size 48 does not divide its 64 input features");
  EXPECT_EQ(error_after("gptq4-act", [](auto& t) { t.erase(q_proj + ".g_idx"); }),
            "checkpoint is missing tensor '" + q_proj + ".g_idx' (desc_act)");
  // q_proj's groups ordered unlike k_proj's, with which it is fused.
  EXPECT_NE(error_after("gptq4-act",
                        [](auto& t) {
                          auto& g = t[q_proj + ".g_idx"];
                          int32_t a, b;
                          std::memcpy(&a, g.bytes.data(), 4);
                          for (int64_t i = 1; i < 64; ++i) {
                            std::memcpy(&b, g.bytes.data() + 4 * i, 4);
                            if (b != a) {
                              set_int32(g, 0, b);
                              set_int32(g, i, a);
                              break;
                            }
                          }
                        })
                .find("orders its groups (g_idx) unlike"),
            std::string::npos);
  EXPECT_EQ(error_after("awq4",
                        [](auto& t) {
                          reshape(t[q_proj + ".qweight"], {64, 4}, 4);
                        }),
            "tensor '" + q_proj + ".qweight' has shape [64, 4], expected [64, 8]");
  EXPECT_EQ(error_after("w4a16",
                        [](auto& t) {
                          auto& s = t[q_proj + ".weight_shape"];
                          const int64_t dims[] = {64, 32};
                          std::memcpy(s.bytes.data(), dims, 16);
                        }),
            "tensor '" + q_proj + ".weight_shape' does not say [64, 64]");
  EXPECT_EQ(error_after("w4a16",
                        [](auto& t) {
                          reshape(t[q_proj + ".weight_scale"], {64, 1}, 2);
                        }),
            "tensor '" + q_proj + ".weight_scale' has shape [64, 1], expected [64, 2]");
  // Only one of the fused q, k and v quantized.
  EXPECT_EQ(error_after("w8a16",
                        [](auto& t) {
                          const std::string k = "model.layers.0.self_attn.k_proj";
                          t.erase(k + ".weight_packed");
                          t.erase(k + ".weight_scale");
                          t.erase(k + ".weight_shape");
                          t[k + ".weight"] = {"F16", {64, 64}, std::string(64 * 64 * 2, '\0')};
                        }),
            "'model.layers.0.self_attn.k_proj' and '" + q_proj +
                "' are fused into one projection, but only one is quantized");
}

}  // namespace
}  // namespace actorllm

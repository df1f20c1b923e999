// Loading Hugging Face folders: dtype conversion, sharded checkpoints, and clear errors for an
// unknown architecture, a missing tensor and a wrong shape.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/llama_model.hpp"
#include "model/safetensors.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;

/// A fresh folder holding a copy of stories260K's config.json with `edit` applied.
fs::path folder_with_config(const std::string& name,
                            const std::function<void(nlohmann::json&)>& edit) {
  const fs::path dir =
      fs::temp_directory_path() / ("actorllm-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ifstream in(testing::stories260k_dir() / "config.json");
  auto config = nlohmann::json::parse(in);
  edit(config);
  std::ofstream(dir / "config.json") << config.dump(2);
  return dir;
}

std::string load_error(const fs::path& dir) {
  try {
    llama_model model(dir);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(model_loading, half_and_bfloat16_convert_exactly) {
  const uint16_t halves[] = {0x3C00, 0xC000, 0x3800, 0x0001, 0x7C00, 0x0000};
  float out[6];
  convert_to_f32(tensor_dtype::f16, halves, 6, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], 0.5f);
  EXPECT_FLOAT_EQ(out[3], 5.9604645e-8f);  // the smallest subnormal
  EXPECT_TRUE(std::isinf(out[4]));
  EXPECT_EQ(out[5], 0.0f);
  const uint16_t bf[] = {0x3F80, 0xC040, 0x0000};
  convert_to_f32(tensor_dtype::bf16, bf, 3, out);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -3.0f);
  EXPECT_EQ(out[2], 0.0f);
}

TEST(model_loading, sharded_checkpoint_through_its_index) {
  const auto dir = folder_with_config("sharded", [](nlohmann::json&) {});
  fs::copy_file(testing::stories260k_dir() / "model.safetensors",
                dir / "model-00001-of-00001.safetensors");
  const safetensors_file original(testing::stories260k_dir() / "model.safetensors");
  nlohmann::json index;
  for (const auto& [name, view] : original.tensors())
    index["weight_map"][name] = "model-00001-of-00001.safetensors";
  std::ofstream(dir / "model.safetensors.index.json") << index.dump();
  llama_model sharded(dir);
  llama_model plain(testing::stories260k_dir());
  EXPECT_EQ(sharded.weights().embed, plain.weights().embed);
  EXPECT_EQ(sharded.weights().layers.back().down, plain.weights().layers.back().down);
  fs::remove_all(dir);
}

TEST(model_loading, unknown_architecture_is_named) {
  const auto dir = folder_with_config(
      "arch", [](nlohmann::json& c) { c["architectures"] = {"GPTNeoXForCausalLM"}; });
  const auto error = load_error(dir);
  EXPECT_NE(error.find("unsupported architecture 'GPTNeoXForCausalLM'"), std::string::npos)
      << error;
  fs::remove_all(dir);
}

TEST(model_loading, missing_tensor_and_wrong_shape_are_named) {
  auto dir = folder_with_config("missing", [](nlohmann::json&) {});
  {
    // A checkpoint holding the embedding table only.
    const std::string header =
        R"({"model.embed_tokens.weight":{"dtype":"F32","shape":[512,64],"data_offsets":[0,131072]}})";
    std::ofstream out(dir / "model.safetensors", std::ios::binary);
    const uint64_t len = header.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out << header;
    const std::vector<char> zeros(131072, 0);
    out.write(zeros.data(), zeros.size());
  }
  auto error = load_error(dir);
  EXPECT_NE(error.find("missing tensor 'model.layers.0.input_layernorm.weight'"), std::string::npos)
      << error;
  fs::remove_all(dir);

  dir = folder_with_config("shape", [](nlohmann::json& c) { c["vocab_size"] = 600; });
  fs::copy_file(testing::stories260k_dir() / "model.safetensors", dir / "model.safetensors");
  error = load_error(dir);
  EXPECT_NE(error.find("'model.embed_tokens.weight' has shape [512, 64], expected [600, 64]"),
            std::string::npos)
      << error;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace actorllm

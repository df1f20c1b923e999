// Loading Hugging Face folders: dtype conversion, sharded checkpoints, and clear errors for an
// unknown architecture, a missing tensor and a wrong shape.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/llama_model.hpp"
#include "model/safetensors.hpp"
#include "tests/support/random_models.hpp"
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

// Each absurd or mistyped config.json value is refused with the file and the field named,
// never a crash (a zero head count divided by zero; a 2^31 context allocated without bound).
TEST(model_loading, absurd_config_values_are_refused_naming_the_field) {
  const std::vector<std::pair<std::function<void(nlohmann::json&)>, std::string>> cases = {
      {[](auto& c) { c["num_attention_heads"] = 0; }, "field 'num_attention_heads' must be in"},
      {[](auto& c) { c["num_hidden_layers"] = 0; }, "field 'num_hidden_layers' must be in"},
      {[](auto& c) { c["max_position_embeddings"] = 0; }, "field 'max_position_embeddings'"},
      {[](auto& c) { c["max_position_embeddings"] = 2147483647; },
       "field 'max_position_embeddings' must be in"},
      {[](auto& c) { c["hidden_size"] = 64.5; }, "field 'hidden_size' must be a whole number"},
      {[](auto& c) { c["hidden_size"] = "64"; }, "field 'hidden_size' must be an integer"},
      {[](auto& c) { c["vocab_size"] = -3; }, "field 'vocab_size' must be in"},
      {[](auto& c) { c["vocab_size"] = 18446744073709551615ull; }, "field 'vocab_size' must be in"},
      {[](auto& c) { c["rope_theta"] = 0; }, "field 'rope_theta' must be above 0"},
      {[](auto& c) { c["rope_theta"] = -10000.0; }, "field 'rope_theta' must be above 0"},
      {[](auto& c) { c["rms_norm_eps"] = -1e-5; }, "field 'rms_norm_eps' must be above 0"},
      {[](auto& c) { c["hidden_act"] = "gelu_pytorch_tanh"; }, "field 'hidden_act'"},
      {[](auto& c) { c["num_key_value_heads"] = 3; }, "must be a multiple of num_key_value_heads"},
      {[](auto& c) { c["num_key_value_heads"] = 16; }, "field 'num_key_value_heads' must be in"},
      {[](auto& c) { c["hidden_size"] = 60; }, "must be a multiple of num_attention_heads"},
      {[](auto& c) { c["head_dim"] = 7; }, "field 'head_dim' must be even"},
      {[](auto& c) { c["tie_word_embeddings"] = "yes"; }, "field 'tie_word_embeddings' must be"},
      {[](auto& c) { c["eos_token_id"] = 512; }, "field 'eos_token_id' must be in [0, 511]"},
      {[](auto& c) {
         c["eos_token_id"] = {2, "x"};
       },
       "field 'eos_token_id' must hold integers"},
      {[](auto& c) { c["architectures"] = "LlamaForCausalLM"; }, "field 'architectures'"},
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", -8.0}};
       },
       "field 'factor' must be above 0"},
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "mrope"}};
       },
       "field 'mrope_section' is required for mrope"},
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "mrope"}, {"mrope_section", {2, 3, 4}}};
       },
       "field 'mrope_section' must be three numbers of rotary pairs"},
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 9e5}};
       },
       "field 'rope_scaling' stretches the context"},
      {[](auto& c) {
         c["rope_scaling"] = {
             {"rope_type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0}}};
       },
       "field 'short_factor' must list head_dim / 2"},
      // Keys Hugging Face requires, which a made-up default would replace.
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "linear"}};
       },
       "field 'factor' is required for linear scaling"},
      {[](auto& c) {
         c["rope_scaling"] = {{"type", "dynamic"}};
       },
       "field 'factor' is required for dynamic scaling"},
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
       },
       "field 'original_max_position_embeddings' is required for llama3 scaling"},
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 8.0},
                              {"original_max_position_embeddings", 64},
                              {"high_freq_factor", 4.0}};
       },
       "field 'low_freq_factor' is required for llama3 scaling"},
      {[](auto& c) {
         c["rope_scaling"] = {{"rope_type", "longrope"}, {"long_factor", {1.0}}};
       },
       "field 'short_factor' is required for longrope scaling"},
      {[](auto& c) {
         c["architectures"] = {"Qwen2ForCausalLM"};
         c["layer_types"] = {"full_attention"};
       },
       "field 'layer_types' lists 1"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto dir = folder_with_config("absurd" + std::to_string(i), cases[i].first);
    const std::string error = load_error(dir);
    EXPECT_NE(error.find("config.json"), std::string::npos) << "case " << i << ": " << error;
    EXPECT_NE(error.find(cases[i].second), std::string::npos) << "case " << i << ": " << error;
    fs::remove_all(dir);
  }
}

// Rope scalings that stretch the context say so in the model's context length, as vLLM
// derives it; the others keep max_position_embeddings.
TEST(model_loading, rope_scaling_sets_the_context_each_allows) {
  const std::vector<std::pair<nlohmann::json, int64_t>> cases = {
      {nullptr, 512},
      {{{"rope_type", "linear"}, {"factor", 2.0}}, 1024},
      {{{"type", "dynamic"}, {"factor", 4.0}}, 2048},
      {{{"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 256}}, 1024},
      {{{"rope_type", "llama3"},
        {"factor", 8.0},
        {"original_max_position_embeddings", 64},
        {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0}},
       512},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto dir = folder_with_config("context" + std::to_string(i), [&](nlohmann::json& c) {
      c["max_position_embeddings"] = 512;
      if (!cases[i].first.is_null()) c["rope_scaling"] = cases[i].first;
    });
    fs::copy_file(testing::stories260k_dir() / "model.safetensors", dir / "model.safetensors");
    const llama_model model(dir);
    EXPECT_EQ(model.config().max_context(), cases[i].second) << cases[i].first.dump();
    EXPECT_EQ(static_cast<int64_t>(model.weights().cos_sin().size()),
              cases[i].second * model.config().head_dim);
    fs::remove_all(dir);
  }
}

/// Writes a safetensors file at `path` with `header` and `data_bytes` zero bytes of data.
void write_safetensors(const fs::path& path, const std::string& header, size_t data_bytes) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header;
  const std::vector<char> zeros(data_bytes, 0);
  out.write(zeros.data(), zeros.size());
}

TEST(model_loading, hostile_safetensors_headers_are_refused_naming_the_tensor) {
  const auto dir = folder_with_config("hostile", [](nlohmann::json&) {});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
       R"("b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
       "tensors 'a' and 'b' overlap"},
      {R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", "tensor 'a' has a dimension"},
      {R"({"a":{"dtype":"F32","shape":[32,32,32],"data_offsets":[0,16]}})",
       "tensor 'a' is larger than the file"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0]}})", "tensor 'a' has no data_offsets"},
      {R"({"a":{"dtype":7,"shape":[4],"data_offsets":[0,16]}})", "tensor 'a' has no dtype"},
      {R"({"a":[1,2]})", "tensor 'a' is not described by an object"},
      {R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,48]}})",
       "tensor 'a' has inconsistent data offsets"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    write_safetensors(dir / "model.safetensors", cases[i].first, 32);
    std::string error;
    try {
      safetensors_file file(dir / "model.safetensors");
    } catch (const std::runtime_error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find(cases[i].second), std::string::npos) << "case " << i << ": " << error;
  }
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

// A checkpoint's tensors that its config turns off would be dropped without a word.
TEST(model_loading, a_shared_expert_the_config_turns_off_is_refused) {
  const testing::random_model m("qwen2moe-unshared", "--arch qwen2_moe");
  nlohmann::json config;
  {
    std::ifstream in(m.dir() / "config.json");
    config = nlohmann::json::parse(in);
  }
  config["shared_expert_intermediate_size"] = 0;
  std::ofstream(m.dir() / "config.json") << config.dump();
  const std::string error = load_error(m.dir());
  EXPECT_NE(error.find("shared_expert_intermediate_size is 0"), std::string::npos) << error;
  EXPECT_NE(error.find("shared_expert"), std::string::npos) << error;
}

// A header past safetensors' 100 MB is no checkpoint's: refused before it is parsed. The file
// is sparse, so the test writes a few bytes.
TEST(model_loading, a_header_beyond_the_formats_bound_is_refused) {
  const fs::path path = fs::temp_directory_path() / "actorllm-huge-header.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t len = 120'000'000;
    out.write(reinterpret_cast<const char*>(&len), 8);
  }
  fs::resize_file(path, 150'000'000);
  try {
    safetensors_file file(path);
    ADD_FAILURE() << "a 120 MB header was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("more than the format's 100000000"), std::string::npos)
        << e.what();
  }
  fs::remove(path);
}

}  // namespace
}  // namespace actorllm

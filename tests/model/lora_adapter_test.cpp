// PEFT LoRA adapters checked against their base model (stories260K): every pair read as
// written, the scaling of plain and rank-stabilised LoRA, the dense update B·A·scaling, and
// each kind of hostile folder refused with a line naming the fault.
#include "model/lora_adapter.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;

struct written_tensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// Writes `tensors` as an F32 safetensors file.
void write_f32(const fs::path& path, const std::map<std::string, written_tensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const size_t bytes = t.values.size() * sizeof(float);
    header[name] = {
        {"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = text.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << text;
  for (const auto& [name, t] : tensors)
    out.write(reinterpret_cast<const char*>(t.values.data()),
              static_cast<std::streamsize>(t.values.size() * sizeof(float)));
}

class lora_adapter_test : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = load_model_config(testing::stories260k_dir());
    dir_ = fs::temp_directory_path() / ("actorllm-lora-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  /// An adapter of rank `rank` on q_proj and down_proj of every layer, values from `value`.
  std::map<std::string, written_tensor> pairs(int64_t rank,
                                              const std::vector<std::string>& modules) {
    std::map<std::string, written_tensor> tensors;
    for (int64_t layer = 0; layer < base_.num_layers; ++layer) {
      for (const std::string& m : modules) {
        const bool mlp = m == "down_proj" || m == "gate_proj" || m == "up_proj";
        const int64_t in = m == "down_proj" ? base_.intermediate_size
                           : m == "o_proj"  ? base_.q_size()
                                            : base_.hidden_size;
        const int64_t out = m == "q_proj"                        ? base_.q_size()
                            : m == "k_proj" || m == "v_proj"     ? base_.kv_size()
                            : m == "gate_proj" || m == "up_proj" ? base_.intermediate_size
                                                                 : base_.hidden_size;
        const std::string prefix = "base_model.model.model.layers." + std::to_string(layer) +
                                   (mlp ? ".mlp." : ".self_attn.") + m + ".";
        written_tensor a{{rank, in}, {}}, b{{out, rank}, {}};
        for (int64_t i = 0; i < rank * in; ++i) a.values.push_back(value(layer, 0, i));
        for (int64_t i = 0; i < out * rank; ++i) b.values.push_back(value(layer, 1, i));
        tensors[prefix + "lora_A.weight"] = a;
        tensors[prefix + "lora_B.weight"] = b;
      }
    }
    return tensors;
  }
  static float value(int64_t layer, int which, int64_t i) {
    return static_cast<float>(((layer * 131 + which * 17 + i * 7) % 23) - 11) / 64.0f;
  }
  void write(const nlohmann::json& config, const std::map<std::string, written_tensor>& tensors) {
    std::ofstream(dir_ / "adapter_config.json") << config.dump();
    write_f32(dir_ / "adapter_model.safetensors", tensors);
  }
  std::string refusal(const nlohmann::json& config,
                      const std::map<std::string, written_tensor>& tensors, int32_t max_rank = 64) {
    write(config, tensors);
    try {
      lora_adapter::load("bad", dir_, base_, max_rank);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

  /// The refusal of the folder as it is now.
  std::string refusal_without_writing() {
    try {
      lora_adapter::load("bad", dir_, base_, 64);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

  model_config_hf base_;
  fs::path dir_;
};

nlohmann::json config_of(int64_t rank, double alpha, std::vector<std::string> modules) {
  return {{"peft_type", "LORA"},       {"r", rank},      {"lora_alpha", alpha},
          {"target_modules", modules}, {"bias", "none"}, {"lora_dropout", 0.05}};
}

TEST_F(lora_adapter_test, reads_every_pair_as_written_with_its_scaling) {
  const std::vector<std::string> modules{"q_proj", "down_proj"};
  const auto tensors = pairs(4, modules);
  write(config_of(4, 16, modules), tensors);
  const lora_adapter a = lora_adapter::load("sql", dir_, base_, 16);
  EXPECT_EQ(a.name, "sql");
  EXPECT_EQ(a.rank, 4);
  EXPECT_FLOAT_EQ(a.scaling, 4.0f);  // lora_alpha / r
  ASSERT_EQ(static_cast<int64_t>(a.layers.size()), base_.num_layers);
  for (int64_t layer = 0; layer < base_.num_layers; ++layer) {
    const auto& q = a.layers[layer][static_cast<size_t>(lora_target::q_proj)];
    const auto& down = a.layers[layer][static_cast<size_t>(lora_target::down_proj)];
    ASSERT_TRUE(q && down);
    EXPECT_FALSE(a.layers[layer][static_cast<size_t>(lora_target::v_proj)]);
    const std::string prefix = "base_model.model.model.layers." + std::to_string(layer);
    EXPECT_EQ(q->a, tensors.at(prefix + ".self_attn.q_proj.lora_A.weight").values);
    // B as the file has it (out, rank), read back from its transpose.
    const auto& b = tensors.at(prefix + ".self_attn.q_proj.lora_B.weight").values;
    ASSERT_EQ(q->b_t.size(), b.size());
    for (int64_t o = 0; o < q->out; ++o)
      for (int64_t r = 0; r < 4; ++r) EXPECT_EQ(q->b_t[r * q->out + o], b[o * 4 + r]);
    EXPECT_EQ(down->a, tensors.at(prefix + ".mlp.down_proj.lora_A.weight").values);
    EXPECT_EQ(down->in, base_.intermediate_size);
    EXPECT_EQ(down->out, base_.hidden_size);
  }
  // The dense update, entry by entry from its definition.
  const auto d = a.delta(1, lora_target::q_proj);
  const auto& q = *a.layers[1][static_cast<size_t>(lora_target::q_proj)];
  for (int64_t o : {int64_t{0}, q.out / 2, q.out - 1})
    for (int64_t i : {int64_t{0}, q.in - 1}) {
      double sum = 0;
      for (int64_t r = 0; r < 4; ++r) sum += double(q.b_t[r * q.out + o]) * q.a[r * q.in + i];
      EXPECT_NEAR(d[o * q.in + i], 4.0 * sum, 1e-6) << o << "," << i;
    }
  EXPECT_TRUE(a.delta(0, lora_target::k_proj).empty());

  auto rs = config_of(4, 16, modules);
  rs["use_rslora"] = true;
  write(rs, tensors);
  EXPECT_FLOAT_EQ(lora_adapter::load("rs", dir_, base_, 16).scaling, 8.0f);  // 16 / sqrt(4)
}

TEST_F(lora_adapter_test, hostile_folders_are_refused_naming_the_fault) {
  const std::vector<std::string> modules{"q_proj"};
  const auto good = pairs(4, modules);
  const auto contains = [](const std::string& text, const char* what) {
    return text.find(what) != std::string::npos;
  };
  EXPECT_TRUE(contains(refusal(config_of(4, 8, modules), good, 2), "above --max-lora-rank 2"));
  EXPECT_TRUE(contains(refusal(config_of(4, 8, {"embed_tokens"}), good), "embed_tokens"));
  auto bias = config_of(4, 8, modules);
  bias["bias"] = "all";
  EXPECT_TRUE(contains(refusal(bias, good), "bias"));
  auto dora = config_of(4, 8, modules);
  dora["use_dora"] = true;
  EXPECT_TRUE(contains(refusal(dora, good), "DoRA"));
  auto saved = config_of(4, 8, modules);
  saved["modules_to_save"] = {"lm_head"};
  EXPECT_TRUE(contains(refusal(saved, good), "modules_to_save"));
  EXPECT_TRUE(contains(refusal(config_of(0, 8, modules), good), "r must be"));
  // The file: a missing pair, a wrong shape, a pair for a module not listed.
  auto missing = good;
  missing.erase(missing.begin());
  EXPECT_TRUE(contains(refusal(config_of(4, 8, modules), missing), "missing tensor"));
  auto wrong = good;
  wrong.begin()->second.shape = {4, 3};
  wrong.begin()->second.values.resize(12);
  EXPECT_TRUE(contains(refusal(config_of(4, 8, modules), wrong), "should be"));
  EXPECT_TRUE(contains(refusal(config_of(4, 8, modules), pairs(4, {"q_proj", "v_proj"})),
                       "not LoRA pairs of the listed target modules"));
  EXPECT_TRUE(contains(refusal(config_of(8, 8, modules), good), "should be"));  // rank differs
  // Weights no trained adapter holds, which would make every output of its requests NaN.
  for (const float poison : {std::nanf(""), INFINITY, -3e38f, 70000.0f}) {
    auto bad = good;
    bad.begin()->second.values[1] = poison;
    EXPECT_TRUE(contains(refusal(config_of(4, 8, modules), bad), "not a finite weight")) << poison;
  }
  // Files that are not regular ones: a FIFO would block the load for ever (nothing writes it).
  fs::remove(dir_ / "adapter_model.safetensors");
  ASSERT_EQ(::mkfifo((dir_ / "adapter_model.safetensors").c_str(), 0600), 0);
  EXPECT_TRUE(contains(refusal_without_writing(), "is not a regular file"));
  fs::remove(dir_ / "adapter_model.safetensors");
  fs::remove(dir_ / "adapter_config.json");
  ASSERT_EQ(::mkfifo((dir_ / "adapter_config.json").c_str(), 0600), 0);
  EXPECT_TRUE(contains(refusal_without_writing(), "adapter_config.json is not a regular file"));
  fs::remove(dir_ / "adapter_config.json");
  try {
    lora_adapter::load("none", dir_, base_, 8);
    ADD_FAILURE() << "a folder without adapter_config.json loaded";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains(e.what(), "no adapter_config.json"));
  }
}

}  // namespace
}  // namespace actorllm

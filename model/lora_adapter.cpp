#include "model/lora_adapter.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "model/safetensors.hpp"

namespace actorllm {

namespace {

/// float16's largest value: the bound on an adapter's weights.
constexpr float max_lora_weight = 65504.0f;
/// adapter_config.json is a few hundred bytes; a megabyte is no adapter's.
constexpr uintmax_t max_adapter_config_bytes = 1 << 20;

constexpr lora_target all_targets[] = {
    lora_target::q_proj,    lora_target::k_proj,  lora_target::v_proj,   lora_target::o_proj,
    lora_target::gate_proj, lora_target::up_proj, lora_target::down_proj};

/// (in, out) of a projection of `base`.
std::pair<int64_t, int64_t> shape_of(lora_target t, const model_config_hf& c) {
  switch (t) {
    case lora_target::q_proj:
      return {c.hidden_size, c.q_size()};
    case lora_target::k_proj:
    case lora_target::v_proj:
      return {c.hidden_size, c.kv_size()};
    case lora_target::o_proj:
      return {c.q_size(), c.hidden_size};
    case lora_target::gate_proj:
    case lora_target::up_proj:
      return {c.hidden_size, c.intermediate_size};
    case lora_target::down_proj:
      return {c.intermediate_size, c.hidden_size};
  }
  return {0, 0};
}

const char* module_of(lora_target t) {
  return t == lora_target::gate_proj || t == lora_target::up_proj || t == lora_target::down_proj
             ? "mlp"
             : "self_attn";
}

}  // namespace

const char* to_string(lora_target target) {
  switch (target) {
    case lora_target::q_proj:
      return "q_proj";
    case lora_target::k_proj:
      return "k_proj";
    case lora_target::v_proj:
      return "v_proj";
    case lora_target::o_proj:
      return "o_proj";
    case lora_target::gate_proj:
      return "gate_proj";
    case lora_target::up_proj:
      return "up_proj";
    case lora_target::down_proj:
      return "down_proj";
  }
  return "?";
}

lora_adapter lora_adapter::load(const std::string& name, const std::filesystem::path& folder,
                                const model_config_hf& base, int32_t max_rank) {
  const std::string where = "LoRA adapter '" + name + "' (" + folder.string() + "): ";
  auto fail = [&](const std::string& what) { throw std::runtime_error(where + what); };
  // Regular files of bounded size only: a FIFO would block the load for ever, a device or a
  // huge file hold it for long.
  const std::filesystem::path config_path = folder / "adapter_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec)) fail("no adapter_config.json");
  if (!std::filesystem::is_regular_file(config_path, ec))
    fail("adapter_config.json is not a regular file");
  if (std::filesystem::file_size(config_path, ec) > max_adapter_config_bytes)
    fail("adapter_config.json is larger than " + std::to_string(max_adapter_config_bytes) +
         " bytes");
  std::ifstream in(config_path);
  if (!in) fail("no adapter_config.json");
  const auto config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) fail("adapter_config.json is not a JSON object");
  if (config.value("peft_type", std::string("LORA")) != "LORA")
    fail("peft_type must be LORA, got " + config["peft_type"].dump());
  if (!config.contains("r") || !config["r"].is_number_integer() || config["r"].get<int64_t>() < 1)
    fail("r must be a whole number >= 1");
  const int64_t rank = config["r"].get<int64_t>();
  if (rank > max_rank)
    fail("rank " + std::to_string(rank) + " is above --max-lora-rank " + std::to_string(max_rank));
  const double alpha = config.contains("lora_alpha") && config["lora_alpha"].is_number()
                           ? config["lora_alpha"].get<double>()
                           : static_cast<double>(rank);
  // Options that change the update itself are refused rather than ignored.
  if (config.value("bias", std::string("none")) != "none") fail("bias must be none");
  if (config.value("fan_in_fan_out", false)) fail("fan_in_fan_out is not supported");
  if (config.value("use_dora", false)) fail("DoRA (use_dora) is not supported");
  if (config.contains("modules_to_save") && !config["modules_to_save"].is_null())
    fail("modules_to_save is not supported (only LoRA pairs are applied)");
  if (config.contains("layers_to_transform") && !config["layers_to_transform"].is_null())
    fail("layers_to_transform is not supported");

  std::array<bool, num_lora_targets> wanted{};
  const auto& targets = config.contains("target_modules") ? config["target_modules"] : nullptr;
  if (!targets.is_array() || targets.empty())
    fail("target_modules must be a list of projection names");
  for (const auto& t : targets) {
    const std::string module = t.is_string() ? t.get<std::string>() : t.dump();
    bool known = false;
    for (lora_target target : all_targets)
      if (module == to_string(target)) wanted[static_cast<size_t>(target)] = known = true;
    if (!known)
      fail("target module '" + module +
           "' is not a projection this model can adapt (q_proj, k_proj, v_proj, o_proj, "
           "gate_proj, up_proj, down_proj)");
  }

  lora_adapter adapter;
  adapter.name = name;
  adapter.rank = static_cast<int32_t>(rank);
  adapter.scaling = static_cast<float>(config.value("use_rslora", false)
                                           ? alpha / std::sqrt(static_cast<double>(rank))
                                           : alpha / static_cast<double>(rank));
  adapter.layers.resize(static_cast<size_t>(base.num_layers));
  const safetensors_file file(folder / "adapter_model.safetensors");
  const auto& tensors = file.tensors();
  auto read = [&](const std::string& tensor, int64_t rows, int64_t cols) {
    const auto it = tensors.find(tensor);
    if (it == tensors.end()) fail("missing tensor '" + tensor + "'");
    const tensor_view& v = it->second;
    if (v.shape != std::vector<int64_t>{rows, cols})
      fail("tensor '" + tensor + "' should be [" + std::to_string(rows) + ", " +
           std::to_string(cols) + "]");
    if (v.dtype != tensor_dtype::f32 && v.dtype != tensor_dtype::f16 &&
        v.dtype != tensor_dtype::bf16)
      fail("tensor '" + tensor + "' must be F32, F16 or BF16");
    std::vector<float> values(static_cast<size_t>(rows * cols));
    convert_to_f32(v.dtype, v.data, rows * cols, values.data());
    // NaN, infinities and values past float16's range (no trained adapter holds them) would
    // turn every output of the adapter's requests into NaN: refused here, not served.
    for (const float value : values)
      if (!(std::fabs(value) <= max_lora_weight))
        fail("tensor '" + tensor + "' holds " + std::to_string(value) +
             ", not a finite weight of magnitude at most 65504");
    return values;
  };
  size_t num_used = 0;
  for (int64_t layer = 0; layer < base.num_layers; ++layer) {
    for (lora_target target : all_targets) {
      if (!wanted[static_cast<size_t>(target)]) continue;
      const auto [in_features, out_features] = shape_of(target, base);
      const std::string prefix = "base_model.model.model.layers." + std::to_string(layer) + "." +
                                 module_of(target) + "." + to_string(target) + ".";
      lora_pair pair;
      pair.in = in_features;
      pair.out = out_features;
      pair.a = read(prefix + "lora_A.weight", rank, in_features);
      const std::vector<float> b = read(prefix + "lora_B.weight", out_features, rank);
      pair.b_t.resize(b.size());
      for (int64_t o = 0; o < out_features; ++o)
        for (int64_t r = 0; r < rank; ++r) pair.b_t[r * out_features + o] = b[o * rank + r];
      adapter.layers[static_cast<size_t>(layer)][static_cast<size_t>(target)] = std::move(pair);
      num_used += 2;
    }
  }
  // A tensor nothing reads is a sign of an adapter made for another model.
  if (num_used != tensors.size())
    fail(std::to_string(tensors.size() - num_used) +
         " tensor(s) of the file are not LoRA pairs of the listed target modules of this model");
  return adapter;
}

std::vector<float> lora_adapter::delta(int64_t layer, lora_target target) const {
  const auto& pair = layers.at(static_cast<size_t>(layer))[static_cast<size_t>(target)];
  if (!pair) return {};
  std::vector<float> d(static_cast<size_t>(pair->out * pair->in), 0.0f);
  for (int64_t o = 0; o < pair->out; ++o)
    for (int64_t i = 0; i < pair->in; ++i) {
      double sum = 0.0;
      for (int64_t r = 0; r < rank; ++r)
        sum += double(pair->b_t[r * pair->out + o]) * double(pair->a[r * pair->in + i]);
      d[o * pair->in + i] = static_cast<float>(scaling * sum);
    }
  return d;
}

}  // namespace actorllm

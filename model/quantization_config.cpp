// config.json's quantization_config: which quantized layouts are read (weight_options.hpp),
// and a refusal naming the method and the part of it for every other.
#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "model/weight_options.hpp"

namespace actorllm {

namespace {

using method = checkpoint_quantization::method;

[[noreturn]] void refuse(const std::string& name, const std::string& what) {
  throw std::runtime_error(
      "config.json: quantization_config's quant_method '" + name + "'" + what +
      " is not supported yet (GPTQ 4- or 8-bit symmetric, AWQ GEMM 4-bit, compressed-tensors "
      "pack-quantized W4A16 / W8A16 or float8 weights with per-channel or per-tensor scales, "
      "or float32, float16 or bfloat16 tensors; --quantization int8 or int4 quantizes one at "
      "load)");
}

/// group_size as the methods write it: -1 (one group per output channel) or a positive size.
int64_t read_group_size(const std::string& name, const nlohmann::json& value) {
  const int64_t size = value.get<int64_t>();
  if (size != -1 && size <= 0) refuse(name, " with group_size " + std::to_string(size));
  return size;
}

/// AutoGPTQ's quantize_config: bits, group_size, sym, desc_act, checkpoint_format.
checkpoint_quantization read_gptq(const nlohmann::json& q) {
  checkpoint_quantization c{method::gptq, q.value("bits", 0), -1, q.value("desc_act", false)};
  if (c.bits != 4 && c.bits != 8) refuse("gptq", " with bits " + std::to_string(c.bits));
  if (q.contains("group_size")) c.group_size = read_group_size("gptq", q["group_size"]);
  if (!q.value("sym", true)) refuse("gptq", " with sym false (asymmetric)");
  const std::string format = q.value("checkpoint_format", "gptq");
  if (format != "gptq") refuse("gptq", " with checkpoint_format '" + format + "'");
  if (q.value("is_marlin_format", false)) refuse("gptq", " with is_marlin_format");
  return c;
}

/// AutoAWQ's quant_config as config.json carries it: bits (w_bit), group_size (q_group_size),
/// zero_point, version.
checkpoint_quantization read_awq(const nlohmann::json& q) {
  checkpoint_quantization c{method::awq, q.value("bits", q.value("w_bit", 0)), -1, false};
  std::string version = q.value("version", "gemm");
  std::transform(version.begin(), version.end(), version.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  if (version != "gemm") refuse("awq", " with version '" + q.value("version", "") + "'");
  if (c.bits != 4) refuse("awq", " with bits " + std::to_string(c.bits));
  if (!q.value("zero_point", true)) refuse("awq", " without zero_point");
  if (q.contains("group_size"))
    c.group_size = read_group_size("awq", q["group_size"]);
  else if (q.contains("q_group_size"))
    c.group_size = read_group_size("awq", q["q_group_size"]);
  return c;
}

/// compressed-tensors: float-quantized float8 weights, or pack-quantized integer weights
/// (symmetric, weights only), every config group alike.
checkpoint_quantization read_compressed_tensors(const nlohmann::json& q) {
  const std::string name = "compressed-tensors";
  const std::string format = q.value("format", "");
  if (format != "float-quantized" && format != "pack-quantized")
    refuse(name, " in format '" + format + "'");
  if (!q.contains("config_groups") || !q["config_groups"].is_object() || q["config_groups"].empty())
    refuse(name, " without groups");
  std::optional<checkpoint_quantization> first;
  for (const auto& [group_name, group] : q["config_groups"].items()) {
    const auto& w = group.value("weights", nlohmann::json::object());
    const std::string strategy = w.value("strategy", "");
    const std::string where = " (group " + group_name + ": ";
    if (format == "float-quantized") {
      if (w.value("num_bits", 0) != 8 || w.value("type", "") != "float" ||
          (strategy != "channel" && strategy != "tensor"))
        refuse(name, where + "weights " + w.dump() + ")");
      continue;
    }
    for (const char* part : {"input_activations", "output_activations"})
      if (group.contains(part) && !group[part].is_null())
        refuse(name, " in format 'pack-quantized'" + where + part + ": activation quantization)");
    checkpoint_quantization c{method::pack_quantized, w.value("num_bits", 0), -1, false};
    if (w.value("type", "") != "int" || (c.bits != 4 && c.bits != 8))
      refuse(name, " in format 'pack-quantized'" + where + "weights " + w.dump() + ")");
    if (!w.value("symmetric", true))
      refuse(name, " in format 'pack-quantized'" + where + "asymmetric weights)");
    if (w.contains("actorder") && !w["actorder"].is_null())
      refuse(name,
             " in format 'pack-quantized'" + where + "actorder " + w["actorder"].dump() + ")");
    if (strategy == "group" && w.contains("group_size"))
      c.group_size = read_group_size(name, w["group_size"]);
    else if (strategy != "channel")
      refuse(name, " in format 'pack-quantized'" + where + "strategy '" + strategy + "')");
    if (first && (first->bits != c.bits || first->group_size != c.group_size))
      refuse(name, " with config groups of different bits or group sizes");
    first = c;
  }
  return first ? *first : checkpoint_quantization{method::fp8};
}

/// read_checkpoint_quantization on the parsed object; nlohmann throws on a field of the wrong
/// type.
checkpoint_quantization read_quantization_config(const nlohmann::json& q) {
  const std::string name = q.value("quant_method", "unnamed");
  if (name == "fp8") {
    if (q.contains("weight_block_size") && !q["weight_block_size"].is_null())
      refuse(name, " with weight_block_size (block-wise scales)");
    return {method::fp8};
  }
  if (name == "gptq") return read_gptq(q);
  if (name == "awq") return read_awq(q);
  if (name == "compressed-tensors") return read_compressed_tensors(q);
  refuse(name, "");
}

}  // namespace

std::string checkpoint_quantization::description() const {
  std::string name = kind == method::gptq             ? "GPTQ"
                     : kind == method::awq            ? "AWQ"
                     : kind == method::pack_quantized ? "compressed-tensors pack-quantized"
                     : kind == method::fp8            ? "float8_e4m3"
                                                      : "none";
  if (!integer()) return name;
  name += ' ';
  name += std::to_string(bits);
  name += "-bit, ";
  if (group_size > 0) {
    name += "groups of ";
    name += std::to_string(group_size);
  } else {
    name += "one scale per channel";
  }
  if (desc_act) name += ", desc_act";
  return name;
}

checkpoint_quantization read_checkpoint_quantization(const std::string& config_json) {
  if (config_json.empty()) return {};
  try {
    return read_quantization_config(nlohmann::json::parse(config_json));
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw std::runtime_error(std::string("config.json: quantization_config: ") + e.what());
  }
}

}  // namespace actorllm

#include "model/weight_options.hpp"

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace actorllm {

namespace {

/// The dtype flag's format; f32 also for auto, which the caller resolves.
cpu::weight_format parse_dtype(const std::string& dtype) {
  if (dtype == "auto" || dtype == "float32" || dtype == "float") return cpu::weight_format::f32;
  if (dtype == "float16" || dtype == "half") return cpu::weight_format::f16;
  if (dtype == "bfloat16") return cpu::weight_format::bf16;
  throw std::runtime_error("--dtype " + dtype +
                           ": expected auto, float32, float, float16, half or bfloat16");
}

}  // namespace

weight_choice choose_weight_format(const weight_options& options, cpu::weight_format checkpoint,
                                   const std::string& why_float32_only,
                                   checkpoint_quantization quantized) {
  if (quantized == checkpoint_quantization::fp8) {
    if (options.quantization != "none" && !options.quantization.empty())
      throw std::runtime_error("--quantization " + options.quantization +
                               ": the checkpoint is float8 already (quantization_config)");
    if (!why_float32_only.empty())
      throw std::runtime_error("a float8 checkpoint: " + why_float32_only);
    weight_choice rest = choose_weight_format(options, checkpoint, "");
    rest.float8_projections = true;
    rest.description =
        "float8_e4m3 projections as shipped, one scale per output channel or tensor; "
        "embedding and LM head " +
        rest.description;
    return rest;
  }
  const std::string from = std::string("the checkpoint's ") + cpu::to_string(checkpoint);
  const cpu::weight_format asked = parse_dtype(options.dtype);
  if (options.quantization == "int8") {
    if (!why_float32_only.empty())
      throw std::runtime_error("--quantization int8: " + why_float32_only);
    return {cpu::weight_format::q8,
            "int8, one scale per output channel, quantized at load from " + from};
  }
  if (!options.quantization.empty() && options.quantization != "none")
    throw std::runtime_error("--quantization " + options.quantization +
                             " is not supported (none or int8; quantized checkpoints are "
                             "recognised from config.json)");
  const cpu::weight_format format = options.dtype == "auto" ? checkpoint : asked;
  if (format == cpu::weight_format::f32) {
    const std::string because =
        options.dtype == "auto"
            ? (checkpoint == cpu::weight_format::f32 ? from + "; --dtype auto"
                                                     : from + " widened: " + why_float32_only)
            : "--dtype " + options.dtype;
    return {cpu::weight_format::f32, "float32 (" + because + ")"};
  }
  if (!why_float32_only.empty()) {
    if (options.dtype == "auto")
      return {cpu::weight_format::f32, "float32 (" + from + " widened: " + why_float32_only + ")"};
    throw std::runtime_error("--dtype " + options.dtype + ": " + why_float32_only +
                             " (--dtype float32 serves it)");
  }
  const std::string because = options.dtype == "auto"
                                  ? from + "; --dtype auto"
                                  : "--dtype " + options.dtype + ", from " + from;
  return {format, std::string(cpu::to_string(format)) + " (" + because + ")"};
}

namespace {

/// read_checkpoint_quantization on the parsed object; nlohmann throws on a field of the wrong
/// type.
checkpoint_quantization read_quantization_config(const nlohmann::json& q) {
  const std::string method = q.value("quant_method", "unnamed");
  auto refuse = [&](const std::string& what) {
    throw std::runtime_error("config.json: quantization_config's quant_method '" + method + "'" +
                             what +
                             " is not supported yet (float8 E4M3 weights with per-channel or "
                             "per-tensor scales, or float32, float16 or bfloat16 tensors; "
                             "--quantization int8 quantizes one at load)");
  };
  if (method == "fp8") {
    if (q.contains("weight_block_size") && !q["weight_block_size"].is_null())
      refuse(" with weight_block_size (block-wise scales)");
    return checkpoint_quantization::fp8;
  }
  if (method != "compressed-tensors") refuse("");
  const std::string format = q.value("format", "");
  if (format != "float-quantized") refuse(" in format '" + format + "'");
  if (!q.contains("config_groups") || !q["config_groups"].is_object()) refuse(" without groups");
  for (const auto& [name, group] : q["config_groups"].items()) {
    const auto& w = group.value("weights", nlohmann::json::object());
    const std::string strategy = w.value("strategy", "");
    if (w.value("num_bits", 0) != 8 || w.value("type", "") != "float" ||
        (strategy != "channel" && strategy != "tensor"))
      refuse(" (group " + name + ": weights " + w.dump() + ")");
  }
  return checkpoint_quantization::fp8;
}

}  // namespace

checkpoint_quantization read_checkpoint_quantization(const std::string& config_json) {
  if (config_json.empty()) return checkpoint_quantization::none;
  try {
    return read_quantization_config(nlohmann::json::parse(config_json));
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw std::runtime_error(std::string("config.json: quantization_config: ") + e.what());
  }
}

}  // namespace actorllm

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
                                   const checkpoint_quantization& quantized) {
  using method = checkpoint_quantization::method;
  if (quantized.kind != method::none) {
    const std::string what = quantized.kind == method::fp8 ? "float8" : quantized.description();
    if (options.quantization != "none" && !options.quantization.empty())
      throw std::runtime_error("--quantization " + options.quantization + ": the checkpoint is " +
                               what + " already (quantization_config)");
    if (!why_float32_only.empty())
      throw std::runtime_error("a " + what + " checkpoint: " + why_float32_only);
    weight_choice rest = choose_weight_format(options, checkpoint, "");
    rest.projections_as_shipped = true;
    rest.description = (quantized.kind == method::fp8
                            ? "float8_e4m3 projections as shipped, one scale per output channel "
                              "or tensor"
                            : what + " projections as shipped") +
                       "; embedding and LM head " + rest.description;
    return rest;
  }
  const std::string from = std::string("the checkpoint's ") + cpu::to_string(checkpoint);
  const cpu::weight_format asked = parse_dtype(options.dtype);
  if (options.quantization == "int8" || options.quantization == "int4") {
    if (!why_float32_only.empty())
      throw std::runtime_error("--quantization " + options.quantization + ": " + why_float32_only);
    if (options.quantization == "int4")
      return {cpu::weight_format::q4, "int4, one scale per " + std::to_string(cpu::q4_group_size) +
                                          " input features (as Q4_0), quantized at load from " +
                                          from};
    return {cpu::weight_format::q8,
            "int8, one scale per output channel, quantized at load from " + from};
  }
  if (!options.quantization.empty() && options.quantization != "none")
    throw std::runtime_error("--quantization " + options.quantization +
                             " is not supported (none, int8 or int4; quantized checkpoints are "
                             "recognised from config.json)");
  const cpu::weight_format format = options.dtype == "auto" ? checkpoint : asked;
  if (format == cpu::weight_format::f32) {
    const std::string because =
        options.dtype == "auto"
            ? (checkpoint == cpu::weight_format::f32 ? from + "; --dtype auto"
                                                     : from + " widened: " + why_float32_only)
            : "--dtype " + options.dtype;
    weight_choice choice{cpu::weight_format::f32, "float32 (" + because + ")"};
    choice.float32_panels_only = why_float32_only.empty();
    return choice;
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

}  // namespace actorllm

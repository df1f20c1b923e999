#include "model/weight_options.hpp"

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
                                   const std::string& why_float32_only) {
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

void check_checkpoint_quantization(const std::string& quant_method) {
  if (quant_method.empty()) return;
  throw std::runtime_error(
      "config.json: quantization_config's quant_method '" + quant_method +
      "' is not supported yet (checkpoints of float32, float16 or bfloat16 tensors only; "
      "--quantization int8 quantizes one at load)");
}

}  // namespace actorllm

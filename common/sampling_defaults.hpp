#pragma once
/// Sampling defaults a model folder recommends (generation_config.json), applied to every
/// request before its own fields, as vLLM's --generation-config auto does: a request that
/// sets a field wins, one that leaves it out gets the model's value instead of OpenAI's.
#include <optional>
#include <sstream>
#include <string>

#include "common/sampling_params.hpp"

namespace actorllm {

struct sampling_defaults {
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<int32_t> top_k;

  bool operator==(const sampling_defaults&) const = default;
  bool empty() const { return !temperature && !top_p && !min_p && !repetition_penalty && !top_k; }

  void apply(sampling_params& p) const {
    if (temperature) p.temperature = *temperature;
    if (top_p) p.top_p = *top_p;
    if (top_k) p.top_k = *top_k;
    if (min_p) p.min_p = *min_p;
    if (repetition_penalty) p.repetition_penalty = *repetition_penalty;
  }

  /// "temperature 0.6, top_p 0.95" for the startup log.
  std::string describe() const {
    std::ostringstream out;
    auto field = [&](const char* name, const auto& value) {
      if (!value) return;
      if (out.tellp() > 0) out << ", ";
      out << name << ' ' << *value;
    };
    field("temperature", temperature);
    field("top_p", top_p);
    field("top_k", top_k);
    field("min_p", min_p);
    field("repetition_penalty", repetition_penalty);
    return out.str();
  }
};

}  // namespace actorllm

#include "actors/engine_setup/generation_defaults.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "model/config_fields.hpp"

namespace actorllm {

sampling_defaults load_generation_defaults(const std::string& setting,
                                           const std::filesystem::path& model_dir) {
  if (setting == "vllm") return {};
  const bool automatic = setting == "auto" || setting.empty();
  const auto path =
      (automatic ? model_dir : std::filesystem::path(setting)) / "generation_config.json";
  std::ifstream in(path);
  if (!in) {
    if (automatic) return {};
    throw std::runtime_error("--generation-config: cannot open " + path.string());
  }
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error(path.string() + ": not a JSON object");
  const field_reader f(j, path);
  sampling_defaults d;
  // A file that says do_sample false recommends greedy decoding: its temperature and top_p
  // describe sampling that transformers would not do (vLLM takes them as given; so do we,
  // since clients that want greedy send temperature 0).
  auto number = [&](const char* key, double lo, double hi) -> std::optional<float> {
    if (!f.has(key)) return std::nullopt;
    return static_cast<float>(f.number(key, 0.0, lo, hi));
  };
  d.temperature = number("temperature", -1e-9, 2.0 + 1e-9);
  d.top_p = number("top_p", 0.0, 1.0 + 1e-9);
  d.min_p = number("min_p", -1e-9, 1.0 + 1e-9);
  d.repetition_penalty = number("repetition_penalty", 0.0, 1e9);
  if (f.has("top_k")) d.top_k = static_cast<int32_t>(f.integer("top_k", 0, -1, 1 << 30));
  return d;
}

}  // namespace actorllm

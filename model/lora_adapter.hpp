#pragma once
/// A PEFT LoRA adapter (adapter_config.json + adapter_model.safetensors), checked against the
/// base model it adapts: each target projection W of a layer gains W + scaling · B · A, with
/// A (r, in) and B (out, r) as the file stores them and scaling = lora_alpha / r (or
/// lora_alpha / sqrt(r) with use_rslora). Multi-LoRA serving applies the pair to the
/// projection's input instead of merging it, y += scaling · (x Aᵀ) Bᵀ, so one base model
/// serves many adapters in one batch.
///
/// Hostile folders are refused with one line naming what is wrong: a rank above the server's
/// limit, a target the base model lacks or that is not a linear projection (embeddings, the LM
/// head), options that change the math (bias, fan_in_fan_out, DoRA, modules_to_save), a
/// missing tensor, a wrong shape or dtype.
#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace actorllm {

/// The projections an adapter may target, as the Hugging Face modules name them.
enum class lora_target : uint8_t { q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj };
inline constexpr size_t num_lora_targets = 7;
const char* to_string(lora_target target);

struct lora_pair {
  std::vector<float> a;    ///< (rank, in), row-major, as the file stores it
  std::vector<float> b_t;  ///< B transposed, (rank, out): what the batched kernel streams
  int64_t in = 0, out = 0;
};

struct lora_adapter {
  std::string name;
  int32_t id = 0;  ///< given by lora_registry: what requests carry (sampling_params::lora_id)
  int32_t rank = 0;
  float scaling = 1.0f;
  /// [layer][target]: the pair, where the adapter targets that projection of that layer.
  std::vector<std::array<std::optional<lora_pair>, num_lora_targets>> layers;

  /// Loads `folder` for `base` (its whole, unsharded configuration), refusing ranks above
  /// `max_rank`. Throws std::runtime_error with one line naming the folder and the fault.
  static lora_adapter load(const std::string& name, const std::filesystem::path& folder,
                           const model_config_hf& base, int32_t max_rank);

  /// The dense update scaling · B · A of one projection, (out, in): what a merged checkpoint
  /// would add to W (the reference the batched kernels are checked against).
  std::vector<float> delta(int64_t layer, lora_target target) const;
};

}  // namespace actorllm

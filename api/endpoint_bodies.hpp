#pragma once
/// The JSON bodies of the small endpoints: /v1/models, /v1/models/{id}, /version, /tokenize,
/// /detokenize and /v1/messages/count_tokens.
#include <string>
#include <string_view>
#include <vector>

#include "common/engine_port.hpp"

namespace actorllm::api {

/// Every model with its state ("loaded", "loading", "unloaded", "failed", and "error" when it
/// failed), each loaded one followed by its LoRA adapters (their base model as parent).
std::string models_json(const std::vector<model_listing>& models);
/// The model card of `id`: the model, or the adapter of that name.
std::string model_json(const model_listing& model, std::string_view id);
std::string version_json();
std::string tokenize_json(const tokenize_result& result);
std::string detokenize_json(const detokenize_result& result);
/// {"input_tokens": N}: the prompt's tokens.
std::string count_tokens_json(const tokenize_result& result);

}  // namespace actorllm::api

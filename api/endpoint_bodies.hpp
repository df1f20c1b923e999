#pragma once
/// The JSON bodies of the small endpoints: /v1/models, /v1/models/{id}, /version, /tokenize,
/// /detokenize and /v1/messages/count_tokens.
#include <string>
#include <string_view>

#include "common/engine_port.hpp"

namespace actorllm::api {

std::string models_json(const model_info& model);
std::string model_json(const model_info& model, std::string_view id);
std::string version_json();
std::string tokenize_json(const tokenize_result& result);
std::string detokenize_json(const detokenize_result& result);
/// {"input_tokens": N}: the prompt's tokens.
std::string count_tokens_json(const tokenize_result& result);

}  // namespace actorllm::api

#pragma once
/// Request fields that vLLM honors and this server cannot: structural_tag,
/// best_of, suffix, allowed_token_ids, bad_words,
/// logits_processors and continue_final_message. Ignoring one would answer with text that looks
/// right and is not what was asked, so the request is refused with a 400 naming the field. Fields
/// nobody defined are still ignored, as vLLM ignores them.
#include <nlohmann/json.hpp>
#include <optional>

#include "api/openai_protocol.hpp"

namespace actorllm::api {

std::optional<api_error> refuse_unsupported_fields(const nlohmann::json& body);

}  // namespace actorllm::api

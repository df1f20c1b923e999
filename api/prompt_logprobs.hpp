#pragma once
/// The prompt's logprobs (request_output::prompt_logprobs, on a choice's first delta) in the
/// two shapes clients read: vLLM's `prompt_logprobs` list, and the legacy completions
/// `logprobs` object that `echo` puts the prompt's tokens into.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/generate_request.hpp"

namespace actorllm::api {

/// vLLM's `prompt_logprobs`: one entry per prompt token, null for the first (nothing before it
/// to score it), else {"<token id>": {"logprob", "rank", "decoded_token"}} for the prompt's
/// token and its top alternatives. Null when the delta carries none.
nlohmann::json vllm_prompt_logprobs(const request_output& out);

/// Completions' echo with logprobs: the prompt's tokens as the legacy object's leading
/// entries ("tokens", "token_logprobs" and "top_logprobs" null for the first token, each top
/// dict keyed by text with the prompt's token among them, "text_offset" from `text_offset`,
/// which advances past the prompt). Null when the delta carries no prompt.
nlohmann::json legacy_prompt_logprobs(const request_output& out, int32_t& text_offset);

}  // namespace actorllm::api

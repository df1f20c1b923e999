#pragma once
/// vLLM's runtime LoRA endpoints: POST /v1/load_lora_adapter {"lora_name", "lora_path",
/// "base_model_name"?} and
/// POST /v1/unload_lora_adapter {"lora_name"}, on a server started with
/// --enable-lora-runtime-updates. The answer is vLLM's one line of text; a bad body is a 400.
#include <optional>
#include <string>
#include <string_view>

#include "api/openai_protocol.hpp"
#include "common/engine_port.hpp"

namespace actorllm::api {

/// Longest adapter name and path accepted.
inline constexpr size_t max_lora_name_bytes = 256;
inline constexpr size_t max_lora_path_bytes = 4096;

/// Reads the body of a load (`load`: lora_name, lora_path and, where several models are
/// served, base_model_name, the model the adapter is for) or an unload (lora_name).
std::optional<api_error> parse_lora_update(std::string_view body, bool load,
                                           lora_update_request& out);

/// Runs the update on `engine`: the success line, or the error.
std::pair<std::optional<api_error>, std::string> apply_lora_update(engine_port& engine,
                                                                   const lora_update_request& r,
                                                                   bool load);

}  // namespace actorllm::api

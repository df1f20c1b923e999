#pragma once
/// Finds a model's chat template (--chat-template FILE, else tokenizer_config.json of the
/// model folder) and wraps it as a chat_renderer; empty when the model has none.
#include <filesystem>
#include <string>

#include "actors/request_router/prompt_builder.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {

chat_renderer load_chat_renderer(const std::string& template_path,
                                 const std::filesystem::path& model_dir, const tokenizer& tok);

}  // namespace actorllm

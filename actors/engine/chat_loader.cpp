#include "actors/engine/chat_loader.hpp"

namespace actorllm {

chat_renderer load_chat_renderer(const std::string&, const std::filesystem::path&, const tokenizer&) {
  return {};
}

}  // namespace actorllm

#include "actors/engine_setup/chat_loader.hpp"

#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "chat_template/chat_template.hpp"

namespace actorllm {

namespace {

std::shared_ptr<chat_template> find_template(const std::string& template_path,
                                             const std::filesystem::path& model_dir,
                                             const tokenizer& tok) {
  if (!template_path.empty())
    return std::make_shared<chat_template>(chat_template::load(template_path));
  const auto config = model_dir / "tokenizer_config.json";
  if (std::filesystem::exists(config)) {
    try {
      return std::make_shared<chat_template>(chat_template::load(config));
    } catch (const std::exception&) {
      // A tokenizer_config.json without a chat_template: fall through to the tokenizer's.
    }
  }
  if (!tok.chat_template().empty()) return std::make_shared<chat_template>(tok.chat_template());
  return nullptr;
}

}  // namespace

chat_renderer load_chat_renderer(const std::string& template_path,
                                 const std::filesystem::path& model_dir, const tokenizer& tok) {
  auto tmpl = find_template(template_path, model_dir, tok);
  if (!tmpl) return {};
  std::string bos = tok.bos_token().empty() ? tmpl->default_bos_token() : tok.bos_token();
  std::string eos = tok.eos_token().empty() ? tmpl->default_eos_token() : tok.eos_token();
  return [tmpl, bos, eos](const std::string& chat_json, bool add_generation_prompt) {
    auto chat = nlohmann::ordered_json::parse(chat_json);
    // As vLLM gives a template of the "openai" content format: string content as one part.
    if (tmpl->iterates_content_parts() && chat.contains("messages"))
      for (auto& message : chat["messages"])
        if (message.contains("content") && message["content"].is_string())
          message["content"] = nlohmann::ordered_json::array(
              {{{"type", "text"}, {"text", message["content"].get<std::string>()}}});
    nlohmann::ordered_json vars = nlohmann::ordered_json::object();
    for (auto it = chat.begin(); it != chat.end(); ++it) vars[it.key()] = it.value();
    vars["add_generation_prompt"] = add_generation_prompt;
    vars["bos_token"] = bos;
    vars["eos_token"] = eos;
    auto result = tmpl->render(vars);
    if (!result.ok()) throw std::runtime_error(result.error);
    return result.text;
  };
}

}  // namespace actorllm

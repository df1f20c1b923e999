#pragma once
/// Chat templates: the Jinja `chat_template` of a tokenizer_config.json (or a .jinja file)
/// rendered as Hugging Face's apply_chat_template does: trim_blocks and lstrip_blocks on,
/// raise_exception / strftime_now defined, tools and documents None unless given.
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "chat_template/jinja_ast.hpp"

namespace actorllm {

class chat_template {
 public:
  /// Parses `source`. Throws jinja::error (a std::runtime_error) naming the template line of
  /// a syntax error or an unsupported construct.
  explicit chat_template(const std::string& source);

  /// Loads a .jinja file, or a tokenizer_config.json whose chat_template is used and whose
  /// bos_token / eos_token become the defaults of render(). Throws std::runtime_error.
  static chat_template load(const std::filesystem::path& path);

  struct result {
    std::string text;
    std::string error;  ///< empty on success; else the message, with the template line
    bool ok() const { return error.empty(); }
  };

  /// Renders with every key of `variables` visible: messages, add_generation_prompt,
  /// tools, bos_token, eos_token, and anything else the template reads (enable_thinking...).
  /// Errors in the template or raised by it (raise_exception) come back as values.
  result render(const nlohmann::ordered_json& variables) const;

  /// Whether the template iterates a message's content as a list of parts (vLLM's "openai"
  /// content format: `for part in message['content']`, `message.content | selectattr(...)`),
  /// so that a message's string content must reach it as one text part (a vision model's
  /// template renders nothing of a string there).
  bool iterates_content_parts() const { return iterates_content_parts_; }

  const std::string& default_bos_token() const { return bos_token_; }
  const std::string& default_eos_token() const { return eos_token_; }
  void set_default_tokens(std::string bos, std::string eos);

 private:
  std::shared_ptr<const jinja::stmt_list> body_;
  std::string bos_token_;
  std::string eos_token_;
  bool iterates_content_parts_ = false;
};

}  // namespace actorllm

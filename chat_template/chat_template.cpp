#include "chat_template/chat_template.hpp"

#include <fstream>
#include <regex>
#include <sstream>

#include "chat_template/jinja_builtins.hpp"
#include "chat_template/jinja_eval.hpp"
#include "chat_template/jinja_parser.hpp"

namespace actorllm {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string token_text(const nlohmann::ordered_json& config, const char* key) {
  if (!config.contains(key)) return "";
  const auto& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"];
  return "";
}

}  // namespace

namespace {

/// A loop over, or a filter of, some message's content: `in message['content']`,
/// `in m.content`, `message['content'] | selectattr`, ...
bool reads_content_as_parts(const std::string& source) {
  static const std::regex loop(R"(\bin\s+\w+(\[\s*['"]content['"]\s*\]|\.content\b)\s*(%|-|\|))");
  static const std::regex filter(
      R"(\w+(\[\s*['"]content['"]\s*\]|\.content\b)\s*\|\s*(selectattr|rejectattr|map|select))");
  return std::regex_search(source, loop) || std::regex_search(source, filter);
}

}  // namespace

chat_template::chat_template(const std::string& source)
    : body_(std::make_shared<const jinja::stmt_list>(jinja::parse_template(source))),
      iterates_content_parts_(reads_content_as_parts(source)) {}

chat_template chat_template::load(const std::filesystem::path& path) {
  std::string text = read_text(path);
  if (path.extension() != ".json") {
    try {
      return chat_template(text);
    } catch (const jinja::error& e) {
      throw std::runtime_error(path.string() + ": " + e.what());
    }
  }
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
  std::string source;
  if (config.contains("chat_template")) {
    const auto& t = config["chat_template"];
    if (t.is_string()) source = t;
    if (t.is_array())
      for (const auto& entry : t)
        if (entry.value("name", "") == "default") source = entry.value("template", "");
  }
  if (source.empty()) throw std::runtime_error(path.string() + ": no chat_template");
  try {
    chat_template result(source);
    result.set_default_tokens(token_text(config, "bos_token"), token_text(config, "eos_token"));
    return result;
  } catch (const jinja::error& e) {
    throw std::runtime_error(path.string() + ": " + e.what());
  }
}

void chat_template::set_default_tokens(std::string bos, std::string eos) {
  bos_token_ = std::move(bos);
  eos_token_ = std::move(eos);
}

chat_template::result chat_template::render(const nlohmann::ordered_json& variables) const {
  jinja::value_dict globals;
  jinja::add_globals(globals);
  // What apply_chat_template always passes, overridden by the caller's values.
  globals.set("tools", jinja::value::none());
  globals.set("documents", jinja::value::none());
  globals.set("add_generation_prompt", jinja::value(false));
  // Like Hugging Face, only the special tokens the tokenizer has are defined.
  if (!bos_token_.empty()) globals.set("bos_token", jinja::value(bos_token_));
  if (!eos_token_.empty()) globals.set("eos_token", jinja::value(eos_token_));
  if (variables.is_object())
    for (const auto& [k, v] : variables.items()) globals.set(k, jinja::value::from_json(v));
  result r;
  try {
    jinja::evaluator eval(std::move(globals));
    r.text = eval.render(*body_);
  } catch (const jinja::error& e) {
    r.error = e.what();
  }
  return r;
}

}  // namespace actorllm

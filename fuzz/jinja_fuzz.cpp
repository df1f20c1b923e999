// The Jinja parser and renderer of chat templates (chat_template/chat_template.hpp).
//   "@N<rest>": Hugging Face's template number N (mod their count, sorted by name) from
//               ../shared/chat-templates, rendered with <rest> as the variables (a JSON object,
//               as the server builds from a client's messages, tools and chat_template_kwargs),
//               or when <rest> is not an object, with <rest> as a user message's content.
//   otherwise:  the input is a template source, cut at the first "\n---vars---\n": what follows
//               is a JSON object of variables, else a short conversation is used.
// Parsing throws jinja::error or renders; rendering returns its errors as values; neither may
// crash, and what renders is valid UTF-8 when the variables were.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chat_template/chat_template.hpp"
#include "fuzz/fuzz_support.hpp"
#include "text/unicode.hpp"

namespace {

using namespace actorllm;
using ojson = nlohmann::ordered_json;

const std::vector<chat_template>& reference_templates() {
  static const std::vector<chat_template> templates = [] {
    std::vector<std::filesystem::path> paths;
    for (const auto& entry :
         std::filesystem::directory_iterator(fuzz::shared_dir() / "chat-templates")) {
      if (entry.path().extension() == ".jinja") paths.push_back(entry.path());
    }
    std::sort(paths.begin(), paths.end());
    std::vector<chat_template> out;
    for (const auto& path : paths) out.push_back(chat_template::load(path));
    return out;
  }();
  return templates;
}

ojson default_variables() {
  return ojson::parse(R"({
    "messages": [
      {"role": "system", "content": "You are terse."},
      {"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Hello."},
      {"role": "user", "content": "Tell me a story."}
    ],
    "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"
  })");
}

/// The server refuses JSON nested deeper than 64 (api/openai_protocol.hpp), so deeper
/// variables never reach a template.
ojson parse_variables(std::string_view text, bool as_user_message) {
  bool too_deep = false;
  ojson vars = ojson::parse(
      text,
      [&](int depth, ojson::parse_event_t, ojson&) {
        too_deep = too_deep || depth > 64;
        return true;
      },
      /*allow_exceptions=*/false);
  if (vars.is_object() && !too_deep) return vars;
  vars = default_variables();
  // Invalid UTF-8 cannot reach a template from the server (its JSON parser refuses it).
  if (as_user_message) vars["messages"][3]["content"] = unicode::to_valid_utf8(text);
  return vars;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (size >= 2 && input[0] == '@') {
    const auto& templates = reference_templates();
    const chat_template& tmpl = templates[static_cast<uint8_t>(input[1]) % templates.size()];
    const auto result = tmpl.render(parse_variables(input.substr(2), true));
    if (result.ok()) FUZZ_CHECK(unicode::is_valid_utf8(result.text));
    return 0;
  }
  const std::string_view separator = "\n---vars---\n";
  const size_t cut = input.find(separator);
  const std::string source(input.substr(0, cut));
  const ojson vars = cut == std::string_view::npos
                         ? default_variables()
                         : parse_variables(input.substr(cut + separator.size()), false);
  std::unique_ptr<chat_template> tmpl;
  try {
    tmpl = std::make_unique<chat_template>(source);
  } catch (const std::exception&) {
    return 0;  // a syntax error or an unsupported construct, named
  }
  (void)tmpl->render(vars);
  return 0;
}

// Anthropic's Messages API as the chat request it means: the translation, and the checks
// that belong to this API's own fields (chat checks the rest and names chat's fields, which
// are renamed back to this API's at the end).
#include "api/anthropic_protocol.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace actorllm::api {
namespace {

using ordered_json = nlohmann::ordered_json;

/// The fault of a field, as a 400 naming it.
std::optional<api_error> refuse(std::string message, const char* param) {
  return bad_request(std::move(message), param);
}

bool is_string(const ordered_json* v) {
  return v && v->is_string();
}

/// The text of a list of blocks that may hold only text (system, a tool_result's content).
std::optional<api_error> text_of_blocks(const ordered_json& blocks, const char* param,
                                        std::string& out) {
  if (blocks.is_string()) return out = blocks.get<std::string>(), std::nullopt;
  if (!blocks.is_array())
    return refuse(std::string(param) + " must be text or a list of blocks", param);
  if (blocks.size() > max_content_blocks)
    return refuse("at most " + std::to_string(max_content_blocks) + " content blocks per " + param,
                  param);
  for (const auto& block : blocks) {
    const ordered_json* type = block.is_object() ? given_field(block, "type") : nullptr;
    if (!is_string(type)) return refuse("each content block needs a string type", param);
    if (*type == "image")
      return refuse(std::string("image content blocks are not allowed in ") +
                        (std::string_view(param) == "system" ? "system" : "this block") +
                        "; images go in a user message's content",
                    param);
    const ordered_json* text = given_field(block, "text");
    if (*type != "text" || !is_string(text))
      return refuse(
          "content blocks of type '" + type->get<std::string>() + "' are not supported here",
          param);
    if (!out.empty()) out += "\n";
    out += text->get<std::string>();
  }
  return std::nullopt;
}

/// Anthropic's media types for images, as its API lists them.
constexpr std::string_view image_media_types[] = {"image/jpeg", "image/png", "image/gif",
                                                  "image/webp"};

/// An image block as chat's image_url part: a base64 source becomes a data: URL, a url source
/// its URL. `where` names the block (messages.0.content.1), as Anthropic's errors do.
std::optional<api_error> image_part(const ordered_json& block, const std::string& where,
                                    ordered_json& part) {
  const ordered_json* source = given_field(block, "source");
  const ordered_json* type = source && source->is_object() ? given_field(*source, "type") : nullptr;
  if (!is_string(type))
    return refuse(where +
                      ": an image block needs a source, {\"type\": \"base64\", "
                      "\"media_type\", \"data\"} or {\"type\": \"url\", \"url\"}",
                  "messages");
  std::string url;
  if (*type == "base64") {
    const ordered_json* media_type = given_field(*source, "media_type");
    const ordered_json* data = given_field(*source, "data");
    if (!is_string(media_type) ||
        std::find(std::begin(image_media_types), std::end(image_media_types),
                  media_type->get_ref<const std::string&>()) == std::end(image_media_types))
      return refuse(where +
                        ".source.media_type: must be 'image/jpeg', 'image/png', 'image/gif' or "
                        "'image/webp'",
                    "messages");
    if (!is_string(data) || data->get_ref<const std::string&>().empty())
      return refuse(where + ".source.data: must be the image's bytes in base64", "messages");
    url = "data:" + media_type->get<std::string>() + ";base64," + data->get<std::string>();
  } else if (*type == "url") {
    const ordered_json* given = given_field(*source, "url");
    if (!is_string(given) || given->get_ref<const std::string&>().empty())
      return refuse(where + ".source.url: must be the image's URL", "messages");
    url = given->get<std::string>();
  } else {
    return refuse(where + ".source.type: '" + type->get<std::string>() +
                      "' is not supported: give base64 or url (file inputs are not supported)",
                  "messages");
  }
  part = {{"type", "image_url"}, {"image_url", {{"url", std::move(url)}}}};
  return std::nullopt;
}

/// Anthropic's conversation as chat messages.
class translator {
 public:
  std::optional<api_error> add_system(const ordered_json& system) {
    std::string text;
    if (auto error = text_of_blocks(system, "system", text)) return error;
    messages_.push_back({{"role", "system"}, {"content", std::move(text)}});
    return std::nullopt;
  }

  std::optional<api_error> add_messages(const ordered_json& messages) {
    if (!messages.is_array() || messages.empty())
      return refuse("messages must be a non-empty list of messages", "messages");
    if (messages.size() > max_anthropic_messages)
      return refuse("at most " + std::to_string(max_anthropic_messages) + " messages", "messages");
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const ordered_json& m = messages[i];
      const ordered_json* role = m.is_object() ? given_field(m, "role") : nullptr;
      const ordered_json* content = m.is_object() ? given_field(m, "content") : nullptr;
      if (!role || (*role != "user" && *role != "assistant"))
        return refuse("each message needs the role \"user\" or \"assistant\"", "messages");
      if (!content || (!content->is_string() && !content->is_array()))
        return refuse("each message's content must be text or a list of content blocks",
                      "messages");
      if (content->is_array() && content->size() > max_content_blocks)
        return refuse(
            "at most " + std::to_string(max_content_blocks) + " content blocks per message",
            "messages");
      const ordered_json blocks =
          content->is_string() ? ordered_json::array({{{"type", "text"}, {"text", *content}}})
                               : *content;
      if (auto error = *role == "user" ? add_user(blocks, "messages." + std::to_string(i))
                                       : add_assistant(blocks))
        return error;
    }
    if (messages.back()["role"] == "assistant")
      return refuse(
          "the last message is the assistant's: continuing (prefilling) an assistant turn is not "
          "supported; end with a user message",
          "messages");
    return std::nullopt;
  }

  ordered_json take() { return std::move(messages_); }

 private:
  /// Text and image blocks make one user message, as chat's content parts (which chat joins
  /// into text when the request has no image); each tool_result a tool message, in their
  /// order. `where` names the message (messages.N).
  std::optional<api_error> add_user(const ordered_json& blocks, const std::string& where) {
    ordered_json parts = ordered_json::array();
    bool has_results = false;
    auto flush = [&] {
      if (!parts.empty()) messages_.push_back({{"role", "user"}, {"content", std::move(parts)}});
      parts = ordered_json::array();
    };
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const ordered_json& block = blocks[i];
      const ordered_json* type = block.is_object() ? given_field(block, "type") : nullptr;
      if (!is_string(type)) return refuse("each content block needs a string type", "messages");
      if (*type == "tool_result") {
        flush();
        has_results = true;
        if (auto error = add_tool_result(block)) return error;
        continue;
      }
      ordered_json part;
      if (*type == "image") {
        if (auto error = image_part(block, where + ".content." + std::to_string(i), part))
          return error;
      } else {
        std::string text;
        if (auto error = text_of_blocks(ordered_json::array({block}), "messages", text))
          return error;
        part = {{"type", "text"}, {"text", std::move(text)}};
      }
      parts.push_back(std::move(part));
    }
    // An empty list is an empty user turn.
    if (!has_results && parts.empty()) messages_.push_back({{"role", "user"}, {"content", ""}});
    flush();
    return std::nullopt;
  }

  std::optional<api_error> add_tool_result(const ordered_json& block) {
    const ordered_json* id = given_field(block, "tool_use_id");
    if (!is_string(id)) return refuse("a tool_result block needs a string tool_use_id", "messages");
    std::string text;
    if (const ordered_json* content = given_field(block, "content"))
      if (auto error = text_of_blocks(*content, "messages", text)) return error;
    if (const ordered_json* is_error = given_field(block, "is_error");
        is_error && !is_error->is_boolean())
      return refuse("a tool_result's is_error must be a boolean", "messages");
    messages_.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", std::move(text)}});
    return std::nullopt;
  }

  /// One assistant message: its text, its tool calls and its reasoning.
  std::optional<api_error> add_assistant(const ordered_json& blocks) {
    std::string text, reasoning;
    ordered_json calls = ordered_json::array();
    for (const auto& block : blocks) {
      const ordered_json* type = block.is_object() ? given_field(block, "type") : nullptr;
      if (!is_string(type)) return refuse("each content block needs a string type", "messages");
      if (*type == "tool_use") {
        const ordered_json* id = given_field(block, "id");
        const ordered_json* name = given_field(block, "name");
        const ordered_json* input = given_field(block, "input");
        if (!is_string(id) || !is_string(name) || (input && !input->is_object()))
          return refuse("a tool_use block needs a string id and name and an object input",
                        "messages");
        calls.push_back(
            {{"id", *id},
             {"type", "function"},
             {"function",
              {{"name", *name}, {"arguments", input ? *input : ordered_json::object()}}}});
      } else if (*type == "thinking") {
        const ordered_json* thinking = given_field(block, "thinking");
        if (!is_string(thinking))
          return refuse("a thinking block needs its thinking as text", "messages");
        reasoning += thinking->get<std::string>();
      } else if (*type != "redacted_thinking") {
        std::string part;
        if (auto error = text_of_blocks(ordered_json::array({block}), "messages", part))
          return error;
        text += part;
      }
    }
    ordered_json message = {
        {"role", "assistant"},
        {"content", calls.empty() || !text.empty() ? ordered_json(text) : ordered_json()}};
    if (!calls.empty()) message["tool_calls"] = std::move(calls);
    if (!reasoning.empty()) message["reasoning_content"] = std::move(reasoning);
    messages_.push_back(std::move(message));
    return std::nullopt;
  }

  ordered_json messages_ = ordered_json::array();
};

std::optional<api_error> translate_tools(const ordered_json& body, ordered_json& chat) {
  const ordered_json* tools = given_field(body, "tools");
  if (!tools) return std::nullopt;
  if (!tools->is_array()) return refuse("tools must be a list", "tools");
  ordered_json list = ordered_json::array();
  for (const auto& tool : *tools) {
    if (!tool.is_object()) return refuse("each tool must be an object", "tools");
    if (const ordered_json* type = given_field(tool, "type"); type && *type != "custom")
      return refuse("tools of type " + type->dump() +
                        " (server tools) are not supported; give {name, description, "
                        "input_schema}",
                    "tools");
    const ordered_json* schema = given_field(tool, "input_schema");
    if (!schema || !schema->is_object())
      return refuse("each tool needs an input_schema object", "tools");
    ordered_json function = {{"name", tool.value("name", ordered_json())}};
    if (const ordered_json* d = given_field(tool, "description")) function["description"] = *d;
    function["parameters"] = *schema;
    list.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  chat["tools"] = std::move(list);
  return std::nullopt;
}

std::optional<api_error> translate_tool_choice(const ordered_json& body, ordered_json& chat) {
  const ordered_json* choice = given_field(body, "tool_choice");
  if (!choice) return std::nullopt;
  const ordered_json* type = choice->is_object() ? given_field(*choice, "type") : nullptr;
  const char* shape =
      "tool_choice must be {\"type\": \"auto\"}, {\"type\": \"any\"}, {\"type\": \"none\"} or "
      "{\"type\": \"tool\", \"name\": ...}";
  if (!is_string(type)) return refuse(shape, "tool_choice");
  if (*type == "auto" || *type == "none") {
    chat["tool_choice"] = *type;
  } else if (*type == "any") {
    chat["tool_choice"] = "required";
  } else if (*type == "tool") {
    const ordered_json* name = given_field(*choice, "name");
    if (!is_string(name)) return refuse(shape, "tool_choice");
    chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", *name}}}};
  } else {
    return refuse(shape, "tool_choice");
  }
  if (const ordered_json* serial = given_field(*choice, "disable_parallel_tool_use")) {
    if (!serial->is_boolean())
      return refuse("disable_parallel_tool_use must be a boolean", "tool_choice");
    if (*serial == true) chat["parallel_tool_calls"] = false;
  }
  return std::nullopt;
}

/// thinking: whether the client asked for it; its budget must fit under max_tokens.
std::optional<api_error> read_thinking(const ordered_json& body, bool& enabled) {
  enabled = false;
  const ordered_json* thinking = given_field(body, "thinking");
  if (!thinking) return std::nullopt;
  const ordered_json* type = thinking->is_object() ? given_field(*thinking, "type") : nullptr;
  if (type && *type == "disabled") return std::nullopt;
  if (!type || *type != "enabled")
    return refuse(
        "thinking must be {\"type\": \"enabled\", \"budget_tokens\": N} or {\"type\": "
        "\"disabled\"}",
        "thinking");
  const ordered_json* budget = given_field(*thinking, "budget_tokens");
  if (!budget || !budget->is_number_integer() || budget->get<int64_t>() < 1024)
    return refuse("thinking.budget_tokens must be an integer of at least 1024", "thinking");
  const ordered_json* max_tokens = given_field(body, "max_tokens");
  if (max_tokens && max_tokens->is_number_integer() &&
      budget->get<int64_t>() >= max_tokens->get<int64_t>())
    return refuse("thinking.budget_tokens must be less than max_tokens", "thinking");
  enabled = true;
  return std::nullopt;
}

/// The chat body of an Anthropic body; `counting`: for count_tokens, which needs no
/// max_tokens and leaves sampling and the tool choice out.
std::optional<api_error> translate(const ordered_json& body, bool counting, ordered_json& chat,
                                   bool& thinking) {
  chat = ordered_json::object();
  if (const ordered_json* model = given_field(body, "model")) chat["model"] = *model;
  if (const ordered_json* metadata = given_field(body, "metadata");
      metadata && !metadata->is_object())
    return refuse("metadata must be an object", "metadata");
  translator messages;
  if (const ordered_json* system = given_field(body, "system"))
    if (auto error = messages.add_system(*system)) return error;
  const ordered_json* list = given_field(body, "messages");
  if (!list) return refuse("messages is required", "messages");
  if (auto error = messages.add_messages(*list)) return error;
  chat["messages"] = messages.take();
  if (auto error = translate_tools(body, chat)) return error;
  if (auto error = read_thinking(body, thinking)) return error;
  chat["chat_template_kwargs"] = {{"enable_thinking", thinking}};
  if (counting) {
    chat["tool_choice"] = "none";  // the tools still reach the template
    return std::nullopt;
  }
  if (auto error = translate_tool_choice(body, chat)) return error;
  const ordered_json* max_tokens = given_field(body, "max_tokens");
  if (!max_tokens) return refuse("max_tokens is required", "max_tokens");
  chat["max_tokens"] = *max_tokens;
  if (const ordered_json* t = given_field(body, "temperature");
      t && t->is_number() && (t->get<double>() < 0 || t->get<double>() > 1))
    return refuse("temperature must be in [0, 1]", "temperature");
  for (const char* key : {"temperature", "top_p", "top_k", "stream"})
    if (const ordered_json* v = given_field(body, key)) chat[key] = *v;
  if (const ordered_json* stop = given_field(body, "stop_sequences")) {
    if (!stop->is_array())
      return refuse("stop_sequences must be a list of strings", "stop_sequences");
    if (stop->size() > max_stop_sequences)
      return refuse("at most " + std::to_string(max_stop_sequences) + " stop_sequences",
                    "stop_sequences");
    chat["stop"] = *stop;
  }
  return std::nullopt;
}

/// Chat's parse of the translated body, with chat's names for a fault put back into this
/// API's.
std::optional<api_error> parse_chat(const ordered_json& chat, openai_request& out,
                                    const sampling_defaults& defaults, const tool_settings& tools) {
  const std::string chat_text = chat.dump();
  auto error = parse_openai_json(nlohmann::json::parse(chat_text), api_kind::chat, out, defaults,
                                 chat_text, tools);
  if (error && error->param == "stop") error->param = "stop_sequences";
  if (error && error->param == "parallel_tool_calls") error->param = "tool_choice";
  return error;
}

std::optional<api_error> read_body(std::string_view body, ordered_json& out) {
  nlohmann::json checked;  // the depth limit and the object check of every other endpoint
  if (auto error = parse_json_object(body, checked)) return error;
  out = ordered_json::parse(body);
  return std::nullopt;
}

}  // namespace

std::optional<api_error> parse_messages_request(std::string_view body, openai_request& out,
                                                const sampling_defaults& defaults,
                                                const tool_settings& tools) {
  ordered_json request, chat;
  bool thinking = false;
  if (auto error = read_body(body, request)) return error;
  if (auto error = translate(request, false, chat, thinking)) return error;
  if (auto error = parse_chat(chat, out, defaults, tools)) return error;
  out.kind = api_kind::messages;
  out.thinking = thinking;
  return std::nullopt;
}

std::optional<api_error> parse_count_tokens_request(std::string_view body, generate_request& out) {
  ordered_json request, chat;
  bool thinking = false;
  if (auto error = read_body(body, request)) return error;
  if (auto error = translate(request, true, chat, thinking)) return error;
  openai_request parsed;
  if (auto error = parse_chat(chat, parsed, {}, {})) return error;
  // The prompt only: sampling shapes the answer, and the tokenizer's checks must not judge it.
  out = std::move(parsed.prompts.front());
  out.model = parsed.model;
  out.params = sampling_params{};
  out.params.max_tokens = -1;  // no answer to fit beside the prompt
  return std::nullopt;
}

}  // namespace actorllm::api

#include "api/responses_protocol.hpp"

#include <string>
#include <utility>

#include "api/ids.hpp"

namespace actorllm::api {
namespace {

using ordered_json = nlohmann::ordered_json;

const ordered_json* field(const ordered_json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

/// A message's content: text, or a list of text parts (input_text, output_text, text).
std::optional<std::string> content_text(const ordered_json& content) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return std::nullopt;
  std::string text;
  for (const auto& part : content) {
    const ordered_json* type = part.is_object() ? field(part, "type") : nullptr;
    const ordered_json* part_text = part.is_object() ? field(part, "text") : nullptr;
    if (!type || !type->is_string() || !part_text || !part_text->is_string()) return std::nullopt;
    const auto& t = type->get_ref<const std::string&>();
    if (t != "input_text" && t != "output_text" && t != "text") return std::nullopt;
    if (!text.empty()) text += "\n";
    text += part_text->get<std::string>();
  }
  return text;
}

/// A message's content as chat's: text stays text; a list of parts becomes chat's parts
/// (input_text / output_text / text as text parts, input_image as an image_url part), which
/// chat joins into text when the request has no image.
std::optional<api_error> chat_content(const ordered_json& content, ordered_json& out) {
  const char* shape =
      "input message content must be text or a list of input_text, output_text "
      "and input_image parts";
  if (content.is_string()) return out = content, std::nullopt;
  if (!content.is_array()) return bad_request(shape, "input");
  out = ordered_json::array();
  for (const auto& part : content) {
    const ordered_json* type = part.is_object() ? field(part, "type") : nullptr;
    if (!type || !type->is_string()) return bad_request(shape, "input");
    const auto& t = type->get_ref<const std::string&>();
    if (t == "input_text" || t == "output_text" || t == "text") {
      const ordered_json* text = field(part, "text");
      if (!text || !text->is_string()) return bad_request(shape, "input");
      out.push_back({{"type", "text"}, {"text", *text}});
    } else if (t == "input_image") {
      if (field(part, "file_id"))
        return bad_request("file inputs are not supported: give input_image an image_url", "input");
      const ordered_json* url = field(part, "image_url");
      if (!url || !url->is_string())
        return bad_request(
            "an input_image part needs image_url, a data:, http(s):// or file:// "
            "URL",
            "input");
      ordered_json image = {{"url", *url}};
      if (const ordered_json* detail = field(part, "detail")) image["detail"] = *detail;
      out.push_back({{"type", "image_url"}, {"image_url", std::move(image)}});
    } else if (t == "input_file") {
      return bad_request("file inputs are not supported", "input");
    } else {
      return bad_request(std::string(shape) + " (got '" + t + "')", "input");
    }
  }
  return std::nullopt;
}

class translator {
 public:
  std::optional<api_error> messages_from_input(const ordered_json& input) {
    if (input.is_string()) {
      messages_.push_back({{"role", "user"}, {"content", input}});
      return std::nullopt;
    }
    if (!input.is_array() || input.empty())
      return bad_request("input must be a string or a non-empty list of items", "input");
    for (const auto& item : input) {
      if (!item.is_object()) return bad_request("each input item must be an object", "input");
      const ordered_json* type = field(item, "type");
      const std::string kind = type && type->is_string() ? type->get<std::string>() : "message";
      if (kind == "message") {
        if (auto e = add_message(item)) return e;
      } else if (kind == "function_call") {
        if (auto e = add_function_call(item)) return e;
      } else if (kind == "function_call_output") {
        if (auto e = add_function_output(item)) return e;
      } else if (kind == "reasoning") {
        continue;  // earlier reasoning is not shown to the model again, as in chat
      } else {
        return bad_request("input items of type " + kind + " are not supported", "input");
      }
    }
    return std::nullopt;
  }

  ordered_json take() { return std::move(messages_); }

 private:
  std::optional<api_error> add_message(const ordered_json& item) {
    const ordered_json* role = field(item, "role");
    if (!role || !role->is_string())
      return bad_request("each input message needs a string role", "input");
    std::string r = role->get<std::string>();
    if (r == "developer") r = "system";  // the Responses API's name for system instructions
    if (r != "user" && r != "system" && r != "assistant")
      return bad_request("input message roles are user, system, developer or assistant", "input");
    ordered_json content = "";
    if (const ordered_json* given = field(item, "content"))
      if (auto error = chat_content(*given, content)) return error;
    messages_.push_back({{"role", r}, {"content", std::move(content)}});
    return std::nullopt;
  }

  std::optional<api_error> add_function_call(const ordered_json& item) {
    const ordered_json* call_id = field(item, "call_id");
    const ordered_json* name = field(item, "name");
    const ordered_json* arguments = field(item, "arguments");
    if (!call_id || !call_id->is_string() || !name || !name->is_string() ||
        (arguments && !arguments->is_string()))
      return bad_request("a function_call item needs call_id, name and arguments (text)", "input");
    ordered_json call = {
        {"id", *call_id},
        {"type", "function"},
        {"function", {{"name", *name}, {"arguments", arguments ? *arguments : "{}"}}}};
    // Calls made in one turn are one assistant message.
    if (!messages_.empty() && messages_.back()["role"] == "assistant" &&
        messages_.back().contains("tool_calls")) {
      messages_.back()["tool_calls"].push_back(std::move(call));
    } else {
      messages_.push_back({{"role", "assistant"},
                           {"content", nullptr},
                           {"tool_calls", ordered_json::array({call})}});
    }
    return std::nullopt;
  }

  std::optional<api_error> add_function_output(const ordered_json& item) {
    const ordered_json* call_id = field(item, "call_id");
    const ordered_json* output = field(item, "output");
    if (!call_id || !call_id->is_string() || !output)
      return bad_request("a function_call_output item needs call_id and output", "input");
    const auto text = output->is_string() ? std::optional<std::string>(output->get<std::string>())
                                          : content_text(*output);
    messages_.push_back(
        {{"role", "tool"}, {"tool_call_id", *call_id}, {"content", text ? *text : output->dump()}});
    return std::nullopt;
  }

  ordered_json messages_ = ordered_json::array();
};

std::optional<api_error> translate_tools(const ordered_json& body, ordered_json& chat) {
  if (const ordered_json* tools = field(body, "tools")) {
    if (!tools->is_array()) return bad_request("tools must be a list", "tools");
    ordered_json list = ordered_json::array();
    for (const auto& tool : *tools) {
      const ordered_json* type = tool.is_object() ? field(tool, "type") : nullptr;
      if (!type || *type != "function")
        return bad_request("only function tools are supported (not " +
                               (type ? type->dump() : std::string("untyped")) + ")",
                           "tools");
      ordered_json function = {{"name", tool.value("name", ordered_json())}};
      if (const ordered_json* d = field(tool, "description")) function["description"] = *d;
      if (const ordered_json* p = field(tool, "parameters")) function["parameters"] = *p;
      list.push_back({{"type", "function"}, {"function", std::move(function)}});
    }
    chat["tools"] = std::move(list);
  }
  if (const ordered_json* choice = field(body, "tool_choice")) {
    // {"type": "function", "name": N} in this API; {"type": "function", "function": {"name": N}}
    // in chat.
    if (choice->is_object() && choice->contains("name"))
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", (*choice)["name"]}}}};
    else
      chat["tool_choice"] = *choice;
  }
  return std::nullopt;
}

std::optional<api_error> translate_format(const ordered_json& body, ordered_json& chat) {
  const ordered_json* text = field(body, "text");
  const ordered_json* format = text && text->is_object() ? field(*text, "format") : nullptr;
  if (!format) return std::nullopt;
  const ordered_json* type = format->is_object() ? field(*format, "type") : nullptr;
  if (!type || !type->is_string())
    return bad_request("text.format must be an object with a string type", "text");
  if (*type == "json_schema") {
    ordered_json spec = {{"name", format->value("name", "response")}};
    if (const ordered_json* s = field(*format, "schema")) spec["schema"] = *s;
    if (const ordered_json* s = field(*format, "strict")) spec["strict"] = *s;
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(spec)}};
  } else {
    chat["response_format"] = {{"type", *type}};
  }
  return std::nullopt;
}

/// The item id prefix of each item type, as OpenAI's ids begin.
const char* id_prefix(const std::string& type) {
  if (type == "message") return "msg_";
  if (type == "function_call") return "fc_";
  if (type == "function_call_output") return "fco_";
  if (type == "reasoning") return "rs_";
  return "item_";
}

/// The fields of `responses_fields`: store, background, previous_response_id and what the
/// Response object repeats; the conversation of a previous response in `history`.
std::optional<api_error> read_storage_fields(const ordered_json& request,
                                             const response_lookup& lookup,
                                             responses_fields& fields, ordered_json& history) {
  if (const ordered_json* store = field(request, "store")) {
    if (!store->is_boolean()) return bad_request("store must be a boolean", "store");
    fields.store = store->get<bool>();
  }
  if (const ordered_json* background = field(request, "background")) {
    if (!background->is_boolean()) return bad_request("background must be a boolean", "background");
    fields.background = background->get<bool>();
  }
  if (fields.background && !fields.store)
    return bad_request(
        "background: true needs store: true (a background response is read back "
        "with GET /v1/responses/{id})",
        "background");
  if (fields.background && request.value("stream", false) == true)
    return bad_request("a background response is not streamed here; poll GET /v1/responses/{id}",
                       "stream");
  if (const ordered_json* previous = field(request, "previous_response_id")) {
    if (!previous->is_string() || !valid_response_id(previous->get_ref<const std::string&>()))
      return bad_request("previous_response_id must be an id that begins with 'resp_'",
                         "previous_response_id");
    fields.previous_response_id = previous->get<std::string>();
    const auto stored = lookup ? lookup(fields.previous_response_id) : std::nullopt;
    if (!stored) {
      api_error error =
          not_found("Previous response with id '" + fields.previous_response_id + "' not found.",
                    "previous_response_not_found");
      error.type = "invalid_request_error";
      error.param = "previous_response_id";
      return error;
    }
    const std::string status = stored->response.value("status", "");
    if (status == "queued" || status == "in_progress")
      return bad_request("previous response '" + fields.previous_response_id + "' is still " +
                             status + "; wait until it finishes",
                         "previous_response_id");
    history = stored->input_items;
    for (const auto& item : stored->response.value("output", nlohmann::json::array()))
      history.push_back(ordered_json(item));
  }
  for (const char* key : {"store", "background", "previous_response_id", "instructions", "tools",
                          "tool_choice", "text", "temperature", "top_p", "max_output_tokens",
                          "parallel_tool_calls", "metadata", "user"})
    if (const ordered_json* v = field(request, key)) fields.echo[key] = *v;
  return std::nullopt;
}

}  // namespace

ordered_json input_items_of(const ordered_json& input) {
  if (input.is_string())
    return ordered_json::array(
        {{{"id", random_id("msg_")},
          {"type", "message"},
          {"role", "user"},
          {"content", ordered_json::array({{{"type", "input_text"}, {"text", input}}})}}});
  if (!input.is_array()) return input;
  ordered_json items = ordered_json::array();
  for (const auto& given : input) {
    if (!given.is_object()) return input;
    ordered_json item = given;
    const ordered_json* type = field(item, "type");
    const std::string kind = type && type->is_string() ? type->get<std::string>() : "message";
    item["type"] = kind;
    if (!item.contains("id") || !item["id"].is_string()) item["id"] = random_id(id_prefix(kind));
    if (kind == "message" && item.contains("content") && item["content"].is_string()) {
      const char* part = item.value("role", "") == "assistant" ? "output_text" : "input_text";
      item["content"] = ordered_json::array({{{"type", part}, {"text", item["content"]}}});
    }
    items.push_back(std::move(item));
  }
  return items;
}

std::optional<api_error> parse_responses_request(std::string_view body, openai_request& out,
                                                 const sampling_defaults& defaults,
                                                 const tool_settings& tools,
                                                 const response_lookup& lookup) {
  nlohmann::json checked;  // the depth limit and the object check of every other endpoint
  if (auto error = parse_json_object(body, checked)) return error;
  const ordered_json request = ordered_json::parse(body);
  responses_fields fields;
  ordered_json conversation = ordered_json::array();  // a previous response's items
  if (auto error = read_storage_fields(request, lookup, fields, conversation)) return error;

  translator messages;
  ordered_json chat = ordered_json::object();
  if (const ordered_json* v = field(request, "model")) chat["model"] = *v;
  if (const ordered_json* instructions = field(request, "instructions")) {
    if (!instructions->is_string())
      return bad_request("instructions must be a string", "instructions");
    messages.messages_from_input(ordered_json::array(
        {{{"type", "message"}, {"role", "system"}, {"content", *instructions}}}));
  }
  const ordered_json* input = field(request, "input");
  if (!input) return bad_request("input is required", "input");
  const ordered_json items = input_items_of(*input);
  if (!items.is_array() || items.empty())
    return bad_request("input must be a string or a non-empty list of items", "input");
  for (const auto& item : items) conversation.push_back(item);
  if (auto error = messages.messages_from_input(conversation)) return error;
  chat["messages"] = messages.take();
  for (const char* key : {"temperature", "top_p", "seed", "stream", "parallel_tool_calls", "user",
                          "top_k", "min_p", "repetition_penalty", "stop"})
    if (const ordered_json* v = field(request, key)) chat[key] = *v;
  if (const ordered_json* v = field(request, "max_output_tokens")) chat["max_tokens"] = *v;
  if (const ordered_json* v = field(request, "top_logprobs")) {
    chat["logprobs"] = true;
    chat["top_logprobs"] = *v;
  }
  if (auto error = translate_tools(request, chat)) return error;
  if (auto error = translate_format(request, chat)) return error;

  const std::string chat_text = chat.dump();
  auto error = parse_openai_json(nlohmann::json::parse(chat_text), api_kind::chat, out, defaults,
                                 chat_text, tools);
  if (error) {
    // Blame this API's names for what it calls differently.
    if (error->param == "max_tokens") error->param = "max_output_tokens";
    if (error->param == "response_format") error->param = "text";
    if (error->param == "messages") error->param = "input";
    return error;
  }
  out.kind = api_kind::responses;
  fields.input_items = std::move(conversation);
  out.responses = std::move(fields);
  return std::nullopt;
}

}  // namespace actorllm::api

// The stored responses over HTTP: read, delete, list the input items, cancel; storing a
// finished call and starting a background one.
#include "api/responses_api.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <variant>

#include "api/background_responses.hpp"
#include "api/response_store.hpp"

namespace actorllm::api {
namespace {

using nlohmann::json;

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The value of `key` in the query string of `target`, percent-decoded ('+' is a space);
/// nullopt when it is not there.
std::optional<std::string> query_value(std::string_view target, std::string_view key) {
  const auto mark = target.find('?');
  if (mark == std::string_view::npos) return std::nullopt;
  std::string_view rest = target.substr(mark + 1);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const auto eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    const std::string_view raw = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    std::string value;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%' && i + 2 < raw.size() && hex_value(raw[i + 1]) >= 0 &&
          hex_value(raw[i + 2]) >= 0) {
        value.push_back(static_cast<char>(hex_value(raw[i + 1]) * 16 + hex_value(raw[i + 2])));
        i += 2;
      } else {
        value.push_back(raw[i] == '+' ? ' ' : raw[i]);
      }
    }
    return value;
  }
  return std::nullopt;
}

answer json_answer(const json& body) {
  return {200, to_wire(body)};
}

answer unknown_response(const std::string& id) {
  return error_answer(not_found("Response with id '" + id + "' not found."));
}

/// GET /v1/responses/{id}/input_items: one page of the conversation's items.
answer input_items_page(const stored_response& entry, std::string_view target) {
  int64_t limit = 20;
  if (auto text = query_value(target, "limit")) {
    const char* end = text->data() + text->size();
    const auto [ptr, ec] = std::from_chars(text->data(), end, limit);
    if (ec != std::errc() || ptr != end || limit < 1 || limit > 100)
      return error_answer(bad_request("limit must be an integer from 1 to 100", "limit"));
  }
  const std::string order = query_value(target, "order").value_or("desc");
  if (order != "asc" && order != "desc")
    return error_answer(bad_request("order must be asc or desc", "order"));
  json items = entry.input_items;
  if (order == "desc") std::reverse(items.begin(), items.end());
  std::size_t first = 0;
  if (auto after = query_value(target, "after")) {
    auto it = std::find_if(items.begin(), items.end(),
                           [&](const json& item) { return item.value("id", "") == *after; });
    if (it == items.end())
      return error_answer(bad_request("no input item '" + *after + "' in this response", "after"));
    first = static_cast<std::size_t>(it - items.begin()) + 1;
  }
  const std::size_t last = std::min(items.size(), first + static_cast<std::size_t>(limit));
  json data = json::array();
  for (std::size_t i = first; i < last; ++i) data.push_back(items[i]);
  return json_answer({{"object", "list"},
                      {"data", data},
                      {"first_id", data.empty() ? json() : data.front().value("id", json())},
                      {"last_id", data.empty() ? json() : data.back().value("id", json())},
                      {"has_more", last < items.size()}});
}

}  // namespace

answer stored_response_answer(const server_context& context, const route& r,
                              std::string_view method, std::string_view target) {
  const std::string& id = r.response_id;
  std::optional<stored_response> entry;
  if (context.responses && valid_response_id(id)) entry = context.responses->get(id);
  if (!entry) return unknown_response(id);
  switch (r.target) {
    case endpoint::response:
      if (method == "DELETE") {
        if (context.background) context.background->cancel(id);  // its KV blocks come back
        context.responses->erase(id);
        return json_answer({{"id", id}, {"object", "response"}, {"deleted", true}});
      }
      return json_answer(entry->response);
    case endpoint::response_input_items:
      return input_items_page(*entry, target);
    case endpoint::response_cancel: {
      if (entry->response.value("background", false) != true)
        return error_answer(
            bad_request("only a response created with background: true can be cancelled"));
      if (context.background)
        if (auto cancelled = context.background->cancel(id)) return json_answer(*cancelled);
      // It had ended already: cancelling changes nothing.
      return json_answer(context.responses->get(id).value_or(*entry).response);
    }
    default:
      return unknown_response(id);
  }
}

void keep_response(const server_context& context, const openai_call& call) {
  const call_options& options = call.options();
  if (options.kind != api_kind::responses || !options.responses.store || !call.done() ||
      call.failed() || !context.responses)
    return;
  context.responses->put({call.response_object(), options.responses.input_items});
}

answer start_background_response(server_context& context, openai_request request,
                                 const model_info& model) {
  if (!context.background)
    return error_answer(bad_request("this server runs no background responses", "background"));
  auto started = context.background->start(context, std::move(request), model);
  if (auto* error = std::get_if<api_error>(&started)) return error_answer(*error);
  return json_answer(std::get<json>(started));
}

}  // namespace actorllm::api

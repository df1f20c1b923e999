#include "api/unsupported_fields.hpp"

#include <string>

namespace actorllm::api {

namespace {

using nlohmann::json;

api_error needs_structured_output(const std::string& what, const char* param) {
  return bad_request(what + " asks for a kind of structured output this server does not " +
                         "implement; use response_format, structured_outputs or guided_*",
                     param);
}

}  // namespace

std::optional<api_error> refuse_unsupported_fields(const json& body) {
  if (given_field(body, "structural_tag"))
    return needs_structured_output("structural_tag", "structural_tag");
  if (const json* turn = given_field(body, "continue_final_message"); turn && *turn != false)
    return bad_request("continue_final_message is not supported", "continue_final_message");
  for (const char* key : {"allowed_token_ids", "bad_words"}) {
    if (const json* list = given_field(body, key); list && !(list->is_array() && list->empty()))
      return bad_request(std::string(key) + " is not supported", key);
  }
  if (given_field(body, "logits_processors"))
    return bad_request("logits_processors is not supported", "logits_processors");
  if (const json* best_of = given_field(body, "best_of");
      best_of && !(best_of->is_number_integer() && best_of->get<int64_t>() <= 1))
    return bad_request("best_of is not supported; use n for several samples", "best_of");
  if (const json* suffix = given_field(body, "suffix");
      suffix && !(suffix->is_string() && suffix->get_ref<const std::string&>().empty()))
    return bad_request("suffix is not supported", "suffix");
  return std::nullopt;
}

}  // namespace actorllm::api

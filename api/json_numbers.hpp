#pragma once
/// JSON text a model wrote, read where a double cannot hold one of its numbers
/// (`53E26305909`): nlohmann refuses such a text whole, so the number is kept as the text it
/// was, a string, and the rest of the value is read as written.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace actorllm::api {

/// `text` parsed as JSON; a number outside double's range becomes a string holding its text.
/// Discarded (is_discarded()) when the text is not JSON.
nlohmann::json parse_keeping_huge_numbers(std::string_view text);

}  // namespace actorllm::api

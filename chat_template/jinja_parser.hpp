#pragma once
/// Parses Jinja source into statements. Covers what chat templates use: if/elif/else,
/// for (with else, a filter condition, tuple targets), set (names, namespace attributes,
/// blocks), macro, break/continue, generation blocks, and full expressions. Anything else is
/// a jinja::error naming the template line, never a silently wrong render.
#include <string_view>

#include "chat_template/jinja_ast.hpp"

namespace actorllm::jinja {

stmt_list parse_template(std::string_view source);

}  // namespace actorllm::jinja

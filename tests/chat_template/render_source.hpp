#pragma once
// Renders a template's source with no variables, a parse error included in the result: what
// the jinja tests of hostile templates check (found by fuzz/jinja_fuzz.cpp).
#include <stdexcept>
#include <string>

#include "chat_template/chat_template.hpp"

namespace actorllm::testing {

/// `source` rendered with no variables; a parse error comes back as the result's error.
inline chat_template::result render_source(const std::string& source) {
  try {
    return chat_template(source).render(nlohmann::ordered_json::object());
  } catch (const std::runtime_error& e) {
    return {"", e.what()};
  }
}

}  // namespace actorllm::testing

#pragma once
/// The Python methods of str and dict that chat templates call (`content.strip()`,
/// `message.get('x')`, `tool.items()`...). Lists and dicts are immutable here, as in Hugging
/// Face's ImmutableSandboxedEnvironment.
#include <string>

#include "chat_template/jinja_value.hpp"

namespace actorllm::jinja {

/// `obj.name` as a callable bound to `obj`, or undefined when `obj` has no such method.
value bound_method(const value& obj, const std::string& name);

/// Calls `obj.name(args...)` directly; throws jinja::error when there is no such method.
value call_method(const value& obj, const std::string& name, value_list& args,
                  keyword_args& kwargs);

}  // namespace actorllm::jinja

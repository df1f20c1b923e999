#pragma once
/// Jinja's built-in filters, tests, globals, and the Python methods of str / dict / list
/// that chat templates call, with the semantics of Jinja 3 as Hugging Face configures it.
#include <string>

#include "chat_template/jinja_value.hpp"

namespace actorllm::jinja {

/// Applies filter `name` ("trim", "tojson", "selectattr"...); throws jinja::error when the
/// filter is unknown or its arguments do not fit.
value call_filter(const std::string& name, const value& subject, value_list& args,
                  keyword_args& kwargs);

/// Evaluates test `name` ("defined", "none", "string", "equalto"...).
bool call_test(const std::string& name, const value& subject, value_list& args);

/// `obj.name`: a dict's key, or a bound method of str / dict / list; undefined when absent.
value get_attribute(const value& obj, const std::string& name);

/// `obj[key]`: list and str index (negative from the end), dict key; undefined when absent.
value get_item(const value& obj, const value& key);

/// `obj[start:stop:step]` on a list or str (null parts as in Python).
value get_slice(const value& obj, const value& start, const value& stop, const value& step);

/// The elements a for loop visits: list items, dict keys, str characters; undefined is empty.
value_list iterate(const value& v);

/// Adds range, namespace, dict, raise_exception and strftime_now to `globals`.
void add_globals(value_dict& globals);

}  // namespace actorllm::jinja

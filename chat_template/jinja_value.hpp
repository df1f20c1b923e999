#pragma once
/// Values of the Jinja interpreter, with Python's semantics where templates can observe them:
/// truthiness, ==, ordering, str() / repr() output and json.dumps for `tojson`.
/// Lists and dicts are shared by reference, as in Python; dicts keep insertion order.
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace actorllm::jinja {

/// A template error: bad syntax, an unsupported construct, raise_exception(), a type error.
/// `line` is the 1-based template line (0 when unknown).
class error : public std::runtime_error {
 public:
  error(const std::string& message, int line = 0)
      : std::runtime_error(line > 0 ? "template line " + std::to_string(line) + ": " + message
                                    : message),
        line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

class value;
using value_list = std::vector<value>;
using keyword_args = std::vector<std::pair<std::string, value>>;

struct value_dict {
  std::vector<std::pair<std::string, value>> items;
  bool is_namespace = false;  ///< namespace(): attributes may be assigned with {% set %}
  value* find(std::string_view key);
  const value* find(std::string_view key) const;
  void set(const std::string& key, value v);
};

/// A callable: globals (range, namespace...), bound methods ("a".startswith), macros.
struct value_function {
  std::string name;
  std::function<value(value_list& args, keyword_args& kwargs)> call;
};

class value {
 public:
  enum class kind { undefined, none, boolean, integer, number, string, list, dict, function };

  value() = default;  ///< undefined
  static value none();
  static value undefined(std::string name);
  value(bool b) : kind_(kind::boolean), int_(b) {}
  value(int v) : kind_(kind::integer), int_(v) {}
  value(int64_t v) : kind_(kind::integer), int_(v) {}
  value(double v) : kind_(kind::number), number_(v) {}
  value(std::string s) : kind_(kind::string), string_(std::move(s)) {}
  value(const char* s) : kind_(kind::string), string_(s) {}
  value(value_list l);
  value(value_dict d);
  value(value_function f);
  /// A tuple: a list that prints as (a, b) (dict.items() pairs, tuple literals).
  static value tuple(value_list l);

  kind type() const { return kind_; }
  bool is_undefined() const { return kind_ == kind::undefined; }
  bool is_none() const { return kind_ == kind::none; }
  bool is_string() const { return kind_ == kind::string; }
  bool is_list() const { return kind_ == kind::list; }
  bool is_tuple() const { return kind_ == kind::list && tuple_; }
  bool is_dict() const { return kind_ == kind::dict; }
  bool is_number() const {
    return kind_ == kind::integer || kind_ == kind::number || kind_ == kind::boolean;
  }
  bool is_function() const { return kind_ == kind::function; }

  bool as_bool() const { return int_ != 0; }
  int64_t as_int() const;  ///< integers and booleans; numbers truncate
  double as_double() const;
  const std::string& as_string() const { return string_; }
  value_list& as_list() const { return *list_; }
  value_dict& as_dict() const { return *dict_; }
  const value_function& as_function() const { return *function_; }
  /// For undefined values: the name that was looked up (for error messages).
  const std::string& undefined_name() const { return string_; }

  /// Python truthiness.
  bool truthy() const;
  /// Python str(): what {{ v }} prints (undefined prints nothing).
  std::string str() const;
  /// Python repr(), used inside str() of lists and dicts.
  std::string repr() const;
  /// Python json.dumps(v, ensure_ascii=False, indent=indent); indent < 0 for none.
  std::string to_json(int indent = -1) const;
  /// Python's name for the type, for error messages ("str", "list", "dict"...).
  std::string type_name() const;

  static value from_json(const nlohmann::ordered_json& j);

 private:
  kind kind_ = kind::undefined;
  bool tuple_ = false;
  int64_t int_ = 0;
  double number_ = 0;
  std::string string_;
  std::shared_ptr<value_list> list_;
  std::shared_ptr<value_dict> dict_;
  std::shared_ptr<const value_function> function_;
};

/// Python ==.
bool equals(const value& a, const value& b);
/// Python <, for numbers, strings and lists; throws jinja::error otherwise.
bool less(const value& a, const value& b);
/// Python repr() of a float ("1.0", "0.1", "1e-05").
std::string format_double(double d);

/// Integer arithmetic of templates: Python's integers have no bound, these end at 64 bits and
/// throw jinja::error ("integer overflow") where the exact result would not fit. op is one of
/// + - * // % **; // and % floor as Python does, and throw on a zero divisor.
int64_t integer_op(std::string_view op, int64_t a, int64_t b);

}  // namespace actorllm::jinja

#pragma once
/// Renders parsed Jinja statements against a set of variables.
#include <string>
#include <unordered_map>
#include <vector>

#include "chat_template/jinja_ast.hpp"

namespace actorllm::jinja {

class evaluator {
 public:
  /// `globals` are visible everywhere (template variables plus built-in functions).
  explicit evaluator(value_dict globals);

  /// Renders `body`; throws jinja::error with the template line on failure.
  std::string render(const stmt_list& body);

 private:
  enum class flow { normal, break_loop, continue_loop };
  using frame = std::unordered_map<std::string, value>;

  flow exec(const stmt_list& body, std::string& out);
  flow exec_one(const stmt& s, std::string& out);
  flow exec_for(const stmt& s, std::string& out);
  void exec_set(const stmt& s, value v);
  value define_macro(const stmt& s);

  value eval(const expr& e);
  value eval_binary(const expr& e);
  value call(const expr& e);
  value lookup(const std::string& name) const;
  void assign(const std::string& name, value v);

  std::vector<frame> frames_;
  int macro_depth_ = 0;  ///< macro calls in progress (a recursive macro is bounded)
};

}  // namespace actorllm::jinja

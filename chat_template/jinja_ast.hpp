#pragma once
/// The parsed form of a Jinja template: expression and statement nodes.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat_template/jinja_value.hpp"

namespace actorllm::jinja {

struct expr;
using expr_ptr = std::unique_ptr<expr>;

struct expr {
  enum class kind {
    literal,  // value
    name,     // name
    list,     // args: items
    tuple,    // args: items
    dict,     // args: key, value, key, value...
    attr,     // args[0].name
    item,     // args[0][args[1]]
    slice,    // args[0][args[1]:args[2]:args[3]], missing parts are null
    call,     // args[0](args[1..], kwargs)
    filter,   // args[0] | name(args[1..], kwargs)
    test,     // args[0] is [not] name(args[1..])
    unary,    // name ("not", "-", "+") args[0]
    binary,   // args[0] name args[1]
    cond,     // args[0] if args[1] else args[2] (args[2] may be null)
  };
  kind type;
  int line = 0;
  value literal;
  std::string name;
  bool negated = false;  // "is not"
  std::vector<expr_ptr> args;
  std::vector<std::pair<std::string, expr_ptr>> kwargs;
};

struct stmt;
using stmt_ptr = std::unique_ptr<stmt>;
using stmt_list = std::vector<stmt_ptr>;

struct stmt {
  enum class kind {
    text,       // text
    output,     // {{ exprs[0] }}
    if_,        // exprs: conditions; bodies: one per condition, plus else when present
    for_,       // names: targets; exprs[0]: iterable, exprs[1]: filter or null;
                // bodies[0]: body, bodies[1]: else
    set,        // names[0] (and attribute when not empty) = exprs[0]; several names unpack
    set_block,  // names[0] = rendered bodies[0]
    macro,      // name, names: parameters, exprs: defaults (null when none), bodies[0]
    break_,
    continue_,
    scope,  // bodies[0] rendered as is ({% generation %})
  };
  kind type;
  int line = 0;
  std::string text;
  std::string name;
  std::string attribute;
  std::vector<std::string> names;
  std::vector<expr_ptr> exprs;
  std::vector<stmt_list> bodies;
};

}  // namespace actorllm::jinja

#include "chat_template/jinja_eval.hpp"

#include <cmath>

#include "chat_template/jinja_builtins.hpp"

namespace actorllm::jinja {
namespace {

value arithmetic(const std::string& op, const value& a, const value& b) {
  if (!a.is_number() || !b.is_number())
    throw error("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" +
                b.type_name() + "'");
  bool integral = a.type() != value::kind::number && b.type() != value::kind::number;
  if (op == "/") {
    if (b.as_double() == 0) throw error("division by zero");
    return value(a.as_double() / b.as_double());
  }
  if (integral && (op != "**" || b.as_int() >= 0)) {
    return value(integer_op(op, a.as_int(), b.as_int()));  // overflow is an error
  }
  double x = a.as_double(), y = b.as_double();
  if (op == "+") return value(x + y);
  if (op == "-") return value(x - y);
  if (op == "*") return value(x * y);
  if (op == "//") return value(std::floor(x / y));
  if (op == "%") return value(x - std::floor(x / y) * y);
  return value(std::pow(x, y));
}

/// A string or list repeated n times; bounded, since one expression could otherwise ask for
/// any amount of memory ('x' * 10**12).
value repeat(const value& seq, int64_t n) {
  constexpr int64_t max_repeated = int64_t{1} << 24;  // bytes or items
  const int64_t unit =
      static_cast<int64_t>(seq.is_string() ? seq.as_string().size() : seq.as_list().size());
  if (n > 0 && unit > 0 && n > max_repeated / unit)
    throw error("repeating a sequence of " + std::to_string(unit) + " " + std::to_string(n) +
                " times is too big (at most " + std::to_string(max_repeated) + ")");
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return value(std::move(out));
  }
  value_list out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return value(std::move(out));
}

bool contains(const value& container, const value& item) {
  if (container.is_string()) {
    if (!item.is_string()) throw error("'in <string>' requires string as left operand");
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict()) return item.is_string() && container.as_dict().find(item.as_string());
  if (container.is_list()) {
    for (const value& x : container.as_list())
      if (equals(x, item)) return true;
    return false;
  }
  if (container.is_undefined()) throw error("'" + container.undefined_name() + "' is undefined");
  throw error("argument of type '" + container.type_name() + "' is not iterable");
}

}  // namespace

evaluator::evaluator(value_dict globals) {
  frames_.emplace_back();
  for (auto& [k, v] : globals.items) frames_[0][k] = std::move(v);
}

std::string evaluator::render(const stmt_list& body) {
  std::string out;
  exec(body, out);
  return out;
}

evaluator::flow evaluator::exec(const stmt_list& body, std::string& out) {
  for (const auto& s : body) {
    flow f;
    try {
      f = exec_one(*s, out);
    } catch (const error& e) {
      if (e.line() > 0) throw;
      throw error(e.what(), s->line);
    }
    if (f != flow::normal) return f;
  }
  return flow::normal;
}

evaluator::flow evaluator::exec_one(const stmt& s, std::string& out) {
  switch (s.type) {
    case stmt::kind::text:
      out += s.text;
      return flow::normal;
    case stmt::kind::output:
      out += eval(*s.exprs[0]).str();
      return flow::normal;
    case stmt::kind::if_:
      for (size_t i = 0; i < s.exprs.size(); ++i)
        if (eval(*s.exprs[i]).truthy()) return exec(s.bodies[i], out);
      if (s.bodies.size() > s.exprs.size()) return exec(s.bodies.back(), out);
      return flow::normal;
    case stmt::kind::for_:
      return exec_for(s, out);
    case stmt::kind::set:
      exec_set(s, eval(*s.exprs[0]));
      return flow::normal;
    case stmt::kind::set_block: {
      std::string text;
      exec(s.bodies[0], text);
      exec_set(s, value(std::move(text)));
      return flow::normal;
    }
    case stmt::kind::macro:
      assign(s.name, define_macro(s));
      return flow::normal;
    case stmt::kind::break_:
      return flow::break_loop;
    case stmt::kind::continue_:
      return flow::continue_loop;
    case stmt::kind::scope:
      return exec(s.bodies[0], out);
  }
  return flow::normal;
}

evaluator::flow evaluator::exec_for(const stmt& s, std::string& out) {
  value_list items = iterate(eval(*s.exprs[0]));
  frames_.emplace_back();
  auto bind = [&](const value& item) {
    if (s.names.size() == 1) {
      frames_.back()[s.names[0]] = item;
      return;
    }
    value_list parts = iterate(item);
    if (parts.size() != s.names.size())
      throw error("cannot unpack " + std::to_string(parts.size()) + " values into " +
                  std::to_string(s.names.size()) + " loop variables");
    for (size_t i = 0; i < parts.size(); ++i) frames_.back()[s.names[i]] = parts[i];
  };
  if (s.exprs[1]) {  // for x in items if condition
    value_list kept;
    for (const value& item : items) {
      bind(item);
      if (eval(*s.exprs[1]).truthy()) kept.push_back(item);
    }
    items.swap(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    bind(items[i]);
    value_dict loop;
    loop.set("index0", value(i));
    loop.set("index", value(i + 1));
    loop.set("revindex0", value(n - i - 1));
    loop.set("revindex", value(n - i));
    loop.set("first", value(i == 0));
    loop.set("last", value(i == n - 1));
    loop.set("length", value(n));
    loop.set("depth", value(1));
    loop.set("depth0", value(0));
    loop.set("previtem", i > 0 ? items[i - 1] : value::undefined("previtem"));
    loop.set("nextitem", i + 1 < n ? items[i + 1] : value::undefined("nextitem"));
    loop.set("cycle", value(value_function{"cycle", [i](value_list& args, keyword_args&) {
                                             if (args.empty())
                                               throw error("loop.cycle() needs arguments");
                                             return args[static_cast<size_t>(i) % args.size()];
                                           }}));
    frames_.back()["loop"] = value(std::move(loop));
    flow f = exec(s.bodies[0], out);
    if (f == flow::break_loop) break;
  }
  frames_.pop_back();
  if (n == 0 && s.bodies.size() > 1) return exec(s.bodies[1], out);
  return flow::normal;
}

void evaluator::exec_set(const stmt& s, value v) {
  if (!s.attribute.empty()) {
    value target = lookup(s.names[0]);
    if (!target.is_dict() || !target.as_dict().is_namespace)
      throw error("cannot assign attribute on non-namespace object '" + s.names[0] + "'");
    target.as_dict().set(s.attribute, std::move(v));
    return;
  }
  if (s.names.size() == 1) {
    assign(s.names[0], std::move(v));
    return;
  }
  value_list parts = iterate(v);
  if (parts.size() != s.names.size()) throw error("wrong number of values to unpack in set");
  for (size_t i = 0; i < parts.size(); ++i) assign(s.names[i], parts[i]);
}

/// Macro calls in progress at most: far deeper than any chat template's recursion (a schema's
/// nesting), far shallower than a thread's stack.
constexpr int max_macro_depth = 100;

value evaluator::define_macro(const stmt& s) {
  // Defaults are evaluated at definition time here (Jinja evaluates them per call; chat
  // templates use literals, for which both agree).
  std::vector<value> defaults;
  for (const auto& d : s.exprs) defaults.push_back(d ? eval(*d) : value::undefined(""));
  const stmt* node = &s;
  return value(
      value_function{s.name, [this, node, defaults](value_list& args, keyword_args& kwargs) {
                       // A template is a model folder's or a client's: a macro that calls
                       // itself without end is an error, not a stack overflow.
                       if (macro_depth_ >= max_macro_depth)
                         throw error("macro '" + node->name + "' nests more than " +
                                     std::to_string(max_macro_depth) + " calls deep");
                       ++macro_depth_;
                       struct leave {
                         int& depth;
                         ~leave() { --depth; }
                       } on_return{macro_depth_};
                       frame locals;
                       for (size_t i = 0; i < node->names.size(); ++i)
                         locals[node->names[i]] = i < args.size() ? args[i] : defaults[i];
                       for (auto& [k, v] : kwargs) locals[k] = v;
                       // A macro sees the globals and its parameters, not its caller's loop
                       // variables.
                       std::vector<frame> saved;
                       saved.swap(frames_);
                       frames_.push_back(saved[0]);
                       frames_.push_back(std::move(locals));
                       std::string text;
                       try {
                         exec(node->bodies[0], text);
                       } catch (...) {
                         frames_.swap(saved);
                         throw;
                       }
                       saved[0] = std::move(frames_[0]);
                       frames_.swap(saved);
                       return value(std::move(text));
                     }});
}

value evaluator::lookup(const std::string& name) const {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
    if (auto found = it->find(name); found != it->end()) return found->second;
  return value::undefined(name);
}

void evaluator::assign(const std::string& name, value v) {
  frames_.back()[name] = std::move(v);
}

value evaluator::eval(const expr& e) {
  try {
    switch (e.type) {
      case expr::kind::literal:
        return e.literal;
      case expr::kind::name:
        return lookup(e.name);
      case expr::kind::list:
      case expr::kind::tuple: {
        value_list items;
        for (const auto& a : e.args) items.push_back(eval(*a));
        return e.type == expr::kind::tuple ? value::tuple(std::move(items))
                                           : value(std::move(items));
      }
      case expr::kind::dict: {
        value_dict d;
        for (size_t i = 0; i + 1 < e.args.size(); i += 2)
          d.set(eval(*e.args[i]).str(), eval(*e.args[i + 1]));
        return value(std::move(d));
      }
      case expr::kind::attr:
        return get_attribute(eval(*e.args[0]), e.name);
      case expr::kind::item:
        return get_item(eval(*e.args[0]), eval(*e.args[1]));
      case expr::kind::slice: {
        value parts[3];
        for (int i = 0; i < 3; ++i)
          if (e.args[i + 1]) parts[i] = eval(*e.args[i + 1]);
        return get_slice(eval(*e.args[0]), parts[0], parts[1], parts[2]);
      }
      case expr::kind::call:
        return call(e);
      case expr::kind::filter:
      case expr::kind::test: {
        value subject = eval(*e.args[0]);
        value_list args;
        for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
        if (e.type == expr::kind::test) return value(call_test(e.name, subject, args) != e.negated);
        keyword_args kwargs;
        for (const auto& [k, v] : e.kwargs) kwargs.emplace_back(k, eval(*v));
        return call_filter(e.name, subject, args, kwargs);
      }
      case expr::kind::unary: {
        value v = eval(*e.args[0]);
        if (e.name == "not") return value(!v.truthy());
        if (!v.is_number())
          throw error("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        if (e.name == "+") return v;
        return v.type() == value::kind::number ? value(-v.as_double())
                                               : value(integer_op("-", 0, v.as_int()));
      }
      case expr::kind::binary:
        return eval_binary(e);
      case expr::kind::cond:
        if (eval(*e.args[1]).truthy()) return eval(*e.args[0]);
        return e.args[2] ? eval(*e.args[2]) : value::undefined("");
    }
  } catch (const error& err) {
    if (err.line() > 0) throw;
    throw error(err.what(), e.line);
  }
  return value();
}

value evaluator::eval_binary(const expr& e) {
  const std::string& op = e.name;
  value a = eval(*e.args[0]);
  if (op == "and") return a.truthy() ? eval(*e.args[1]) : a;
  if (op == "or") return a.truthy() ? a : eval(*e.args[1]);
  value b = eval(*e.args[1]);
  if (op == "==") return value(equals(a, b));
  if (op == "!=") return value(!equals(a, b));
  if (op == "<") return value(less(a, b));
  if (op == ">") return value(less(b, a));
  if (op == "<=") return value(!less(b, a));
  if (op == ">=") return value(!less(a, b));
  if (op == "in") return value(contains(b, a));
  if (op == "not in") return value(!contains(b, a));
  if (op == "~") return value(a.str() + b.str());
  if (a.is_undefined() || b.is_undefined())
    throw error("'" + (a.is_undefined() ? a : b).undefined_name() + "' is undefined");
  if (op == "+") {
    if (a.is_string() && b.is_string()) return value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list()) {
      value_list out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return value(std::move(out));
    }
    if (a.is_string() || b.is_string())
      throw error("can only concatenate str (not \"" + (a.is_string() ? b : a).type_name() +
                  "\") to str");
  }
  if (op == "*" && (a.is_string() || a.is_list()) && b.type() == value::kind::integer)
    return repeat(a, b.as_int());
  if (op == "*" && (b.is_string() || b.is_list()) && a.type() == value::kind::integer)
    return repeat(b, a.as_int());
  if (op == "%" && a.is_string()) throw error("string formatting with % is not supported");
  return arithmetic(op, a, b);
}

value evaluator::call(const expr& e) {
  value callee = eval(*e.args[0]);
  value_list args;
  for (size_t i = 1; i < e.args.size(); ++i) args.push_back(eval(*e.args[i]));
  keyword_args kwargs;
  for (const auto& [k, v] : e.kwargs) kwargs.emplace_back(k, eval(*v));
  if (callee.is_undefined()) throw error("'" + callee.undefined_name() + "' is undefined");
  if (!callee.is_function()) throw error("'" + callee.type_name() + "' object is not callable");
  return callee.as_function().call(args, kwargs);
}

}  // namespace actorllm::jinja

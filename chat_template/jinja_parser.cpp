#include "chat_template/jinja_parser.hpp"

#include <initializer_list>

#include "chat_template/jinja_lexer.hpp"
#include "text/unicode.hpp"

namespace actorllm::jinja {
namespace {

class parser {
 public:
  explicit parser(std::vector<chunk> chunks) : chunks_(std::move(chunks)) {}

  /// Statements up to one whose keyword is in `terminators` (its tokens stay loaded and its
  /// keyword is returned), or to the end of the template when `terminators` is empty.
  stmt_list parse_body(std::initializer_list<const char*> terminators, std::string* found) {
    stmt_list body;
    while (index_ < chunks_.size()) {
      const chunk& c = chunks_[index_++];
      line_ = c.line;
      if (c.type == chunk::kind::text) {
        auto s = make(stmt::kind::text);
        s->text = c.content;
        body.push_back(std::move(s));
        continue;
      }
      load(c);
      if (c.type == chunk::kind::output) {
        auto s = make(stmt::kind::output);
        s->exprs.push_back(parse_expression());
        expect_end();
        body.push_back(std::move(s));
        continue;
      }
      if (peek().type != token::kind::name) fail("expected a statement keyword");
      std::string keyword = next().text;
      for (const char* t : terminators) {
        if (keyword == t) {
          *found = keyword;
          return body;
        }
      }
      body.push_back(parse_statement(keyword));
    }
    if (terminators.size() > 0) {
      std::string expected;
      for (const char* t : terminators) expected += std::string(expected.empty() ? "" : " or ") + t;
      fail("missing " + expected + " (template ended)");
    }
    return body;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw error(message, tokens_.empty() ? line_ : peek().line);
  }
  stmt_ptr make(stmt::kind k) const {
    auto s = std::make_unique<stmt>();
    s->type = k;
    s->line = line_;
    return s;
  }
  expr_ptr make_expr(expr::kind k) const {
    auto e = std::make_unique<expr>();
    e->type = k;
    e->line = tokens_.empty() ? line_ : peek().line;
    return e;
  }
  void load(const chunk& c) {
    tokens_ = tokenize_expression(c.content, c.line);
    pos_ = 0;
  }
  const token& peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const token& next() {
    const token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).type == token::kind::op && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).type == token::kind::name && peek(ahead).text == name;
  }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail(std::string("expected '") + op + "', found '" + peek().text + "'");
  }
  std::string expect_identifier() {
    if (peek().type != token::kind::name) fail("expected a name, found '" + peek().text + "'");
    return next().text;
  }
  void expect_end() {
    if (peek().type != token::kind::end) fail("unexpected '" + peek().text + "'");
  }

  stmt_ptr parse_statement(const std::string& keyword) {
    if (keyword == "if") return parse_if();
    if (keyword == "for") return parse_for();
    if (keyword == "set") return parse_set();
    if (keyword == "macro") return parse_macro();
    if (keyword == "break" || keyword == "continue") {
      expect_end();
      return make(keyword == "break" ? stmt::kind::break_ : stmt::kind::continue_);
    }
    if (keyword == "generation") {
      expect_end();
      auto s = make(stmt::kind::scope);
      std::string found;
      s->bodies.push_back(parse_body({"endgeneration"}, &found));
      expect_end();
      return s;
    }
    fail("unsupported statement '" + keyword + "'");
  }

  stmt_ptr parse_if() {
    auto s = make(stmt::kind::if_);
    s->exprs.push_back(parse_expression());
    expect_end();
    std::string found;
    s->bodies.push_back(parse_body({"elif", "else", "endif"}, &found));
    while (found == "elif") {
      s->exprs.push_back(parse_expression());
      expect_end();
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &found));
    }
    if (found == "else") {
      expect_end();
      s->bodies.push_back(parse_body({"endif"}, &found));
    }
    expect_end();
    return s;
  }

  stmt_ptr parse_for() {
    auto s = make(stmt::kind::for_);
    bool paren = accept_op("(");
    do s->names.push_back(expect_identifier());
    while (accept_op(","));
    if (paren) expect_op(")");
    if (!accept_name("in")) fail("expected 'in' in for loop");
    s->exprs.push_back(parse_expression(false));
    s->exprs.push_back(accept_name("if") ? parse_expression(false) : nullptr);
    if (is_name("recursive")) fail("recursive for loops are not supported");
    expect_end();
    std::string found;
    s->bodies.push_back(parse_body({"else", "endfor"}, &found));
    if (found == "else") {
      expect_end();
      s->bodies.push_back(parse_body({"endfor"}, &found));
    }
    expect_end();
    return s;
  }

  stmt_ptr parse_set() {
    auto s = make(stmt::kind::set);
    s->names.push_back(expect_identifier());
    if (accept_op(".")) s->attribute = expect_identifier();
    while (accept_op(",")) s->names.push_back(expect_identifier());
    if (!accept_op("=")) {
      if (s->names.size() != 1 || !s->attribute.empty()) fail("expected '=' in set");
      expect_end();
      s->type = stmt::kind::set_block;
      std::string found;
      s->bodies.push_back(parse_body({"endset"}, &found));
      expect_end();
      return s;
    }
    s->exprs.push_back(parse_tuple());
    expect_end();
    return s;
  }

  stmt_ptr parse_macro() {
    auto s = make(stmt::kind::macro);
    s->name = expect_identifier();
    expect_op("(");
    while (!accept_op(")")) {
      s->names.push_back(expect_identifier());
      s->exprs.push_back(accept_op("=") ? parse_expression() : nullptr);
      if (!is_op(")")) expect_op(",");
    }
    expect_end();
    std::string found;
    s->bodies.push_back(parse_body({"endmacro"}, &found));
    return s;
  }

  // An expression, or a tuple of them separated by commas (set a = 1, 2).
  expr_ptr parse_tuple() {
    auto first = parse_expression();
    if (!is_op(",")) return first;
    auto t = make_expr(expr::kind::tuple);
    t->args.push_back(std::move(first));
    while (accept_op(",")) {
      if (peek().type == token::kind::end) break;
      t->args.push_back(parse_expression());
    }
    return t;
  }

  expr_ptr parse_expression(bool with_condition = true) {
    auto e = parse_or();
    while (with_condition && is_name("if")) {
      next();
      auto c = make_expr(expr::kind::cond);
      c->args.push_back(std::move(e));
      c->args.push_back(parse_or());
      c->args.push_back(accept_name("else") ? parse_expression() : nullptr);
      e = std::move(c);
    }
    return e;
  }

  expr_ptr binary(const std::string& op, expr_ptr a, expr_ptr b) {
    auto e = make_expr(expr::kind::binary);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return e;
  }

  expr_ptr parse_or() {
    auto e = parse_and();
    while (accept_name("or")) e = binary("or", std::move(e), parse_and());
    return e;
  }
  expr_ptr parse_and() {
    auto e = parse_not();
    while (accept_name("and")) e = binary("and", std::move(e), parse_not());
    return e;
  }
  expr_ptr parse_not() {
    if (is_name("not")) {
      auto e = make_expr(expr::kind::unary);
      next();
      e->name = "not";
      e->args.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }
  expr_ptr parse_compare() {
    auto e = parse_math1();
    bool compared = false;
    while (true) {
      std::string op;
      if (peek().type == token::kind::op &&
          (is_op("==") || is_op("!=") || is_op("<") || is_op(">") || is_op("<=") || is_op(">="))) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        return e;
      }
      if (compared) fail("chained comparisons are not supported");
      compared = true;
      e = binary(op, std::move(e), parse_math1());
    }
  }
  expr_ptr parse_math1() {
    auto e = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      e = binary(op, std::move(e), parse_concat());
    }
    return e;
  }
  expr_ptr parse_concat() {
    auto e = parse_math2();
    while (accept_op("~")) e = binary("~", std::move(e), parse_math2());
    return e;
  }
  expr_ptr parse_math2() {
    auto e = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      e = binary(op, std::move(e), parse_pow());
    }
    return e;
  }
  expr_ptr parse_pow() {
    auto e = parse_unary(true);
    while (accept_op("**")) e = binary("**", std::move(e), parse_unary(true));
    return e;
  }
  expr_ptr parse_unary(bool with_filter) {
    expr_ptr e;
    if (is_op("-") || is_op("+")) {
      e = make_expr(expr::kind::unary);
      e->name = next().text;
      e->args.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    return with_filter ? parse_filter_expr(std::move(e)) : std::move(e);
  }

  expr_ptr parse_primary() {
    const token& t = peek();
    auto e = make_expr(expr::kind::literal);
    switch (t.type) {
      case token::kind::name: {
        std::string n = next().text;
        if (n == "true" || n == "True")
          e->literal = value(true);
        else if (n == "false" || n == "False")
          e->literal = value(false);
        else if (n == "none" || n == "None")
          e->literal = value::none();
        else {
          e->type = expr::kind::name;
          e->name = n;
        }
        return e;
      }
      case token::kind::string: {
        std::string s = next().text;
        while (peek().type == token::kind::string) s += next().text;
        e->literal = value(std::move(s));
        return e;
      }
      case token::kind::integer:
        e->literal = value(next().integer);
        return e;
      case token::kind::number:
        e->literal = value(next().number);
        return e;
      case token::kind::op:
        break;
      case token::kind::end:
        fail("unexpected end of expression");
    }
    if (accept_op("(")) {
      if (accept_op(")")) {
        e->type = expr::kind::tuple;
        return e;
      }
      auto inner = parse_expression();
      if (!is_op(",")) {
        expect_op(")");
        return inner;
      }
      e->type = expr::kind::tuple;
      e->args.push_back(std::move(inner));
      while (accept_op(",") && !is_op(")")) e->args.push_back(parse_expression());
      expect_op(")");
      return e;
    }
    if (accept_op("[")) {
      e->type = expr::kind::list;
      while (!accept_op("]")) {
        e->args.push_back(parse_expression());
        if (!is_op("]")) expect_op(",");
      }
      return e;
    }
    if (accept_op("{")) {
      e->type = expr::kind::dict;
      while (!accept_op("}")) {
        e->args.push_back(parse_expression());
        expect_op(":");
        e->args.push_back(parse_expression());
        if (!is_op("}")) expect_op(",");
      }
      return e;
    }
    fail("unexpected '" + t.text + "'");
  }

  expr_ptr parse_postfix(expr_ptr e) {
    while (true) {
      if (accept_op(".")) {
        if (peek().type == token::kind::integer) {
          auto item = make_expr(expr::kind::item);
          auto index = make_expr(expr::kind::literal);
          index->literal = value(next().integer);
          item->args.push_back(std::move(e));
          item->args.push_back(std::move(index));
          e = std::move(item);
          continue;
        }
        auto a = make_expr(expr::kind::attr);
        a->name = expect_identifier();
        a->args.push_back(std::move(e));
        e = std::move(a);
      } else if (accept_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        auto c = make_expr(expr::kind::call);
        c->args.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  expr_ptr parse_subscript(expr_ptr subject) {
    expr_ptr parts[3];
    bool is_slice = false;
    for (int i = 0; i < 3; ++i) {
      if (!is_op(":") && !is_op("]")) parts[i] = parse_expression();
      if (i < 2 && accept_op(":")) {
        is_slice = true;
        continue;
      }
      break;
    }
    expect_op("]");
    auto e = make_expr(is_slice ? expr::kind::slice : expr::kind::item);
    e->args.push_back(std::move(subject));
    if (!is_slice && !parts[0]) fail("empty subscript");
    for (int i = 0; i < (is_slice ? 3 : 1); ++i) e->args.push_back(std::move(parts[i]));
    return e;
  }

  void parse_call_args(expr& call) {
    expect_op("(");
    while (!accept_op(")")) {
      if (peek().type == token::kind::name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        call.kwargs.emplace_back(key, parse_expression());
      } else {
        if (!call.kwargs.empty()) fail("positional argument after keyword argument");
        call.args.push_back(parse_expression());
      }
      if (!is_op(")")) expect_op(",");
    }
  }

  expr_ptr parse_filter_expr(expr_ptr e) {
    while (true) {
      if (accept_op("|")) {
        auto f = make_expr(expr::kind::filter);
        f->name = expect_identifier();
        f->args.push_back(std::move(e));
        if (is_op("(")) parse_call_args(*f);
        e = std::move(f);
      } else if (is_name("is")) {
        next();
        auto t = make_expr(expr::kind::test);
        t->negated = accept_name("not");
        t->name = expect_identifier();
        t->args.push_back(std::move(e));
        const token& a = peek();
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((a.type == token::kind::name || a.type == token::kind::string ||
                    a.type == token::kind::integer || a.type == token::kind::number || is_op("[") ||
                    is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and") && !is_name("if") &&
                   !is_name("is") && !is_name("in") && !is_name("not")) {
          t->args.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        auto c = make_expr(expr::kind::call);
        c->args.push_back(std::move(e));
        parse_call_args(*c);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  std::vector<chunk> chunks_;
  size_t index_ = 0;
  std::vector<token> tokens_;
  size_t pos_ = 0;
  int line_ = 1;
};

}  // namespace

stmt_list parse_template(std::string_view source) {
  // Python reads a template as text; bytes that are not UTF-8 would reach
  // string methods (lower(), slicing by code point) that assume it.
  if (!unicode::is_valid_utf8(source)) throw error("the template is not valid UTF-8");
  parser p(split_template(source));
  std::string found;
  return p.parse_body({}, &found);
}

}  // namespace actorllm::jinja

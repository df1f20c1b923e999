#pragma once
/// The grammar every front end compiles to: rules whose bodies are expressions over bytes.
///
/// GBNF, regular expressions, choice lists and JSON Schema all produce a `grammar_ir`; the
/// automaton builder (automaton_builder.hpp) turns it into one byte-level pushdown automaton.
/// Characters are bytes here: a class of code points becomes the alternation of its UTF-8
/// byte sequences (`code_points`), so the automaton only ever reads valid UTF-8 through it.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace actorllm::grammar {

/// A regular expression over bytes, with references to other rules.
struct expr {
  enum class kind : uint8_t {
    empty,
    byte_range,
    sequence,
    alternation,
    repeat,
    rule_ref,
    char_count
  };
  kind k = kind::empty;
  uint8_t lo = 0, hi = 0;  // byte_range: one byte in [lo, hi]
  int32_t rule = -1;       // rule_ref: index into grammar_ir::rules
  int32_t min = 0;         // repeat: at least min copies of items[0] (char_count: characters)
  int32_t max = 0;         // ... and at most max (max < 0: unbounded)
  std::vector<expr> items;
};

/// A closed range of Unicode code points.
using code_point_range = std::pair<char32_t, char32_t>;

expr empty();
expr byte_range(uint8_t lo, uint8_t hi);
/// The exact bytes of `text`, in order.
expr literal(std::string_view text);
expr sequence(std::vector<expr> items);
/// Matches any one of `items`; an empty list matches nothing.
expr alternation(std::vector<expr> items);
/// `item` repeated min..max times (max < 0: unbounded).
expr repeat(expr item, int32_t min, int32_t max);
expr optional(expr item);
/// The texts of `item` that hold min..max characters (max < 0: no limit) as written inside a
/// JSON string: an escape (\n, \u00e9) is one character, and so is a UTF-8 sequence. `item`
/// must call no rule; the automaton builder intersects its automaton with a counter, so the
/// cost grows with max (or min) times the states of `item`.
expr char_count(expr item, int32_t min, int32_t max);
expr rule_ref(int32_t rule);
/// One code point from `ranges` (any order, may overlap), as UTF-8; surrogates never match.
expr code_points(std::vector<code_point_range> ranges);
/// The complement of `ranges` among Unicode scalar values.
std::vector<code_point_range> complement(std::vector<code_point_range> ranges);
/// Sorted, merged, surrogate-free copy of `ranges`.
std::vector<code_point_range> normalize_ranges(std::vector<code_point_range> ranges);

struct rule {
  std::string name;
  expr body;
  /// Keep this rule one automaton rule called from all its uses (so its states and their
  /// token caches serve every use) rather than inlining a copy into each: for rules that are
  /// used often and whose states accept much of a vocabulary (a JSON string's characters).
  bool shared = false;
};

/// Rules by index; `root` is where matching starts and where it may end.
struct grammar_ir {
  std::vector<rule> rules;
  int32_t root = 0;

  /// Index of the rule named `name`, adding an empty one when there is none.
  int32_t rule_index(const std::string& name);
  /// Index of the rule named `name`, or -1.
  int32_t find_rule(const std::string& name) const;

 private:
  std::unordered_map<std::string, int32_t> index_;
};

}  // namespace actorllm::grammar

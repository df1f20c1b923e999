#include "grammar/automaton_builder.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include "grammar/automaton_check.hpp"
#include "grammar/grammar_error.hpp"
#include "grammar/rule_graph.hpp"

namespace actorllm::grammar {
namespace {

// Thrown when a state budget runs out, or the time budget; build_automaton names the rule and
// the limit.
struct too_large {};
struct too_slow {};

// A count of states that may still be made, and the time by which the build must end (checked
// every 256 states: a clock read per state would cost more than the state).
class state_budget {
 public:
  state_budget(size_t states, std::chrono::steady_clock::time_point deadline)
      : states_(states), deadline_(deadline) {}
  void take() {
    if (states_ == 0) throw too_large{};
    --states_;
    if ((++made_ & 255) == 0 && std::chrono::steady_clock::now() > deadline_) throw too_slow{};
  }

 private:
  size_t states_;
  std::chrono::steady_clock::time_point deadline_;
  uint32_t made_ = 0;
};

// A DFA state before the rules are joined: edges point at states of the same rule; calls
// name rules of the grammar_ir.
struct dfa_state {
  bool final = false;
  std::vector<automaton::byte_edge> bytes;
  std::vector<automaton::call_edge> calls;
};

class nfa;
// Subset construction from `start`; `final` is the NFA's accepting state.
std::vector<dfa_state> determinize(const nfa& n, int32_t start, int32_t final,
                                   state_budget& budget);

// One rule's NFA (Thompson): fragments are built between two given states and never add an
// edge into their `from` or out of their `to`, so alternatives may share both ends. A call
// to an inlined rule builds that rule's body in place, once per continuation state.
class nfa {
 public:
  struct state {
    std::vector<int32_t> eps;
    std::vector<automaton::byte_edge> bytes;
    std::vector<automaton::call_edge> calls;  // rule: index into grammar_ir::rules
  };

  nfa(const grammar_ir& ir, const std::vector<bool>& inlined, state_budget& budget)
      : ir_(ir), inlined_(inlined), budget_(budget) {}

  int32_t add() {
    budget_.take();
    states.emplace_back();
    return static_cast<int32_t>(states.size() - 1);
  }

  void build(const expr& e, int32_t from, int32_t to) {
    switch (e.k) {
      case expr::kind::empty:
        states[from].eps.push_back(to);
        return;
      case expr::kind::byte_range:
        states[from].bytes.push_back({e.lo, e.hi, to});
        return;
      case expr::kind::sequence: {
        int32_t cur = from;
        for (size_t i = 0; i < e.items.size(); ++i) {
          int32_t next = i + 1 == e.items.size() ? to : add();
          build(e.items[i], cur, next);
          cur = next;
        }
        return;
      }
      case expr::kind::alternation:
        for (const expr& item : e.items) build(item, from, to);
        return;
      case expr::kind::repeat:
        build_repeat(e.items[0], e.min, e.max, from, to);
        return;
      case expr::kind::char_count:
        build_char_count(e, from, to);
        return;
      case expr::kind::rule_ref: {
        if (!inlined_[e.rule]) {
          states[from].calls.push_back({e.rule, to});
          return;
        }
        auto [it, added] = inline_entries_.try_emplace({e.rule, to}, -1);
        if (added) {
          int32_t entry = add();
          it->second = entry;
          build(ir_.rules[e.rule].body, entry, to);
        }
        states[from].eps.push_back(it->second);
        return;
      }
    }
  }

  std::vector<state> states;

 private:
  void build_char_count(const expr& e, int32_t from, int32_t to);
  void build_repeat(const expr& item, int32_t min, int32_t max, int32_t from, int32_t to) {
    if (max == 0) {
      states[from].eps.push_back(to);
      return;
    }
    int32_t cur = from;
    for (int32_t i = 0; i < min; ++i) {
      int32_t next = (i + 1 == min && max == min) ? to : add();
      build(item, cur, next);
      cur = next;
    }
    if (max == min) return;
    if (max < 0) {
      int32_t loop = add();
      states[cur].eps.push_back(loop);
      build(item, loop, loop);
      states[loop].eps.push_back(to);
      return;
    }
    for (int32_t i = min; i < max; ++i) {
      states[cur].eps.push_back(to);
      int32_t next = i + 1 == max ? to : add();
      build(item, cur, next);
      cur = next;
    }
  }

  const grammar_ir& ir_;
  const std::vector<bool>& inlined_;
  state_budget& budget_;
  std::map<std::pair<int32_t, int32_t>, int32_t> inline_entries_;
};

// How reading a byte inside a JSON string moves through its characters: state 0 between
// characters, 1 after a backslash, 2..5 before the four hex digits of \uXXXX. `counted`: the
// byte starts a character (a continuation byte of UTF-8, or the rest of an escape, does not).
struct char_step {
  int8_t next;
  bool counted;
};
char_step read_char_byte(int8_t state, uint8_t byte) {
  switch (state) {
    case 0:
      if (byte == '\\') return {1, true};
      return {0, byte < 0x80 || byte >= 0xC0};
    case 1:
      return {int8_t(byte == 'u' ? 2 : 0), false};
    default:
      return {int8_t(state == 5 ? 0 : state + 1), false};
  }
}

// The states of `item`'s DFA paired with the characters read so far (0..max, or 0..min when
// max < 0: past min the count no longer matters), each a state of this NFA.
void nfa::build_char_count(const expr& e, int32_t from, int32_t to) {
  nfa inner(ir_, inlined_, budget_);
  const int32_t start = inner.add(), final = inner.add();
  inner.build(e.items[0], start, final);
  for (const state& s : inner.states)
    if (!s.calls.empty()) throw grammar_error("a character count cannot hold a rule call");
  const std::vector<dfa_state> dfa = determinize(inner, start, final, budget_);
  const int32_t cap = e.max < 0 ? e.min : e.max;
  // Byte values where read_char_byte changes, whatever the state.
  static constexpr int cuts[] = {'\\', '\\' + 1, 'u', 'u' + 1, 0x80, 0xC0, 256};
  std::map<std::tuple<int32_t, int8_t, int32_t>, int32_t> ids;
  std::vector<std::tuple<int32_t, int8_t, int32_t>> work;
  auto id = [&](int32_t d, int8_t c_state, int32_t count) {
    auto [it, added] = ids.try_emplace({d, c_state, count}, -1);
    if (added) {
      it->second = add();
      work.push_back(it->first);
    }
    return it->second;
  };
  const int32_t first = id(0, 0, 0);  // before taking states[from]: add() may move it
  states[from].eps.push_back(first);
  while (!work.empty()) {
    const auto [d, c_state, count] = work.back();
    work.pop_back();
    const int32_t s = ids[{d, c_state, count}];
    if (dfa[d].final && c_state == 0 && count >= e.min) states[s].eps.push_back(to);
    for (const auto& edge : dfa[d].bytes) {
      for (int lo = edge.lo; lo <= edge.hi;) {
        const int hi =
            std::min<int>(edge.hi, *std::upper_bound(std::begin(cuts), std::end(cuts), lo) - 1);
        const char_step step = read_char_byte(c_state, uint8_t(lo));
        int32_t next = count + (step.counted ? 1 : 0);
        if (e.max < 0) next = std::min(next, cap);
        if (next <= cap) {
          const int32_t target = id(edge.target, step.next, next);
          states[s].bytes.push_back({uint8_t(lo), uint8_t(hi), target});
        }
        lo = hi + 1;
      }
    }
  }
}

struct subset_hash {
  size_t operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

std::vector<dfa_state> determinize(const nfa& n, int32_t start, int32_t final,
                                   state_budget& budget) {
  std::vector<int32_t> mark(n.states.size(), -1);
  int32_t stamp = 0;
  auto closure = [&](std::vector<int32_t> seeds) {
    ++stamp;
    std::vector<int32_t> out;
    while (!seeds.empty()) {
      int32_t s = seeds.back();
      seeds.pop_back();
      if (mark[s] == stamp) continue;
      mark[s] = stamp;
      out.push_back(s);
      for (int32_t t : n.states[s].eps) seeds.push_back(t);
    }
    std::sort(out.begin(), out.end());
    return out;
  };

  std::vector<dfa_state> dfa;
  std::vector<std::vector<int32_t>> subsets;
  std::unordered_map<std::vector<int32_t>, int32_t, subset_hash> ids;
  auto intern = [&](std::vector<int32_t> subset) {
    auto [it, added] = ids.try_emplace(subset, static_cast<int32_t>(subsets.size()));
    if (added) {
      budget.take();
      subsets.push_back(std::move(subset));
      dfa.emplace_back();
    }
    return it->second;
  };
  intern(closure({start}));
  std::vector<automaton::byte_edge> edges;
  std::vector<int> bounds;
  for (size_t d = 0; d < subsets.size(); ++d) {
    edges.clear();
    bounds.clear();
    std::map<int32_t, std::vector<int32_t>> calls;
    bool final_state = false;
    for (int32_t s : subsets[d]) {
      final_state |= s == final;
      for (const auto& e : n.states[s].bytes) {
        edges.push_back(e);
        bounds.push_back(e.lo);
        bounds.push_back(e.hi + 1);
      }
      for (const auto& c : n.states[s].calls) calls[c.rule].push_back(c.target);
    }
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    std::vector<automaton::byte_edge> out;
    for (size_t i = 0; i + 1 < bounds.size(); ++i) {
      const int lo = bounds[i], hi = bounds[i + 1] - 1;
      std::vector<int32_t> seeds;
      for (const auto& e : edges)
        if (e.lo <= lo && hi <= e.hi) seeds.push_back(e.target);
      if (seeds.empty()) continue;
      int32_t target = intern(closure(std::move(seeds)));
      if (!out.empty() && out.back().target == target && out.back().hi + 1 == lo)
        out.back().hi = static_cast<uint8_t>(hi);
      else
        out.push_back({static_cast<uint8_t>(lo), static_cast<uint8_t>(hi), target});
    }
    std::vector<automaton::call_edge> call_out;
    for (auto& [rule, targets] : calls) call_out.push_back({rule, intern(closure(targets))});
    dfa[d].final = final_state;
    dfa[d].bytes = std::move(out);
    dfa[d].calls = std::move(call_out);
  }
  return dfa;
}

int64_t saturating(int64_t v) {
  return std::min<int64_t>(v, int64_t(1) << 40);
}

// NFA states `e` builds, calls to rules of `size` < 0 counting as one.
int64_t expr_size(const expr& e, const std::vector<int64_t>& size) {
  switch (e.k) {
    case expr::kind::empty:
    case expr::kind::byte_range:
      return 1;
    case expr::kind::rule_ref:
      return size[e.rule] < 0 ? 1 : size[e.rule];
    case expr::kind::sequence:
    case expr::kind::alternation: {
      int64_t total = 1;
      for (const expr& item : e.items) total = saturating(total + expr_size(item, size));
      return total;
    }
    case expr::kind::repeat: {
      int64_t copies = e.max < 0 ? std::max(e.min, 1) : e.max;
      return saturating(1 + saturating(copies * expr_size(e.items[0], size)));
    }
    case expr::kind::char_count:  // at most one state of the item per count
      return saturating(int64_t(1 + (e.max < 0 ? e.min : e.max)) * expr_size(e.items[0], size));
  }
  return 1;
}

}  // namespace

automaton build_automaton(const grammar_ir& source, const automaton_limits& limits) {
  grammar_ir ir = source;
  merge_identical_rules(ir);
  const size_t num_rules = ir.rules.size();
  const std::vector<bool> recursive = recursive_rules(ir);
  const std::vector<int64_t> sites = call_sites(ir);
  // Inline bottom-up (a rule's size counts the rules it inlines), unless the rule recurses,
  // is shared and used more than once, is too large, or would be copied too often.
  std::vector<int64_t> size(num_rules, -1);
  std::vector<bool> inlined(num_rules, false);
  for (int32_t r : callees_first(ir)) {
    const int64_t s = expr_size(ir.rules[r].body, size);
    const int64_t copies = std::max<int64_t>(sites[r], 1);
    if (recursive[r] || r == ir.root || (ir.rules[r].shared && copies > 1) ||
        s > static_cast<int64_t>(limits.inline_size) ||
        s * (copies - 1) > static_cast<int64_t>(limits.inline_copies))
      continue;
    inlined[r] = true;
    size[r] = s;
  }
  // The rules that stay rules: the root and every rule called (not inlined) from one of them.
  std::vector<int32_t> compiled_index(num_rules, -1);
  std::vector<int32_t> compiled = {ir.root};
  compiled_index[ir.root] = 0;
  for (size_t i = 0; i < compiled.size(); ++i) {
    for_each_call(ir, compiled[i], inlined, [&](int32_t callee) {
      if (compiled_index[callee] < 0) {
        compiled_index[callee] = static_cast<int32_t>(compiled.size());
        compiled.push_back(callee);
      }
    });
  }

  const auto deadline = limits.max_seconds > 0
                            ? std::chrono::steady_clock::now() +
                                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(limits.max_seconds))
                            : std::chrono::steady_clock::time_point::max();
  state_budget budget(limits.max_states, deadline);
  automaton a;
  for (int32_t r : compiled) {
    state_budget nfa_budget(limits.max_states, deadline);
    std::vector<dfa_state> dfa;
    try {
      nfa n(ir, inlined, nfa_budget);
      int32_t start = n.add(), final = n.add();
      n.build(ir.rules[r].body, start, final);
      dfa = determinize(n, start, final, budget);
    } catch (const too_large&) {
      throw grammar_error("grammar too large: rule '" + ir.rules[r].name + "' needs more than " +
                          std::to_string(limits.max_states) +
                          " automaton states (long bounded repetitions, or a regular expression "
                          "whose deterministic automaton explodes)");
    } catch (const too_slow&) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", limits.max_seconds);
      throw grammar_error(std::string("grammar too slow to compile: past its budget of ") +
                          seconds + " s at rule '" + ir.rules[r].name +
                          "' (a smaller schema, regex or grammar compiles)");
    }
    const int32_t offset = static_cast<int32_t>(a.states.size());
    const int32_t rule = static_cast<int32_t>(a.rule_start.size());
    a.rule_start.push_back(offset);
    a.rule_names.push_back(ir.rules[r].name);
    for (const dfa_state& d : dfa) {
      automaton::state st;
      st.rule = rule;
      st.final = d.final;
      st.bytes_begin = static_cast<uint32_t>(a.byte_edges.size());
      for (auto e : d.bytes) a.byte_edges.push_back({e.lo, e.hi, e.target + offset});
      st.bytes_end = static_cast<uint32_t>(a.byte_edges.size());
      st.calls_begin = static_cast<uint32_t>(a.call_edges.size());
      for (auto c : d.calls) a.call_edges.push_back({compiled_index[c.rule], c.target + offset});
      st.calls_end = static_cast<uint32_t>(a.call_edges.size());
      a.states.push_back(st);
    }
  }
  return trim_and_check(std::move(a));
}

}  // namespace actorllm::grammar

#include "grammar/automaton_check.hpp"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_set>

#include "grammar/grammar_error.hpp"

namespace actorllm::grammar {
namespace {

// States reachable from `from` through byte edges and calls to `callable` rules. `seen`
// (one entry per state) is a scratch mark: entries equal to `stamp` are visited.
std::vector<int32_t> forward(const automaton& a, const std::vector<int32_t>& from,
                             const std::vector<bool>& callable, std::vector<uint32_t>& seen,
                             uint32_t stamp) {
  std::vector<int32_t> out;
  auto visit = [&](int32_t t) {
    if (seen[t] != stamp) seen[t] = stamp, out.push_back(t);
  };
  for (int32_t s : from) visit(s);
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& st = a.states[out[i]];
    for (uint32_t j = st.bytes_begin; j < st.bytes_end; ++j) visit(a.byte_edges[j].target);
    for (uint32_t j = st.calls_begin; j < st.calls_end; ++j)
      if (callable[a.call_edges[j].rule]) visit(a.call_edges[j].target);
  }
  return out;
}

// Rules that match some text: a least fixed point.
std::vector<bool> productive_rules(const automaton& a) {
  const size_t num_rules = a.rule_start.size();
  std::vector<bool> productive(num_rules, false);
  std::vector<uint32_t> seen(a.states.size(), 0);
  uint32_t stamp = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < num_rules; ++r) {
      if (productive[r]) continue;
      for (int32_t s : forward(a, {a.rule_start[r]}, productive, seen, ++stamp)) {
        if (a.states[s].final) {
          productive[r] = changed = true;
          break;
        }
      }
    }
  }
  return productive;
}

// States from which a final state of their rule is reachable.
std::vector<bool> co_reachable(const automaton& a, const std::vector<bool>& callable) {
  std::vector<std::vector<int32_t>> back(a.states.size());
  for (size_t s = 0; s < a.states.size(); ++s) {
    const auto& st = a.states[s];
    for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i)
      back[a.byte_edges[i].target].push_back(static_cast<int32_t>(s));
    for (uint32_t i = st.calls_begin; i < st.calls_end; ++i)
      if (callable[a.call_edges[i].rule])
        back[a.call_edges[i].target].push_back(static_cast<int32_t>(s));
  }
  std::vector<bool> alive(a.states.size(), false);
  std::vector<int32_t> work;
  for (size_t s = 0; s < a.states.size(); ++s)
    if (a.states[s].final) alive[s] = true, work.push_back(static_cast<int32_t>(s));
  while (!work.empty()) {
    int32_t s = work.back();
    work.pop_back();
    for (int32_t p : back[s])
      if (!alive[p]) alive[p] = true, work.push_back(p);
  }
  return alive;
}

// Keeps the states marked `keep` (each rule's start among them when the rule is kept),
// renumbering states and rules.
automaton compact(const automaton& a, const std::vector<bool>& keep,
                  const std::vector<bool>& keep_rule) {
  std::vector<int32_t> new_state(a.states.size(), -1), new_rule(a.rule_start.size(), -1);
  automaton out;
  for (size_t r = 0; r < a.rule_start.size(); ++r) {
    if (!keep_rule[r]) continue;
    new_rule[r] = static_cast<int32_t>(out.rule_names.size());
    out.rule_names.push_back(a.rule_names[r]);
  }
  int32_t count = 0;
  for (size_t s = 0; s < a.states.size(); ++s)
    if (keep[s] && keep_rule[a.states[s].rule]) new_state[s] = count++;
  out.rule_start.resize(out.rule_names.size());
  for (size_t r = 0; r < a.rule_start.size(); ++r)
    if (keep_rule[r]) out.rule_start[new_rule[r]] = new_state[a.rule_start[r]];
  for (size_t s = 0; s < a.states.size(); ++s) {
    if (new_state[s] < 0) continue;
    const auto& st = a.states[s];
    automaton::state ns;
    ns.rule = new_rule[st.rule];
    ns.final = st.final;
    ns.bytes_begin = static_cast<uint32_t>(out.byte_edges.size());
    for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i) {
      auto e = a.byte_edges[i];
      if (new_state[e.target] >= 0) out.byte_edges.push_back({e.lo, e.hi, new_state[e.target]});
    }
    ns.bytes_end = static_cast<uint32_t>(out.byte_edges.size());
    ns.calls_begin = static_cast<uint32_t>(out.call_edges.size());
    for (uint32_t i = st.calls_begin; i < st.calls_end; ++i) {
      auto c = a.call_edges[i];
      if (new_state[c.target] >= 0 && new_rule[c.rule] >= 0)
        out.call_edges.push_back({new_rule[c.rule], new_state[c.target]});
    }
    ns.calls_end = static_cast<uint32_t>(out.call_edges.size());
    out.states.push_back(ns);
  }
  out.return_states.resize(out.rule_start.size());
  for (const auto& c : out.call_edges) out.return_states[c.rule].push_back(c.target);
  for (auto& v : out.return_states) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  return out;
}

// Rules that can end without reading a byte.
std::vector<bool> nullable_rules(const automaton& a) {
  const size_t num_rules = a.rule_start.size();
  std::vector<bool> nullable(num_rules, false);
  std::vector<bool> none(num_rules, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < num_rules; ++r) {
      if (nullable[r]) continue;
      for (int32_t s : reachable_without_bytes(a, static_cast<int32_t>(r), nullable)) {
        if (a.states[s].final) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

void check_left_recursion(const automaton& a) {
  const size_t num_rules = a.rule_start.size();
  const auto nullable = nullable_rules(a);
  std::vector<std::vector<int32_t>> first_calls(num_rules);
  for (size_t r = 0; r < num_rules; ++r)
    for (int32_t s : reachable_without_bytes(a, static_cast<int32_t>(r), nullable)) {
      const auto& st = a.states[s];
      for (uint32_t i = st.calls_begin; i < st.calls_end; ++i)
        first_calls[r].push_back(a.call_edges[i].rule);
    }
  // A cycle in first_calls is a left recursion: depth-first search with colours.
  std::vector<int> colour(num_rules, 0);
  std::vector<int32_t> path;
  std::function<void(int32_t)> visit = [&](int32_t r) {
    colour[r] = 1;
    path.push_back(r);
    for (int32_t c : first_calls[r]) {
      if (colour[c] == 1) {
        std::string cycle;
        auto it = std::find(path.begin(), path.end(), c);
        for (; it != path.end(); ++it) cycle += a.rule_names[*it] + " -> ";
        throw grammar_error("left recursion (a rule calls itself before reading a byte): " + cycle +
                            a.rule_names[c]);
      }
      if (colour[c] == 0) visit(c);
    }
    path.pop_back();
    colour[r] = 2;
  };
  for (size_t r = 0; r < num_rules; ++r)
    if (colour[r] == 0) visit(static_cast<int32_t>(r));
}

}  // namespace

std::vector<int32_t> reachable_without_bytes(const automaton& a, int32_t rule,
                                             const std::vector<bool>& nullable) {
  std::vector<int32_t> out = {a.rule_start[rule]};
  std::unordered_set<int32_t> seen = {a.rule_start[rule]};
  for (size_t i = 0; i < out.size(); ++i) {
    const auto& st = a.states[out[i]];
    for (uint32_t j = st.calls_begin; j < st.calls_end; ++j) {
      const auto& c = a.call_edges[j];
      if (nullable[c.rule] && seen.insert(c.target).second) out.push_back(c.target);
    }
  }
  return out;
}

void index_transitions(automaton& a, size_t max_entries) {
  // Classes: bytes that no edge boundary separates.
  std::array<bool, 257> starts_class{};
  starts_class[0] = true;
  for (const auto& e : a.byte_edges) starts_class[e.lo] = starts_class[e.hi + 1] = true;
  int32_t c = -1;
  for (int b = 0; b < 256; ++b) {
    if (starts_class[b]) ++c;
    a.byte_class[b] = static_cast<uint8_t>(c);
  }
  a.num_classes = c + 1;
  a.dense.clear();
  if (a.states.size() * size_t(a.num_classes) > max_entries) return;
  std::vector<int32_t> dense(a.states.size() * a.num_classes, -1);
  for (size_t s = 0; s < a.states.size(); ++s) {
    const auto& st = a.states[s];
    for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i) {
      const auto& e = a.byte_edges[i];
      for (int b = e.lo; b <= e.hi; ++b) dense[s * a.num_classes + a.byte_class[b]] = e.target;
    }
  }
  a.dense = std::move(dense);
}

automaton trim_and_check(automaton a) {
  const auto productive = productive_rules(a);
  if (!productive[automaton::root_rule])
    throw grammar_error("the grammar matches no text (rule '" + a.rule_names[0] + "')");
  std::vector<int32_t> starts;
  for (size_t r = 0; r < a.rule_start.size(); ++r)
    if (productive[r]) starts.push_back(a.rule_start[r]);
  std::vector<uint32_t> seen(a.states.size(), 0);
  std::vector<bool> keep(a.states.size(), false);
  for (int32_t s : forward(a, starts, productive, seen, 1)) keep[s] = true;
  auto alive = co_reachable(a, productive);
  for (size_t s = 0; s < a.states.size(); ++s) keep[s] = keep[s] && alive[s];
  // Rules still called from a kept state of a rule reachable from the root.
  std::vector<std::vector<int32_t>> states_of(a.rule_start.size());
  for (size_t s = 0; s < a.states.size(); ++s)
    if (keep[s]) states_of[a.states[s].rule].push_back(static_cast<int32_t>(s));
  std::vector<bool> keep_rule(a.rule_start.size(), false);
  keep_rule[automaton::root_rule] = true;
  for (std::vector<int32_t> work = {automaton::root_rule}; !work.empty();) {
    int32_t r = work.back();
    work.pop_back();
    for (int32_t s : states_of[r]) {
      const auto& st = a.states[s];
      for (uint32_t i = st.calls_begin; i < st.calls_end; ++i) {
        const auto& c = a.call_edges[i];
        if (productive[c.rule] && keep[c.target] && !keep_rule[c.rule])
          keep_rule[c.rule] = true, work.push_back(c.rule);
      }
    }
  }
  automaton out = compact(a, keep, keep_rule);
  check_left_recursion(out);
  index_transitions(out);
  return out;
}

}  // namespace actorllm::grammar

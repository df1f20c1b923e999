#include "grammar/rule_graph.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace actorllm::grammar {
namespace {

void collect_calls(const expr& e, std::vector<int32_t>& out) {
  if (e.k == expr::kind::rule_ref) out.push_back(e.rule);
  for (const expr& item : e.items) collect_calls(item, out);
}

std::vector<std::vector<int32_t>> call_graph(const grammar_ir& ir) {
  std::vector<std::vector<int32_t>> calls(ir.rules.size());
  for (size_t r = 0; r < ir.rules.size(); ++r) {
    collect_calls(ir.rules[r].body, calls[r]);
    std::sort(calls[r].begin(), calls[r].end());
    calls[r].erase(std::unique(calls[r].begin(), calls[r].end()), calls[r].end());
  }
  return calls;
}

// Tarjan's strongly connected components, iteratively (schemas may nest deeply). Components
// come out callees first.
std::vector<std::vector<int32_t>> components(const std::vector<std::vector<int32_t>>& calls) {
  const int32_t n = static_cast<int32_t>(calls.size());
  std::vector<int32_t> index(n, -1), low(n, 0);
  std::vector<bool> on_stack(n, false);
  std::vector<int32_t> stack;
  std::vector<std::vector<int32_t>> out;
  int32_t counter = 0;
  struct frame {
    int32_t node;
    size_t next;
  };
  for (int32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<frame> work = {{root, 0}};
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = true;
    while (!work.empty()) {
      frame& f = work.back();
      if (f.next < calls[f.node].size()) {
        int32_t m = calls[f.node][f.next++];
        if (index[m] < 0) {
          index[m] = low[m] = counter++;
          stack.push_back(m);
          on_stack[m] = true;
          work.push_back({m, 0});
        } else if (on_stack[m]) {
          low[f.node] = std::min(low[f.node], index[m]);
        }
        continue;
      }
      const int32_t v = f.node;
      work.pop_back();
      if (!work.empty()) low[work.back().node] = std::min(low[work.back().node], low[v]);
      if (low[v] == index[v]) {
        std::vector<int32_t> component;
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          component.push_back(w);
        } while (w != v);
        out.push_back(std::move(component));
      }
    }
  }
  return out;
}

void walk_calls(const grammar_ir& ir, const expr& e, const std::vector<bool>& inlined,
                std::vector<bool>& seen, const std::function<void(int32_t)>& f) {
  if (e.k == expr::kind::rule_ref) {
    if (!inlined[e.rule]) {
      f(e.rule);
    } else if (!seen[e.rule]) {
      seen[e.rule] = true;
      walk_calls(ir, ir.rules[e.rule].body, inlined, seen, f);
    }
    return;
  }
  for (const expr& item : e.items) walk_calls(ir, item, inlined, seen, f);
}

void count_sites(const expr& e, int64_t copies, std::vector<int64_t>& sites) {
  if (e.k == expr::kind::rule_ref) sites[e.rule] += copies;
  if (e.k == expr::kind::repeat) copies *= e.max < 0 ? std::max(e.min, 1) : e.max;
  copies = std::min<int64_t>(copies, int64_t(1) << 32);
  for (const expr& item : e.items) count_sites(item, copies, sites);
}

// A canonical text of `e` with calls renamed through `rep`: equal texts, equal languages.
void serialize(const expr& e, const std::vector<int32_t>& rep, std::string& out) {
  out += static_cast<char>('0' + static_cast<int>(e.k));
  switch (e.k) {
    case expr::kind::byte_range:
      out += static_cast<char>(e.lo), out += static_cast<char>(e.hi);
      break;
    case expr::kind::rule_ref:
      out += std::to_string(rep[e.rule]);
      break;
    case expr::kind::repeat:
    case expr::kind::char_count:
      out += std::to_string(e.min) + "," + std::to_string(e.max);
      break;
    default:
      break;
  }
  out += '(';
  for (const expr& item : e.items) serialize(item, rep, out);
  out += ')';
}

void rename_calls(expr& e, const std::vector<int32_t>& rep) {
  if (e.k == expr::kind::rule_ref) e.rule = rep[e.rule];
  for (expr& item : e.items) rename_calls(item, rep);
}

}  // namespace

std::vector<int64_t> call_sites(const grammar_ir& ir) {
  std::vector<int64_t> sites(ir.rules.size(), 0);
  for (const rule& r : ir.rules) count_sites(r.body, 1, sites);
  return sites;
}

size_t merge_identical_rules(grammar_ir& ir) {
  const auto recursive = recursive_rules(ir);
  std::vector<int32_t> rep(ir.rules.size());
  for (size_t r = 0; r < rep.size(); ++r) rep[r] = static_cast<int32_t>(r);
  std::unordered_map<std::string, int32_t> seen;
  size_t merged = 0;
  std::string key;
  for (int32_t r : callees_first(ir)) {  // a rule's callees are merged before it
    if (recursive[r] || r == ir.root) continue;
    key.clear();
    serialize(ir.rules[r].body, rep, key);
    auto [it, added] = seen.try_emplace(key, r);
    if (!added) {
      rep[r] = it->second;
      ir.rules[it->second].shared |= ir.rules[r].shared;
      ++merged;
    }
  }
  if (merged)
    for (rule& r : ir.rules) rename_calls(r.body, rep);
  return merged;
}

std::vector<bool> recursive_rules(const grammar_ir& ir) {
  const auto calls = call_graph(ir);
  std::vector<bool> recursive(ir.rules.size(), false);
  for (const auto& component : components(calls)) {
    if (component.size() > 1) {
      for (int32_t r : component) recursive[r] = true;
    } else {
      const auto& own = calls[component[0]];
      recursive[component[0]] = std::binary_search(own.begin(), own.end(), component[0]);
    }
  }
  return recursive;
}

std::vector<int32_t> callees_first(const grammar_ir& ir) {
  std::vector<int32_t> order;
  for (const auto& component : components(call_graph(ir)))
    order.insert(order.end(), component.begin(), component.end());
  return order;
}

void for_each_call(const grammar_ir& ir, int32_t rule, const std::vector<bool>& inlined,
                   const std::function<void(int32_t)>& f) {
  std::vector<bool> seen(ir.rules.size(), false);
  walk_calls(ir, ir.rules[rule].body, inlined, seen, f);
}

}  // namespace actorllm::grammar

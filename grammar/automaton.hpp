#pragma once
/// The byte-level pushdown automaton every grammar compiles to.
///
/// Each rule is a deterministic automaton over bytes whose edges either read a byte range or
/// call another rule (push a return state, run the callee from its start, pop back when the
/// callee reaches a final state). Rules that do not recurse are inlined into their callers at
/// build time, so a grammar without recursion (a regex, a choice, most JSON schemas) is a
/// single DFA and never pushes. All states of all rules share one numbering.
///
/// Invariants the builder guarantees (automaton_builder.hpp): every state is reachable from
/// its rule's start and can reach one of its finals; every called rule matches some text; no
/// rule calls itself before reading a byte (no left recursion). Hence every stack of return
/// states is alive: some continuation completes it.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace actorllm::grammar {

struct automaton {
  struct byte_edge {
    uint8_t lo, hi;  // reads one byte in [lo, hi]
    int32_t target;
  };
  struct call_edge {
    int32_t rule;  // runs this rule, then continues at target
    int32_t target;
  };
  struct state {
    int32_t rule = 0;
    bool final = false;                       // the rule may end here
    uint32_t bytes_begin = 0, bytes_end = 0;  // into byte_edges, sorted by lo, disjoint
    uint32_t calls_begin = 0, calls_end = 0;  // into call_edges
  };

  std::vector<state> states;
  std::vector<byte_edge> byte_edges;
  std::vector<call_edge> call_edges;
  std::vector<int32_t> rule_start;                  // rule → its start state
  std::vector<std::string> rule_names;              // rule → its name in the source grammar
  std::vector<std::vector<int32_t>> return_states;  // rule → targets of every call to it
  static constexpr int32_t root_rule = 0;           // matching starts and ends in rule 0

  /// A dense transition table when it fits (index_transitions): bytes in the same class
  /// lead everywhere to the same state, so next(s, b) = dense[s * num_classes + class[b]].
  std::array<uint8_t, 256> byte_class{};
  int32_t num_classes = 0;
  std::vector<int32_t> dense;

  /// The state after reading `byte` in state `s`, or -1.
  int32_t next(int32_t s, uint8_t byte) const {
    if (!dense.empty()) return dense[size_t(s) * num_classes + byte_class[byte]];
    const state& st = states[s];
    for (uint32_t i = st.bytes_begin; i < st.bytes_end; ++i) {
      const byte_edge& e = byte_edges[i];
      if (byte < e.lo) return -1;
      if (byte <= e.hi) return e.target;
    }
    return -1;
  }
  bool reads_bytes(int32_t s) const { return states[s].bytes_begin != states[s].bytes_end; }
  /// True for a state (s >= 0) that only reads bytes: no calls, not final.
  bool is_plain(int32_t s) const {
    if (s < 0) return false;
    const state& st = states[s];
    return !st.final && st.calls_begin == st.calls_end && st.bytes_begin != st.bytes_end;
  }
  /// A final state with no edges: calling a rule whose return state is one of these needs no
  /// return frame (a tail call), which keeps right-recursive rules at constant stack depth.
  bool is_pure_end(int32_t s) const {
    const state& st = states[s];
    return st.final && st.bytes_begin == st.bytes_end && st.calls_begin == st.calls_end;
  }
  size_t num_states() const { return states.size(); }
};

/// Fills byte_class, num_classes and dense (unless the table would take more than
/// `max_entries` entries; next() then scans the edges).
void index_transitions(automaton& a, size_t max_entries = size_t(16) << 20);

}  // namespace actorllm::grammar

#pragma once
/// grammar_ir → automaton: merge identical rules, inline the rules that do not recurse (while
/// they stay small, and unless marked shared),
/// build one NFA per remaining rule (Thompson), determinize it (subset construction over byte
/// ranges and calls), then drop what cannot match and check the invariants automaton.hpp
/// states.
#include "grammar/automaton.hpp"
#include "grammar/grammar_ir.hpp"

namespace actorllm::grammar {

struct automaton_limits {
  size_t max_states = 200'000;    // NFA or DFA states in all; beyond it the grammar is refused
  size_t inline_size = 20'000;    // a rule larger than this (NFA states) is called, not inlined
  size_t inline_copies = 50'000;  // nor one whose extra inlined copies would exceed this
  /// The time budget of one build, in seconds (0: none): past it the grammar is refused, so that
  /// no schema holds a compile thread for longer (the sizes above bound most grammars well
  /// below it; this is the bound for the ones they miss).
  double max_seconds = 10.0;
};

/// Throws grammar_error naming the rule for: left recursion, a grammar that matches nothing,
/// or one larger or slower to build than `limits`.
automaton build_automaton(const grammar_ir& ir, const automaton_limits& limits = {});

}  // namespace actorllm::grammar

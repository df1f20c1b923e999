#pragma once
/// The last step of build_automaton: remove what cannot take part in a match and check what
/// the matcher relies on (automaton.hpp's invariants).
#include <vector>

#include "grammar/automaton.hpp"

namespace actorllm::grammar {

/// Drops the states that cannot reach a final state or be reached from their rule's start,
/// calls to rules that match nothing, and rules no longer called; renumbers; fills
/// return_states. Throws grammar_error when the root matches nothing, or naming the rules of
/// a left recursion (a rule that can call itself before reading a byte).
automaton trim_and_check(automaton a);

/// States of `rule` reachable from its start through calls to `nullable` rules alone (no byte
/// read), the start first.
std::vector<int32_t> reachable_without_bytes(const automaton& a, int32_t rule,
                                             const std::vector<bool>& nullable);

}  // namespace actorllm::grammar

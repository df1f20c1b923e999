#pragma once
/// Which rules of a grammar_ir call which: recursion and a bottom-up order for inlining.
#include <functional>
#include <vector>

#include "grammar/grammar_ir.hpp"

namespace actorllm::grammar {

/// For each rule: true when it can call itself (directly or through others).
std::vector<bool> recursive_rules(const grammar_ir& ir);

/// Every rule once, each after all the rules it calls (except within a recursive cycle).
std::vector<int32_t> callees_first(const grammar_ir& ir);

/// For each rule: how many copies of a call to it the rule bodies hold (a call inside
/// x{0,5} counts 5; inside x* once).
std::vector<int64_t> call_sites(const grammar_ir& ir);

/// Makes rules with the same body (after their callees are merged) one rule, rewriting
/// every call; recursive rules are left as they are. Returns the number of rules merged away.
size_t merge_identical_rules(grammar_ir& ir);

/// Calls `f(callee)` for each rule that `rule` calls, looking through the rules marked
/// `inlined` (their bodies count as part of `rule`). A callee may be reported more than once.
void for_each_call(const grammar_ir& ir, int32_t rule, const std::vector<bool>& inlined,
                   const std::function<void(int32_t)>& f);

}  // namespace actorllm::grammar

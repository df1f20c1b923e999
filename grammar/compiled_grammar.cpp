#include "grammar/compiled_grammar.hpp"

namespace actorllm::grammar {

compiled_grammar::compiled_grammar(automaton a, std::shared_ptr<const vocabulary> vocab)
    : automaton_(std::move(a)),
      vocab_(std::move(vocab)),
      cache_(new std::atomic<const state_tokens*>[automaton_.num_states()]) {
  for (size_t s = 0; s < automaton_.num_states(); ++s) cache_[s].store(nullptr);
}

compiled_grammar::~compiled_grammar() {
  for (size_t s = 0; s < automaton_.num_states(); ++s) delete cache_[s].load();
}

const state_tokens& compiled_grammar::tokens_at(int32_t s) const {
  if (const state_tokens* t = cache_[s].load(std::memory_order_acquire)) return *t;
  std::lock_guard lock(mutex_);
  if (const state_tokens* t = cache_[s].load(std::memory_order_acquire)) return *t;
  auto* t = new state_tokens(classify_tokens(automaton_, *vocab_, s));
  cache_[s].store(t, std::memory_order_release);
  return *t;
}

void compiled_grammar::precompute() const {
  for (size_t s = 0; s < automaton_.num_states(); ++s)
    if (automaton_.reads_bytes(static_cast<int32_t>(s))) tokens_at(static_cast<int32_t>(s));
}

compiled_grammar::stats compiled_grammar::statistics() const {
  stats out;
  out.num_states = automaton_.num_states();
  out.num_rules = automaton_.rule_start.size();
  for (size_t s = 0; s < automaton_.num_states(); ++s) {
    if (const state_tokens* t = cache_[s].load(std::memory_order_acquire)) {
      ++out.cached_states;
      out.cache_bytes += t->memory_bytes();
    }
  }
  return out;
}

}  // namespace actorllm::grammar

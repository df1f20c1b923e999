#include "grammar/compiled_grammar.hpp"

#include <thread>
#include <vector>

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
  // Computed outside any lock: two threads may both compute a state; the first one stored
  // wins and the other copy is dropped.
  auto* computed = new state_tokens(classify_tokens(automaton_, *vocab_, s));
  const state_tokens* expected = nullptr;
  if (cache_[s].compare_exchange_strong(expected, computed, std::memory_order_acq_rel))
    return *computed;
  delete computed;
  return *expected;
}

const context_tokens& compiled_grammar::tokens_in_context(int32_t s, int32_t return_state) const {
  const uint64_t key = (uint64_t(uint32_t(s)) << 32) | uint32_t(return_state);
  {
    std::shared_lock lock(contexts_mutex_);
    if (auto it = contexts_.find(key); it != contexts_.end()) return *it->second;
  }
  const state_tokens& tokens = tokens_at(s);
  auto computed = std::make_unique<const context_tokens>(
      classify_in_context(automaton_, *vocab_, s, return_state, tokens.uncertain));
  std::unique_lock lock(contexts_mutex_);
  auto [it, added] = contexts_.try_emplace(key, std::move(computed));
  return *it->second;
}

void compiled_grammar::precompute(size_t num_threads) const {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t s; (s = next.fetch_add(1)) < automaton_.num_states();)
      if (automaton_.reads_bytes(static_cast<int32_t>(s))) tokens_at(static_cast<int32_t>(s));
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < num_threads; ++i) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
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
  std::shared_lock lock(contexts_mutex_);
  out.cached_contexts = contexts_.size();
  for (const auto& [key, c] : contexts_)
    out.cache_bytes += c->accepted.size() * 4 + c->uncertain.size() * 6;
  return out;
}

}  // namespace actorllm::grammar

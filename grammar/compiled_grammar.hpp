#pragma once
/// A grammar compiled for one vocabulary: the automaton plus, per state, the tokens it
/// allows (token_cache.hpp), computed the first time a matcher stands in that state.
///
/// Immutable apart from that cache, which is thread-safe: one compiled_grammar may serve
/// every sequence of a request (and every request with the same grammar) on any thread.
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "grammar/automaton.hpp"
#include "grammar/token_cache.hpp"
#include "grammar/vocabulary.hpp"

namespace actorllm::grammar {

class compiled_grammar {
 public:
  compiled_grammar(automaton a, std::shared_ptr<const vocabulary> vocab);
  ~compiled_grammar();
  compiled_grammar(const compiled_grammar&) = delete;
  compiled_grammar& operator=(const compiled_grammar&) = delete;

  const automaton& states() const { return automaton_; }
  const vocabulary& vocab() const { return *vocab_; }
  const std::shared_ptr<const vocabulary>& shared_vocab() const { return vocab_; }

  /// The tokens state `s` allows (s must read bytes); computed on first use.
  const state_tokens& tokens_at(int32_t s) const;
  /// The uncertain tokens of state `s` decided for a position whose frame below returns to
  /// `return_state` (-1: the root); computed on first use.
  const context_tokens& tokens_in_context(int32_t s, int32_t return_state) const;
  /// Computes every state's tokens now, on `num_threads` threads (this one included),
  /// instead of on first use.
  void precompute(size_t num_threads = 1) const;

  struct stats {
    size_t num_states = 0;
    size_t num_rules = 0;
    size_t cached_states = 0;
    size_t cached_contexts = 0;
    size_t cache_bytes = 0;
  };
  stats statistics() const;

 private:
  automaton automaton_;
  std::shared_ptr<const vocabulary> vocab_;
  // cache_[s]: null until computed, then set once (compare-and-swap) and never changed.
  std::unique_ptr<std::atomic<const state_tokens*>[]> cache_;
  mutable std::unordered_map<uint64_t, std::unique_ptr<const context_tokens>> contexts_;
  mutable std::shared_mutex contexts_mutex_;
};

}  // namespace actorllm::grammar

#pragma once
/// Compiles a request's structured_output for one model's vocabulary, and remembers the
/// recently compiled grammars: agents send the same schema with every call, and the router
/// (which compiles to refuse a bad request) and the workers in its process share one compiler,
/// so a grammar is built once however many sequences follow it.
///
/// Thread-safe. The vocabulary is built on the first compile (a server that never sees a
/// constrained request never pays for it). A compile runs outside the lock, so a slow one does
/// not hold up lookups of the others; two threads asking for the same new grammar at once may
/// both build it, and the first stored wins.
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/structured_output.hpp"
#include "grammar/compiled_grammar.hpp"
#include "grammar/vocabulary.hpp"

namespace actorllm::grammar {

class grammar_compiler {
 public:
  using vocabulary_source = std::function<std::shared_ptr<const vocabulary>()>;

  /// Compiled grammars are kept while there are at most `capacity` of them and their memory
  /// (automaton and token caches, which grow as requests use a grammar) is at most
  /// `max_bytes`, measured at each new compile; the least recently used go first, the newest
  /// stays. A grammar dropped while a sequence follows it lives on with that sequence.
  explicit grammar_compiler(vocabulary_source make_vocabulary, size_t capacity = 256,
                            size_t max_bytes = size_t{128} << 20);

  /// The grammar of `spec` (which must be active). Throws grammar_error with the parser's
  /// message for a schema, regex or grammar that does not compile.
  std::shared_ptr<const compiled_grammar> compile(const structured_output& spec);

  /// Whether `spec`'s grammar is compiled and kept now (a lookup; no compile, no use counted).
  bool contains(const structured_output& spec) const;

  /// The vocabulary, built now if it was not yet.
  std::shared_ptr<const vocabulary> vocab();

  /// Compiles done (cache misses) and lookups answered from the cache, since construction.
  size_t num_compiled() const;
  size_t num_cache_hits() const;
  /// Grammars kept now, and their memory as of now.
  size_t num_cached() const;
  size_t cached_bytes() const;

 private:
  using lru_list = std::list<std::string>;
  struct entry {
    std::shared_ptr<const compiled_grammar> grammar;
    lru_list::iterator age;
  };

  std::shared_ptr<const compiled_grammar> build(const structured_output& spec);

  vocabulary_source make_vocabulary_;
  std::once_flag vocabulary_once_;
  std::shared_ptr<const vocabulary> vocabulary_;

  /// Drops least recently used grammars (never the newest) until both bounds hold; under
  /// mutex_.
  void evict();

  const size_t capacity_;
  const size_t max_bytes_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, entry> cache_;
  lru_list ages_;  // most recently used first
  size_t num_compiled_ = 0;
  size_t num_hits_ = 0;
};

/// The cache key of a spec: every field that changes the compiled grammar.
std::string grammar_key(const structured_output& spec);

}  // namespace actorllm::grammar

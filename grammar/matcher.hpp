#pragma once
/// One sequence's progress through a compiled grammar: what it has generated so far, which
/// tokens may come next (fill_mask), and whether it may stop.
///
/// Cheap to create (one per sequence) and to copy: a copy is an independent fork (n > 1)
/// sharing the compiled grammar. Const members (fill_mask included) may run on any thread,
/// concurrently with each other; accept_*, rollback and assignment need the matcher alone.
///
///   auto g = compile_json_schema(schema, {}, vocab);      // once per request (grammar.hpp)
///   matcher m(g, request_stop_ids);                       // once per sequence
///   loop: m.fill_mask(bits); sample with bits; m.accept_token(id); stop when
///         m.is_terminated() (EOS accepted) or the engine's own limits end the sequence.
/// After a preemption or restart, replaying the generated ids into a fresh matcher gives the
/// same state.
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/compiled_grammar.hpp"
#include "grammar/stack_walker.hpp"

namespace actorllm::grammar {

class matcher {
 public:
  /// Starts at the beginning of `grammar`. `stop_ids` (e.g. a request's stop_token_ids) end
  /// the sequence as the vocabulary's EOS ids do: allowed only where the grammar may end,
  /// and never as text. Up to `max_rollback` accepted tokens can be undone.
  explicit matcher(std::shared_ptr<const compiled_grammar> grammar,
                   std::vector<int32_t> stop_ids = {}, size_t max_rollback = 16);

  /// Advances by token `id`: its bytes, or for an EOS / stop id the end of the grammar.
  /// Returns false, leaving the matcher unchanged, when the grammar does not allow it here.
  bool accept_token(int32_t id);
  /// Advances by raw bytes (e.g. a forced prefix); false and unchanged when not allowed.
  /// Not counted as a token by rollback.
  bool accept_bytes(std::string_view bytes);

  /// True when the text so far is a whole match (EOS would be allowed now).
  bool can_end() const { return can_end_; }
  /// True once an EOS or stop id was accepted; then only those ids are allowed.
  bool is_terminated() const { return terminated_; }
  /// True when nothing but ending is possible (the grammar is complete and cannot go on).
  bool must_end() const { return can_end_ && positions_.empty(); }

  /// Undoes the last `num_tokens` accepted tokens; false (and nothing undone) when fewer
  /// than that are remembered.
  bool rollback(size_t num_tokens);

  /// Sets `mask` (mask_words() words, bit id % 32 of word id / 32) to the tokens allowed
  /// next: each text token whose whole byte string the grammar accepts from here, EOS and
  /// the stop ids only where the grammar may end, special tokens never.
  void fill_mask(std::span<uint32_t> mask) const;
  size_t mask_words() const { return grammar_->vocab().mask_words(); }

  const compiled_grammar& grammar() const { return *grammar_; }
  /// Positions the matcher tracks (more than one where the grammar is ambiguous so far).
  size_t num_positions() const { return positions_.size(); }

 private:
  struct snapshot {
    std::vector<position> positions;
    bool can_end;
    bool terminated;
  };
  bool is_stop(int32_t id) const;

  std::shared_ptr<const compiled_grammar> grammar_;
  std::vector<int32_t> stop_ids_;  // EOS ids and the caller's, sorted
  size_t max_rollback_;
  frame_arena frames_;
  std::vector<position> positions_;  // sorted by state
  bool can_end_ = false;
  bool terminated_ = false;
  std::deque<snapshot> history_;
};

}  // namespace actorllm::grammar

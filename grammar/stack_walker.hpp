#pragma once
/// Running the pushdown automaton: positions, their stacks, and one byte at a time.
///
/// A position is a state with bytes to read and the stack of return states below it. The
/// matcher keeps the set of all positions the text so far can have reached (the automaton is
/// deterministic within a rule, but a state may both read a byte and call a rule that reads
/// it, so several stacks can be live at once — a GLR-style set, kept small by dedup).
/// Stacks are hash-consed frames (return state, parent), so equal stacks have equal ids and
/// a set of positions dedups exactly.
///
/// Besides the real bottom (`stack_root`), two bottoms serve the per-state token cache,
/// which walks a token from one state without knowing the stack below it:
///   - `stack_unknown`: the real stack, unseen. Ending the rule here is an "exact end" (the
///     token may end at this point whatever the stack, since every stack is alive);
///     afterwards the walk goes on from every place the rule is ever called from, with
///   - `stack_approx`: an over-approximation of the stack. What cannot be read even from
///     there cannot be read from any real stack.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "grammar/automaton.hpp"

namespace actorllm::grammar {

constexpr int32_t stack_root = -1;
constexpr int32_t stack_unknown = -2;
constexpr int32_t stack_approx = -3;

struct position {
  int32_t state;
  int32_t stack;  // a frame id, or one of the bottoms above
  friend bool operator==(const position&, const position&) = default;
  friend auto operator<=>(const position&, const position&) = default;
};

struct frame {
  int32_t return_state;
  int32_t parent;
  bool approximate;  // stack_approx is at the bottom of this stack
};

/// Hash-consed frames. Ids start at `first_id`, so a scratch arena can extend a shared one
/// (see frame_view) without copying it.
class frame_arena {
 public:
  explicit frame_arena(int32_t first_id = 0) : first_id_(first_id) {}
  /// The id of frame (return_state, parent), adding it when new.
  int32_t intern(int32_t return_state, int32_t parent, bool approximate);
  /// The id of that frame, or -1 when this arena does not hold it.
  int32_t find(int32_t return_state, int32_t parent) const;
  const frame& at(int32_t id) const { return frames_[id - first_id_]; }
  int32_t end_id() const { return first_id_ + static_cast<int32_t>(frames_.size()); }
  /// Empties the arena; its ids then start at `first_id`.
  void reset(int32_t first_id) {
    first_id_ = first_id;
    frames_.clear();
    index_.clear();
  }

 private:
  static uint64_t key(int32_t r, int32_t p) { return (uint64_t(uint32_t(r)) << 32) | uint32_t(p); }
  int32_t first_id_;
  std::vector<frame> frames_;
  std::unordered_map<uint64_t, int32_t> index_;
};

/// The frames a walk may read and add: a read-only arena (a matcher's, or none) plus the
/// arena new frames go to, so a mask can be computed without changing the matcher. With no
/// base, new frames go straight into `target` (how a matcher accepts bytes).
class frame_view {
 public:
  /// `target` must start its ids at base->end_id() (or 0 without a base); both must
  /// outlive the view, and the base must not change while the view is used.
  frame_view(const frame_arena* base, frame_arena* target) : base_(base), target_(target) {}
  int32_t push(int32_t return_state, int32_t parent);
  const frame& at(int32_t id) const {
    return base_ && id < base_->end_id() ? base_->at(id) : target_->at(id);
  }
  bool is_approximate(int32_t stack) const {
    return stack == stack_approx || (stack >= 0 && at(stack).approximate);
  }

 private:
  const frame_arena* base_;
  frame_arena* target_;
};

/// Where the rule being walked may end at the point just reached.
struct end_flags {
  bool root = false;         // the real root may end: the text so far is a whole match
  bool exact = false;        // popped past stack_unknown
  bool approximate = false;  // popped past stack_approx
  void merge(const end_flags& o) {
    root |= o.root;
    exact |= o.exact;
    approximate |= o.approximate;
  }
};

/// Closure and byte steps over a set of positions. Keeps scratch buffers between calls;
/// not thread-safe (one per thread).
class stack_walker {
 public:
  explicit stack_walker(const automaton& a) : a_(&a) {}
  /// Walks `a` from now on (reusing the buffers).
  void bind(const automaton& a) { a_ = &a; }

  /// Appends to `out` every position reachable from (state, stack) without reading a byte
  /// (calling rules, returning from finished ones), and sets `ends`. Each position appears
  /// once per call.
  void close(frame_view& frames, position from, std::vector<position>& out, end_flags& ends);

  /// Reads `byte` from each position of `in`, closing the result into `out` (cleared first).
  void step(frame_view& frames, std::span<const position> in, uint8_t byte,
            std::vector<position>& out, end_flags& ends);

 private:
  bool first_visit(position p);
  void explore(frame_view& frames, std::vector<position>& out, end_flags& ends);

  const automaton* a_;
  std::vector<position> work_;
  // Open-addressing set of visited positions, cleared by bumping `generation_`.
  std::vector<uint64_t> visited_keys_;
  std::vector<uint32_t> visited_gen_;
  uint32_t generation_ = 0;
  size_t visited_count_ = 0;
};

}  // namespace actorllm::grammar

#include "grammar/matcher.hpp"

#include <algorithm>

#include "grammar/token_walk.hpp"

namespace actorllm::grammar {
namespace {

// Per-thread buffers, so that masks and steps allocate nothing in the steady state.
struct scratch {
  stack_walker walker{empty_automaton()};
  frame_arena frames;
  std::vector<position> current, next;
  token_list_walker reader;

  static const automaton& empty_automaton() {
    static const automaton a;
    return a;
  }
};

scratch& thread_scratch(const automaton& a) {
  thread_local scratch s;
  s.walker.bind(a);
  return s;
}

void set_bit(std::span<uint32_t> mask, int32_t id) {
  if (id >= 0 && size_t(id >> 5) < mask.size()) mask[id >> 5] |= uint32_t{1} << (id & 31);
}
bool test_bit(std::span<const uint32_t> mask, int32_t id) {
  return (mask[id >> 5] >> (id & 31)) & 1;
}

}  // namespace

matcher::matcher(std::shared_ptr<const compiled_grammar> grammar, std::vector<int32_t> stop_ids,
                 size_t max_rollback)
    : grammar_(std::move(grammar)), stop_ids_(std::move(stop_ids)), max_rollback_(max_rollback) {
  const auto& eos = grammar_->vocab().eos_ids();
  stop_ids_.insert(stop_ids_.end(), eos.begin(), eos.end());
  std::sort(stop_ids_.begin(), stop_ids_.end());
  stop_ids_.erase(std::unique(stop_ids_.begin(), stop_ids_.end()), stop_ids_.end());
  const automaton& a = grammar_->states();
  scratch& s = thread_scratch(a);
  frame_view view(nullptr, &frames_);
  end_flags ends;
  s.walker.close(view, {a.rule_start[automaton::root_rule], stack_root}, positions_, ends);
  std::sort(positions_.begin(), positions_.end());
  can_end_ = ends.root;
}

bool matcher::is_stop(int32_t id) const {
  return std::binary_search(stop_ids_.begin(), stop_ids_.end(), id);
}

bool matcher::accept_token(int32_t id) {
  if (terminated_) return false;
  if (is_stop(id)) {
    if (!can_end_) return false;
    history_.push_back({positions_, can_end_, terminated_});
    terminated_ = true;
  } else {
    std::string_view bytes = grammar_->vocab().bytes(id);
    if (bytes.empty()) return false;
    snapshot before{positions_, can_end_, terminated_};
    if (!accept_bytes(bytes)) return false;
    history_.push_back(std::move(before));
  }
  if (history_.size() > max_rollback_) history_.pop_front();
  return true;
}

bool matcher::accept_bytes(std::string_view bytes) {
  if (terminated_) return false;
  if (bytes.empty()) return true;
  const automaton& a = grammar_->states();
  scratch& s = thread_scratch(a);
  frame_view view(nullptr, &frames_);
  s.current = positions_;
  end_flags ends;
  for (size_t i = 0; i < bytes.size(); ++i) {
    ends = {};
    s.walker.step(view, s.current, static_cast<uint8_t>(bytes[i]), s.next, ends);
    if (s.next.empty() && !(i + 1 == bytes.size() && ends.root)) return false;
    std::swap(s.current, s.next);
  }
  std::sort(s.current.begin(), s.current.end());
  positions_ = s.current;
  can_end_ = ends.root;
  return true;
}

bool matcher::rollback(size_t num_tokens) {
  if (num_tokens > history_.size()) return false;
  if (num_tokens == 0) return true;
  snapshot& target = history_[history_.size() - num_tokens];
  positions_ = std::move(target.positions);
  can_end_ = target.can_end;
  terminated_ = target.terminated;
  history_.resize(history_.size() - num_tokens);
  return true;
}

// The union over positions of: the tokens the state accepts whatever the stack; those its
// frame below accepts (the context cache); and the rest, read with the real stack.
void matcher::fill_mask(std::span<uint32_t> mask) const {
  std::fill(mask.begin(), mask.end(), 0);
  if (!terminated_) {
    for (size_t i = 0; i < positions_.size(); ++i)
      if (i == 0 || positions_[i].state != positions_[i - 1].state)
        grammar_->tokens_at(positions_[i].state).add_accepted(mask);
    const automaton& a = grammar_->states();
    const vocabulary& vocab = grammar_->vocab();
    scratch& s = thread_scratch(a);
    s.frames.reset(frames_.end_id());
    frame_view view(&frames_, &s.frames);
    for (const position& p : positions_) {
      if (grammar_->tokens_at(p.state).uncertain.empty()) continue;
      const int32_t below = p.stack >= 0 ? frames_.at(p.stack).return_state : -1;
      const context_tokens& context = grammar_->tokens_in_context(p.state, below);
      for (int32_t id : context.accepted) set_bit(mask, id);
      if (context.uncertain.empty()) continue;
      const auto& list = context.uncertain;
      s.reader.walk(
          s.walker, view, vocab, std::span(&p, 1), list,
          [&](size_t i) { return test_bit(mask, vocab.sorted_ids()[list.tokens[i]]); },
          [&](size_t i, token_fate fate) {
            if (fate == token_fate::accepted) set_bit(mask, vocab.sorted_ids()[list.tokens[i]]);
          });
    }
  }
  if (can_end_ || terminated_)
    for (int32_t id : stop_ids_) set_bit(mask, id);
}

}  // namespace actorllm::grammar

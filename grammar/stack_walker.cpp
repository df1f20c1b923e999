#include "grammar/stack_walker.hpp"

namespace actorllm::grammar {

int32_t frame_arena::intern(int32_t return_state, int32_t parent, bool approximate) {
  auto [it, added] = index_.try_emplace(key(return_state, parent), end_id());
  if (added) frames_.push_back({return_state, parent, approximate});
  return it->second;
}

int32_t frame_arena::find(int32_t return_state, int32_t parent) const {
  auto it = index_.find(key(return_state, parent));
  return it == index_.end() ? -1 : it->second;
}

int32_t frame_view::push(int32_t return_state, int32_t parent) {
  if (base_) {
    int32_t id = base_->find(return_state, parent);
    if (id >= 0) return id;
  }
  return target_->intern(return_state, parent, is_approximate(parent));
}

bool stack_walker::first_visit(position p) {
  const uint64_t key = (uint64_t(uint32_t(p.state)) << 32) | uint32_t(p.stack);
  if (visited_count_ * 2 >= visited_keys_.size()) {
    // Grow (rarely): rehash this generation's keys.
    std::vector<uint64_t> keys;
    for (size_t i = 0; i < visited_keys_.size(); ++i)
      if (visited_gen_[i] == generation_) keys.push_back(visited_keys_[i]);
    const size_t size = visited_keys_.empty() ? 64 : visited_keys_.size() * 2;
    visited_keys_.assign(size, 0);
    visited_gen_.assign(size, 0);
    generation_ = 1;
    visited_count_ = 0;
    for (uint64_t k : keys) first_visit({int32_t(k >> 32), int32_t(uint32_t(k))});
  }
  const size_t mask = visited_keys_.size() - 1;
  for (size_t i = (key * 0x9E3779B97F4A7C15ull) >> 40 & mask;; i = (i + 1) & mask) {
    if (visited_gen_[i] != generation_) {
      visited_gen_[i] = generation_;
      visited_keys_[i] = key;
      ++visited_count_;
      return true;
    }
    if (visited_keys_[i] == key) return false;
  }
}

void stack_walker::explore(frame_view& frames, std::vector<position>& out, end_flags& ends) {
  while (!work_.empty()) {
    const position p = work_.back();
    work_.pop_back();
    if (!first_visit(p)) continue;
    const automaton::state& st = a_->states[p.state];
    if (st.bytes_begin != st.bytes_end) out.push_back(p);
    for (uint32_t i = st.calls_begin; i < st.calls_end; ++i) {
      const automaton::call_edge& c = a_->call_edges[i];
      const int32_t below = a_->is_pure_end(c.target) ? p.stack : frames.push(c.target, p.stack);
      work_.push_back({a_->rule_start[c.rule], below});
    }
    if (!st.final) continue;
    if (p.stack >= 0) {
      const frame& f = frames.at(p.stack);
      work_.push_back({f.return_state, f.parent});
    } else if (p.stack == stack_root) {
      ends.root = true;
    } else {
      (p.stack == stack_unknown ? ends.exact : ends.approximate) = true;
      for (int32_t r : a_->return_states[st.rule]) work_.push_back({r, stack_approx});
    }
  }
}

void stack_walker::close(frame_view& frames, position from, std::vector<position>& out,
                         end_flags& ends) {
  if (++generation_ == 0) {
    visited_gen_.assign(visited_gen_.size(), 0);
    generation_ = 1;
  }
  visited_count_ = 0;
  work_.push_back(from);
  explore(frames, out, ends);
}

void stack_walker::step(frame_view& frames, std::span<const position> in, uint8_t byte,
                        std::vector<position>& out, end_flags& ends) {
  out.clear();
  if (in.size() == 1) {
    // Fast path: one position whose next state only reads bytes.
    const int32_t t = a_->next(in[0].state, byte);
    if (t < 0) return;
    const automaton::state& st = a_->states[t];
    if (!st.final && st.calls_begin == st.calls_end) {
      out.push_back({t, in[0].stack});
      return;
    }
  }
  if (++generation_ == 0) {
    visited_gen_.assign(visited_gen_.size(), 0);
    generation_ = 1;
  }
  visited_count_ = 0;
  for (const position& p : in) {
    const int32_t t = a_->next(p.state, byte);
    if (t >= 0) work_.push_back({t, p.stack});
  }
  explore(frames, out, ends);
}

}  // namespace actorllm::grammar

// scheduler::check_invariants: the cross-checks the tests run after every step.
#include <algorithm>
#include <unordered_map>

#include "actors/scheduler/scheduler.hpp"

namespace actorllm {

void scheduler::check_invariants() const {
  blocks_.check_invariants();
  auto check_queue = [this](const std::deque<request*>& queue, request_state state) {
    for (size_t i = 0; i < queue.size(); ++i) {
      ACTORLLM_CHECK(queue[i]->state == state);
      if (i > 0) ACTORLLM_CHECK(!policy_->before(*queue[i], *queue[i - 1]));
    }
  };
  check_queue(waiting_, request_state::waiting);
  check_queue(running_, request_state::running);
  check_queue(swapped_, request_state::swapped);
  ACTORLLM_CHECK(waiting_.size() + running_.size() + swapped_.size() == requests_.size());

  int32_t num_running_seqs = 0;
  size_t num_live_seqs = 0;
  std::unordered_map<block_id, const request*> owner;  // device block -> a request holding it
  for (const auto& [id, r] : requests_) {
    ACTORLLM_CHECK(r->request_id == id);
    if (r->state == request_state::running) num_running_seqs += r->num_seqs_when_running();
    ACTORLLM_CHECK(r->sampled || r->seqs.size() == 1);
    for (size_t i = 0; i < r->seqs.size(); ++i) {
      const sequence& s = r->seqs[i];
      if (s.finished()) {
        ACTORLLM_CHECK(!blocks_.has_blocks(s.id) && seqs_.count(s.id) == 0);
        continue;
      }
      ++num_live_seqs;
      auto it = seqs_.find(s.id);
      ACTORLLM_CHECK(it != seqs_.end() && it->second.first == r.get() &&
                     it->second.second == static_cast<int32_t>(i));
      // Planned ahead, a sequence computes the position of the token in flight before it is
      // known: one past its tokens while a second sample is pending.
      // Verifying drafts, it computes their positions too.
      ACTORLLM_CHECK(s.num_computed_tokens <= s.num_tokens() + s.num_drafts_in_flight +
                                                  std::max(0, s.num_pending_samples - 1));
      ACTORLLM_CHECK(s.num_drafts_in_flight == 0 || s.num_pending_samples == 1);
      ACTORLLM_CHECK(s.num_pending_samples <= static_cast<int32_t>(in_flight_.size()) ||
                     (!r->sampled && s.num_pending_samples == r->params.n));
      ACTORLLM_CHECK(s.num_computed_tokens == blocks_.num_slots(s.id));
      switch (r->state) {
        case request_state::waiting:
          ACTORLLM_CHECK(!blocks_.has_blocks(s.id));
          break;
        case request_state::swapped:
          ACTORLLM_CHECK(!blocks_.has_blocks(s.id) || blocks_.is_swapped(s.id));
          break;
        case request_state::running:
          ACTORLLM_CHECK(!blocks_.is_swapped(s.id));
          break;
        case request_state::finished:
          ACTORLLM_CHECK(false);
      }
      if (blocks_.is_swapped(s.id)) continue;
      // A device block may be shared only within a request (fork), or across requests when
      // it is a full block of the prefix cache (read-only).
      for (block_id b : blocks_.block_table(s.id)) {
        if (b == no_block) continue;
        auto [o, is_new] = owner.emplace(b, r.get());
        if (!is_new && o->second != r.get()) {
          ACTORLLM_CHECK(blocks_.device_pool().hash_of(b).has_value());
        }
      }
    }
  }
  ACTORLLM_CHECK(num_running_seqs == num_running_seqs_);
  ACTORLLM_CHECK(num_live_seqs == seqs_.size());
}

}  // namespace actorllm

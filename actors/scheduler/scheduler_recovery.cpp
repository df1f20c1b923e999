// Recovery after the loss of the workers' state (see scheduler::reset_workers).
#include "actors/scheduler/scheduler.hpp"

namespace actorllm {

void scheduler::reset_workers() {
  for (auto* queue : {&running_, &swapped_}) {
    for (request* r : *queue) {
      r->state = request_state::waiting;
      insert_sorted(waiting_, *r);
    }
    queue->clear();
  }
  for (auto& [id, r] : requests_) {
    for (sequence& s : r->seqs) {
      s.num_computed_tokens = 0;
      s.known_to_workers = false;
      s.num_tokens_sent = 0;
      s.num_blocks_sent = 0;
      s.table_replaced = true;
      s.num_pending_samples = 0;
    }
  }
  blocks_ =
      block_manager(block_manager_config{options_.block_size, options_.num_device_blocks,
                                         options_.num_cpu_blocks, options_.enable_prefix_caching});
  num_running_seqs_ = 0;
  finished_since_plan_.clear();  // the fresh workers never knew them
  in_flight_.clear();
  needs_plain_schedule_ = false;
}

}  // namespace actorllm

// Recovery after the loss of the workers' state (see scheduler::reset_workers), and of a whole
// replica (resume_request: its requests go on here).
#include <algorithm>

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
      s.num_drafts_in_flight = 0;
    }
  }
  // The fresh workers' tier stores are empty too: the tier's index starts over with the pools.
  blocks_ = block_manager(block_config_of(options_));
  num_running_seqs_ = 0;
  finished_since_plan_.clear();  // the fresh workers never knew them
  in_flight_.clear();
  needs_plain_schedule_ = false;
}

std::optional<admission_error> scheduler::resume_request(std::string request_id,
                                                         std::vector<int32_t> prompt_token_ids,
                                                         const sampling_params& params,
                                                         std::vector<resumed_choice> choices,
                                                         std::vector<prompt_image> images) {
  if (choices.empty())
    return add_request(std::move(request_id), std::move(prompt_token_ids), params,
                       std::move(images));
  using code = admission_error::code;
  const auto num_prompt = static_cast<int32_t>(prompt_token_ids.size());
  const int32_t room = options_.max_model_len - num_prompt;
  const int32_t max_output = params.max_tokens < 0 ? room : std::min(params.max_tokens, room);
  size_t longest = 0;
  for (const auto& c : choices) {
    if (c.index < 0 || c.index >= params.n ||
        static_cast<int32_t>(c.token_ids.size()) >= max_output)
      return admission_error{code::invalid_params,
                             "choice " + std::to_string(c.index) + " cannot be resumed with " +
                                 std::to_string(c.token_ids.size()) + " tokens"};
    longest = std::max(longest, c.token_ids.size());
  }
  const auto num_tokens = static_cast<int32_t>(num_prompt + longest);
  const int32_t num_blocks = (num_tokens + options_.block_size - 1) / options_.block_size;
  if (num_blocks > options_.num_device_blocks)
    return admission_error{code::exceeds_kv_cache,
                           "the request has " + std::to_string(num_tokens) +
                               " tokens so far and needs " + std::to_string(num_blocks) +
                               " KV cache blocks, but this replica's cache holds only " +
                               std::to_string(options_.num_device_blocks)};
  std::vector<int32_t> prompt = prompt_token_ids;
  if (auto refused =
          add_request(request_id, std::move(prompt_token_ids), params, std::move(images)))
    return refused;
  // As a request whose n sequences forked, then lost their blocks: sampled, one sequence per
  // unfinished choice, each to recompute from its first token.
  request& r = *requests_.at(request_id);
  seqs_.erase(r.seqs[0].id);
  r.seqs.clear();
  r.sampled = true;
  for (auto& c : choices) {
    sequence s;
    s.id = next_seq_id_++;
    s.index = c.index;
    s.token_ids = prompt;
    s.token_ids.insert(s.token_ids.end(), c.token_ids.begin(), c.token_ids.end());
    seqs_[s.id] = {&r, static_cast<int32_t>(r.seqs.size())};
    r.seqs.push_back(std::move(s));
  }
  return std::nullopt;
}

}  // namespace actorllm

#include "actors/scheduler/sequence_mirror.hpp"

#include "common/check.hpp"

namespace actorllm {

std::vector<batch_sequence> sequence_mirror::apply(const step_plan& plan) {
  for (seq_id seq : plan.finished_seq_ids) seqs_.erase(seq);
  for (const new_sequence& n : plan.new_seqs) {
    state& s = seqs_[n.seq];
    s.request_id = n.request_id;
    s.index = n.index;
    s.num_prompt_tokens = n.num_prompt_tokens;
    s.params = n.params;
    s.token_ids.clear();
    s.block_table.clear();
  }
  std::vector<batch_sequence> batch;
  batch.reserve(plan.seqs.size());
  for (const scheduled_sequence& work : plan.seqs) {
    auto it = seqs_.find(work.seq);
    ACTORLLM_CHECK(it != seqs_.end());
    state& s = it->second;
    s.token_ids.insert(s.token_ids.end(), work.new_token_ids.begin(), work.new_token_ids.end());
    if (work.replace_table) s.block_table.clear();
    s.block_table.insert(s.block_table.end(), work.new_block_ids.begin(), work.new_block_ids.end());
    int32_t end = work.num_computed_tokens + work.num_scheduled_tokens;
    ACTORLLM_CHECK(end <= static_cast<int32_t>(s.token_ids.size()));

    batch_sequence b;
    b.seq = work.seq;
    b.request_id = &s.request_id;
    b.index = s.index;
    b.params = &s.params;
    b.num_prompt_tokens = s.num_prompt_tokens;
    b.start_position = work.num_computed_tokens;
    b.token_ids = std::span<const int32_t>(s.token_ids)
                      .subspan(work.num_computed_tokens, work.num_scheduled_tokens);
    b.all_token_ids = s.token_ids;
    b.block_table = s.block_table;
    b.num_samples = work.num_samples;
    batch.push_back(b);
  }
  return batch;
}

void sequence_mirror::append_samples(const step_result& result) {
  for (const sequence_sample& sample : result.seqs) {
    if (sample.token_ids.size() != 1) continue;
    auto it = seqs_.find(sample.seq);
    if (it != seqs_.end()) it->second.token_ids.push_back(sample.token_ids[0]);
  }
}

}  // namespace actorllm

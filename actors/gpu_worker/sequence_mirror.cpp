#include "actors/gpu_worker/sequence_mirror.hpp"

#include <algorithm>

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
    s.images = n.images;
    s.token_ids.clear();
    s.block_table.clear();
  }
  std::vector<batch_sequence> batch;
  batch.reserve(plan.seqs.size());
  for (const scheduled_sequence& work : plan.seqs) {
    auto it = seqs_.find(work.seq);
    ACTORLLM_CHECK(it != seqs_.end());
    state& s = it->second;
    drop_drafts(s);  // a step that never reported (its worker gave up) verified nothing
    const size_t num_known = s.token_ids.size();
    s.token_ids.insert(s.token_ids.end(), work.new_token_ids.begin(), work.new_token_ids.end());
    restore_placeholders(s, num_known);
    const auto num_tokens = static_cast<int32_t>(s.token_ids.size());
    s.token_ids.insert(s.token_ids.end(), work.draft_token_ids.begin(), work.draft_token_ids.end());
    s.num_drafts = static_cast<int32_t>(work.draft_token_ids.size());
    if (work.replace_table) s.block_table.clear();
    s.block_table.insert(s.block_table.end(), work.new_block_ids.begin(), work.new_block_ids.end());
    const int32_t num_computed = work.num_computed_tokens + work.num_scheduled_tokens;
    // Drafts follow the sequence's last token, which this step computes.
    ACTORLLM_CHECK(num_computed <= num_tokens);
    ACTORLLM_CHECK(s.num_drafts == 0 || (num_computed == num_tokens && work.num_samples == 1));

    batch_sequence b;
    b.seq = work.seq;
    b.request_id = &s.request_id;
    b.index = s.index;
    b.params = &s.params;
    b.num_prompt_tokens = s.num_prompt_tokens;
    b.start_position = work.num_computed_tokens;
    b.token_ids = std::span<const int32_t>(s.token_ids)
                      .subspan(work.num_computed_tokens, work.num_scheduled_tokens + s.num_drafts);
    b.all_token_ids = std::span<const int32_t>(s.token_ids).first(num_tokens);
    b.block_table = s.block_table;
    b.num_samples = work.num_samples;
    b.num_drafts = s.num_drafts;
    b.num_lookahead = work.num_lookahead;
    b.images = s.images;
    batch.push_back(b);
  }
  return batch;
}

void sequence_mirror::append_samples(const step_result& result) {
  for (const sequence_sample& sample : result.seqs) {
    auto it = seqs_.find(sample.seq);
    if (it == seqs_.end()) continue;
    state& s = it->second;
    // A fork (n samples, each introduced in full) or an embedding (no token).
    if (s.num_drafts == 0 && sample.token_ids.size() != 1) continue;
    drop_drafts(s);
    s.token_ids.insert(s.token_ids.end(), sample.token_ids.begin(), sample.token_ids.end());
  }
}

std::span<const int32_t> sequence_mirror::tokens(seq_id seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return {};
  return std::span<const int32_t>(it->second.token_ids)
      .first(it->second.token_ids.size() - static_cast<size_t>(it->second.num_drafts));
}

void sequence_mirror::restore_placeholders(state& s, size_t from) {
  for (const prompt_image& image : s.images) {
    const auto first = std::max(from, static_cast<size_t>(image.offset));
    const auto end = std::min(s.token_ids.size(), static_cast<size_t>(image.end()));
    for (size_t p = first; p < end; ++p) s.token_ids[p] = image.token_id;
  }
}

void sequence_mirror::drop_drafts(state& s) {
  s.token_ids.resize(s.token_ids.size() - static_cast<size_t>(s.num_drafts));
  s.num_drafts = 0;
}

}  // namespace actorllm

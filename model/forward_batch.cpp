#include "model/forward_batch.hpp"

#include <algorithm>

namespace actorllm {

void forward_batch::clear() {
  embedding_rows.clear();
  embedding_values.clear();
  visible_spans.clear();
  axis_positions.clear();
  token_ids.clear();
  positions.clear();
  slot_mapping.clear();
  query_start_loc.assign(1, 0);
  seq_lens.clear();
  block_tables.clear();
  max_blocks_per_seq = 0;
  logits_indices.clear();
  hidden_indices.clear();
  adapters.clear();
  token_adapters.clear();
  pending_tables_.clear();
}

void forward_batch::add_sequence(std::span<const int32_t> new_tokens, int32_t start_pos,
                                 std::span<const int32_t> block_table, int32_t block_size,
                                 int32_t num_logits) {
  for (size_t i = 0; i < new_tokens.size(); ++i) {
    const int32_t pos = start_pos + static_cast<int32_t>(i);
    token_ids.push_back(new_tokens[i]);
    positions.push_back(pos);
    slot_mapping.push_back(static_cast<int64_t>(block_table[pos / block_size]) * block_size +
                           pos % block_size);
  }
  query_start_loc.push_back(static_cast<int32_t>(token_ids.size()));
  seq_lens.push_back(start_pos + static_cast<int32_t>(new_tokens.size()));
  const auto end = static_cast<int32_t>(token_ids.size());
  num_logits = std::min(num_logits, static_cast<int32_t>(new_tokens.size()));
  for (int32_t row = end - num_logits; row < end; ++row) logits_indices.push_back(row);
  pending_tables_.emplace_back(block_table.begin(), block_table.end());
}

void forward_batch::use_adapter(const lora_adapter* adapter) {
  if (!adapter || num_seqs() == 0) return;
  auto it = std::find(adapters.begin(), adapters.end(), adapter);
  const auto slot = static_cast<int32_t>(it - adapters.begin());
  if (it == adapters.end()) adapters.push_back(adapter);
  token_adapters.resize(token_ids.size(), -1);
  std::fill(token_adapters.begin() + query_start_loc[query_start_loc.size() - 2],
            token_adapters.end(), slot);
}

void forward_batch::finalize() {
  if (!token_adapters.empty()) token_adapters.resize(token_ids.size(), -1);
  max_blocks_per_seq = 1;
  for (const auto& table : pending_tables_)
    max_blocks_per_seq = std::max<int32_t>(max_blocks_per_seq, static_cast<int32_t>(table.size()));
  block_tables.assign(pending_tables_.size() * max_blocks_per_seq, 0);
  for (size_t s = 0; s < pending_tables_.size(); ++s)
    std::copy(pending_tables_[s].begin(), pending_tables_[s].end(),
              block_tables.begin() + s * max_blocks_per_seq);
  pending_tables_.clear();
}

}  // namespace actorllm

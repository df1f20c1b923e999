#include "kernels/cuda/host_batch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actorllm::cuda {

step_extent check_host_batch(const step_rows& b, int64_t num_blocks, int64_t block_size,
                             int64_t max_position, int64_t vocab, const char* who) {
  const auto require = [who](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(std::string(who) + ": " + what);
  };
  const int64_t n = b.num_tokens, num_seqs = b.num_seqs;
  require(n > 0 && num_seqs > 0, "empty batch");
  require(b.num_logits >= 0 && b.num_logits <= n, "more logits rows than tokens");
  require(b.max_blocks_per_seq > 0, "max_blocks_per_seq must be positive");
  // M-RoPE and image spans are the CPU's until a device run proves them here.
  require(b.axis_positions == nullptr, "M-RoPE positions (a Qwen2-VL decoder) are not supported");
  require(b.query_start_loc[0] == 0 && b.query_start_loc[num_seqs] == n,
          "query_start_loc must run from 0 to num_tokens");
  step_extent extent;
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t q_len = b.query_start_loc[s + 1] - b.query_start_loc[s];
    require(q_len >= 1 && q_len <= b.seq_lens[s],
            "sequence " + std::to_string(s) + ": query length outside 1..seq_len");
    require(b.seq_lens[s] <= b.max_blocks_per_seq * block_size,
            "sequence " + std::to_string(s) + ": context longer than its block table");
    extent.max_query_len = std::max(extent.max_query_len, q_len);
    extent.max_seq_len = std::max<int64_t>(extent.max_seq_len, b.seq_lens[s]);
  }
  for (int64_t i = 0; i < num_seqs * b.max_blocks_per_seq; ++i)
    require(b.block_tables[i] >= 0 && b.block_tables[i] < num_blocks, "block id outside the cache");
  for (int64_t i = 0; i < n; ++i) {
    require(b.token_ids[i] >= 0 && b.token_ids[i] < vocab, "token outside the vocabulary");
    require(b.positions[i] >= 0 && b.positions[i] < max_position,
            "position outside the rotary table");
    require(b.slot_mapping[i] < num_blocks * block_size, "slot outside the cache");
  }
  for (int64_t i = 0; i < b.num_logits; ++i)
    require(b.logits_indices[i] >= 0 && b.logits_indices[i] < n, "logits index outside the batch");
  require(b.num_hidden >= 0 && b.num_hidden <= n, "more hidden rows than tokens");
  for (int64_t i = 0; i < b.num_hidden; ++i)
    require(b.hidden_indices[i] >= 0 && b.hidden_indices[i] < n, "hidden row outside the batch");
  return extent;
}

}  // namespace actorllm::cuda

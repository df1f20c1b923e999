#pragma once
/// One step's batch as the CUDA runner takes it from the host. Plain C++.
#include <cstdint>

namespace actorllm::cuda {

/// One step's batch on the host, laid out as actorllm::forward_batch: the new tokens of every
/// sequence, flattened, and what attention needs to find each context in the cache.
struct llama_host_batch {
  const int32_t* token_ids = nullptr;        ///< (num_tokens)
  const int32_t* positions = nullptr;        ///< (num_tokens)
  const int64_t* slot_mapping = nullptr;     ///< (num_tokens) cache slot of each new token
  const int32_t* query_start_loc = nullptr;  ///< (num_seqs + 1), [0] = 0
  const int32_t* seq_lens = nullptr;         ///< (num_seqs) context length after this step
  const int32_t* block_tables = nullptr;     ///< (num_seqs, max_blocks_per_seq)
  const int32_t* logits_indices = nullptr;   ///< (num_logits) token rows that sample
  int64_t num_tokens = 0;
  int64_t num_seqs = 0;
  int64_t max_blocks_per_seq = 0;
  int64_t num_logits = 0;
};

}  // namespace actorllm::cuda

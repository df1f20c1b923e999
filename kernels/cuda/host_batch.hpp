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

/// The longest query and context of a step, which size the attention launch.
struct step_extent {
  int64_t max_query_len = 0;
  int64_t max_seq_len = 0;
};

/// Checks a step on the host before anything reads it on the device, where a bad index would
/// be an out-of-bounds access: at least one token and one sequence, query_start_loc from 0 to
/// num_tokens, each query within its context and each context within its block table, block
/// ids below num_blocks, slots inside the cache, positions below max_position (the rotary
/// tables' rows), logits rows inside the batch. Throws std::invalid_argument naming the fault,
/// prefixed by `who`.
step_extent check_host_batch(const llama_host_batch& batch, int64_t num_blocks, int64_t block_size,
                             int64_t max_position, const char* who);

}  // namespace actorllm::cuda

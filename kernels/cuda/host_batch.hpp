#pragma once
/// The host's checks of one step before the device reads it. Plain C++.
#include <cstdint>

#include "kernels/forward_ops.hpp"

namespace actorllm::cuda {

/// The longest query and context of a step, which size the attention launch.
struct step_extent {
  int64_t max_query_len = 0;
  int64_t max_seq_len = 0;
};

/// Checks a step on the host before anything reads it on the device, where a bad index would
/// be an out-of-bounds access: at least one token and one sequence, query_start_loc from 0 to
/// num_tokens, each query within its context and each context within its block table, block
/// ids below num_blocks, slots inside the cache, positions below max_position (the rotary
/// tables' rows), tokens below vocab, logits and hidden rows inside the batch. Throws
/// std::invalid_argument naming the fault, prefixed by `who`.
step_extent check_host_batch(const step_rows& batch, int64_t num_blocks, int64_t block_size,
                             int64_t max_position, int64_t vocab, const char* who);

}  // namespace actorllm::cuda

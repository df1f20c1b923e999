#pragma once
/// The integers that name KV-cache blocks and sequences outside the block manager, and the
/// block moves and pool counts that travel in plans and stats. Plain data, no dependencies.
#include <cstdint>

namespace actorllm {

using block_id = int32_t;  ///< index into a device or CPU block pool
/// A table entry whose block was released because every layer's sliding window has moved past
/// it: never read, never copied.
inline constexpr block_id no_block = -1;
using seq_id = int64_t;  ///< one sample of one request, unique within a scheduler

/// Copy block `src` into block `dst` (copy-on-write within the device, or a swap).
struct block_copy {
  block_id src = 0;
  block_id dst = 0;
  friend bool operator==(const block_copy&, const block_copy&) = default;
};

struct pool_stats {
  int32_t num_blocks = 0;
  int32_t num_used = 0;    ///< in some block table
  int32_t num_free = 0;    ///< empty
  int32_t num_cached = 0;  ///< unreferenced but still holding a reusable prefix
  double utilization() const { return num_blocks > 0 ? double(num_used) / num_blocks : 0.0; }
};

}  // namespace actorllm

#pragma once
/// How the request router picks a replica (--routing-policy): plain data for config/ and the
/// router.
#include <cstdint>

namespace actorllm {

enum class routing_policy : uint8_t {
  /// The replica holding the longest cached prefix of the prompt, unless it owes more than
  /// balance_tokens beyond the least-loaded replica (SGLang's balance threshold); then, and
  /// when no replica holds any of it, least_load.
  cache_aware,
  least_load,   ///< the replica owing the fewest tokens (ties: the lowest index)
  round_robin,  ///< the serving replicas in turn
};

struct routing_options {
  routing_policy policy = routing_policy::cache_aware;
  int64_t balance_tokens = 16384;  ///< cache_aware's margin, in tokens owed
  int32_t block_size = 16;         ///< the replicas' KV block size (the hashes' granularity)
};

}  // namespace actorllm

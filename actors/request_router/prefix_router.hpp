#pragma once
/// Cache-aware routing's core: which prefix blocks each replica holds (its schedulers' KV
/// events), and the replica a prompt goes to under a routing_policy. No actors here.
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/request_router/replica_set.hpp"
#include "common/kv_events.hpp"
#include "config/routing_policy.hpp"

namespace actorllm {

/// The prefix-cache hashes of a prompt's full blocks, as a replica's block manager chains
/// them (block_pool.hpp's hash_block from root_block_hash_for(cache_salt)).
std::vector<uint64_t> prompt_block_hashes(std::span<const int32_t> token_ids, int32_t block_size,
                                          uint64_t cache_salt);

class prefix_index {
 public:
  void apply(int32_t replica, const kv_cache_events& events);
  /// A replica that died or left: none of its blocks count any more.
  void forget(int32_t replica);
  /// Blocks at the start of `hashes` that `replica` holds.
  int32_t num_cached_blocks(int32_t replica, std::span<const uint64_t> hashes) const;
  size_t num_blocks(int32_t replica) const;

 private:
  std::vector<std::unordered_set<uint64_t>> held_;  ///< by replica
};

/// Which replica each conversation (generate_request::session) last went to: the most recent
/// `capacity` conversations.
class session_table {
 public:
  explicit session_table(size_t capacity = 65536) : capacity_(capacity) {}
  std::optional<int32_t> find(const std::string& session) const;
  void remember(const std::string& session, int32_t replica);
  /// A replica that died or left: its conversations go where routing sends them next.
  void forget_replica(int32_t replica);
  size_t size() const { return replicas_.size(); }

 private:
  size_t capacity_;
  std::list<std::string> order_;  ///< most recent first
  std::unordered_map<std::string, std::pair<int32_t, std::list<std::string>::iterator>> replicas_;
};

enum class route_reason : uint8_t { cache_hit, least_load, balance, round_robin, session };
const char* to_string(route_reason reason);

struct route_choice {
  int32_t replica = 0;
  route_reason reason = route_reason::least_load;
  int32_t num_cached_blocks = 0;  ///< of the prompt, on that replica (as its events said)
};

/// The replica for a prompt with block `hashes`; none when no replica serves. `turn` counts
/// round_robin's choices.
std::optional<route_choice> choose_replica(const replica_set& replicas, const prefix_index& index,
                                           std::span<const uint64_t> hashes,
                                           const routing_options& options, uint64_t& turn);

}  // namespace actorllm

#include "actors/request_router/prefix_router.hpp"

#include "actors/scheduler/block_pool.hpp"

namespace actorllm {

std::vector<uint64_t> prompt_block_hashes(std::span<const int32_t> token_ids, int32_t block_size,
                                          uint64_t cache_salt) {
  std::vector<uint64_t> hashes;
  if (block_size <= 0) return hashes;
  block_hash parent = root_block_hash_for(cache_salt);
  for (size_t start = 0; start + static_cast<size_t>(block_size) <= token_ids.size();
       start += static_cast<size_t>(block_size)) {
    parent = hash_block(parent, token_ids.subspan(start, static_cast<size_t>(block_size)));
    hashes.push_back(parent);
  }
  return hashes;
}

void prefix_index::apply(int32_t replica, const kv_cache_events& events) {
  if (replica < 0) return;
  if (held_.size() <= static_cast<size_t>(replica)) held_.resize(static_cast<size_t>(replica) + 1);
  auto& held = held_[static_cast<size_t>(replica)];
  for (uint64_t h : events.evicted) held.erase(h);
  for (uint64_t h : events.stored) held.insert(h);
}

void prefix_index::forget(int32_t replica) {
  if (replica >= 0 && static_cast<size_t>(replica) < held_.size())
    held_[static_cast<size_t>(replica)].clear();
}

int32_t prefix_index::num_cached_blocks(int32_t replica, std::span<const uint64_t> hashes) const {
  if (replica < 0 || static_cast<size_t>(replica) >= held_.size()) return 0;
  const auto& held = held_[static_cast<size_t>(replica)];
  int32_t n = 0;
  while (static_cast<size_t>(n) < hashes.size() && held.count(hashes[static_cast<size_t>(n)])) ++n;
  return n;
}

size_t prefix_index::num_blocks(int32_t replica) const {
  if (replica < 0 || static_cast<size_t>(replica) >= held_.size()) return 0;
  return held_[static_cast<size_t>(replica)].size();
}

std::optional<int32_t> session_table::find(const std::string& session) const {
  auto it = replicas_.find(session);
  if (it == replicas_.end()) return std::nullopt;
  return it->second.first;
}

void session_table::remember(const std::string& session, int32_t replica) {
  if (capacity_ == 0) return;
  if (auto it = replicas_.find(session); it != replicas_.end()) {
    order_.erase(it->second.second);
    replicas_.erase(it);
  }
  order_.push_front(session);
  replicas_.emplace(session, std::make_pair(replica, order_.begin()));
  while (replicas_.size() > capacity_) {
    replicas_.erase(order_.back());
    order_.pop_back();
  }
}

void session_table::forget_replica(int32_t replica) {
  for (auto it = replicas_.begin(); it != replicas_.end();) {
    if (it->second.first != replica) {
      ++it;
      continue;
    }
    order_.erase(it->second.second);
    it = replicas_.erase(it);
  }
}

const char* to_string(route_reason reason) {
  switch (reason) {
    case route_reason::cache_hit:
      return "cache_hit";
    case route_reason::least_load:
      return "least_load";
    case route_reason::balance:
      return "balance";
    case route_reason::round_robin:
      return "round_robin";
    case route_reason::session:
      return "session";
  }
  return "";
}

std::optional<route_choice> choose_replica(const replica_set& replicas, const prefix_index& index,
                                           std::span<const uint64_t> hashes,
                                           const routing_options& options, uint64_t& turn) {
  const std::optional<int32_t> least = replicas.pick();
  if (!least) return std::nullopt;
  if (options.policy == routing_policy::round_robin) {
    std::vector<int32_t> serving;
    for (int32_t i = 0; i < replicas.size(); ++i)
      if (replicas.state(i) == replica_state::serving) serving.push_back(i);
    const int32_t replica = serving[turn++ % serving.size()];
    return route_choice{replica, route_reason::round_robin,
                        index.num_cached_blocks(replica, hashes)};
  }
  route_choice by_load{*least, route_reason::least_load, index.num_cached_blocks(*least, hashes)};
  if (options.policy == routing_policy::least_load) return by_load;
  // The longest cached prefix; ties: the one owing less, then the lower index.
  std::optional<route_choice> best;
  for (int32_t i = 0; i < replicas.size(); ++i) {
    if (replicas.state(i) != replica_state::serving) continue;
    const int32_t cached = index.num_cached_blocks(i, hashes);
    if (cached == 0) continue;
    if (!best || cached > best->num_cached_blocks ||
        (cached == best->num_cached_blocks &&
         replicas.outstanding(i) < replicas.outstanding(best->replica)))
      best = route_choice{i, route_reason::cache_hit, cached};
  }
  if (!best || best->num_cached_blocks <= by_load.num_cached_blocks) {
    if (by_load.num_cached_blocks > 0) by_load.reason = route_reason::cache_hit;
    return by_load;
  }
  if (replicas.outstanding(best->replica) - replicas.outstanding(*least) > options.balance_tokens) {
    by_load.reason = route_reason::balance;
    return by_load;
  }
  return best;
}

}  // namespace actorllm

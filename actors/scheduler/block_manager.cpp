#include "actors/scheduler/block_manager.hpp"

#include <algorithm>
#include <utility>

namespace actorllm {

block_manager::block_manager(const block_manager_config& config)
    : block_size_(config.block_size),
      prefix_caching_(config.enable_prefix_caching),
      sliding_window_(config.sliding_window),
      device_(config.num_device_blocks),
      cpu_(config.num_cpu_blocks),
      tier_(config.enable_prefix_caching ? config.num_tier_blocks : 0) {
  ACTORLLM_CHECK(config.block_size > 0);
  if (tier_.enabled()) device_.record_evictions();
}

void block_manager::find_prefix(std::span<const int32_t> token_ids, int32_t max_tokens,
                                block_hash root, std::vector<block_id>& blocks,
                                std::vector<block_hash>& hashes) const {
  if (!prefix_caching_) return;
  int32_t num_full =
      std::min<int32_t>(max_tokens, static_cast<int32_t>(token_ids.size())) / block_size_;
  block_hash parent = root;
  for (int32_t i = 0; i < num_full; ++i) {
    block_hash h = hash_block(parent, token_ids.subspan(size_t(i) * block_size_, block_size_));
    auto hit = device_.find(h);
    if (!hit) break;
    blocks.push_back(*hit);
    hashes.push_back(h);
    parent = h;
  }
}

int32_t block_manager::find_tier_prefix(std::span<const int32_t> token_ids, int32_t max_tokens,
                                        block_hash root, std::vector<block_hash>& hashes) const {
  if (!tier_.enabled()) return 0;
  const int32_t num_full =
      std::min<int32_t>(max_tokens, static_cast<int32_t>(token_ids.size())) / block_size_;
  int32_t num_hits = 0;
  block_hash parent = hashes.empty() ? root : hashes.back();
  for (auto i = static_cast<int32_t>(hashes.size()); i < num_full; ++i) {
    const block_hash h =
        hash_block(parent, token_ids.subspan(size_t(i) * block_size_, block_size_));
    if (!tier_.contains(h)) break;
    hashes.push_back(h);
    parent = h;
    ++num_hits;
  }
  return num_hits;
}

int32_t block_manager::num_cached_tokens(std::span<const int32_t> token_ids,
                                         uint64_t cache_salt) const {
  if (!prefix_caching_ || token_ids.empty()) return 0;
  std::vector<block_id> blocks;
  std::vector<block_hash> hashes;
  const auto max_tokens = static_cast<int32_t>(token_ids.size()) - 1;
  const block_hash root = root_block_hash_for(cache_salt);
  find_prefix(token_ids, max_tokens, root, blocks, hashes);
  const int32_t num_tier = find_tier_prefix(token_ids, max_tokens, root, hashes);
  return (static_cast<int32_t>(blocks.size()) + num_tier) * block_size_;
}

int32_t block_manager::num_new_blocks_to_allocate(std::span<const int32_t> token_ids,
                                                  int32_t num_tokens, block_hash root,
                                                  bool reuse_cached) const {
  std::vector<block_id> hits;
  std::vector<block_hash> hashes;
  if (reuse_cached) find_prefix(token_ids, num_tokens - 1, root, hits, hashes);
  // A hit on an unreferenced cached block takes it out of the available ones, as a fresh
  // block would; a hit on a block in use costs nothing.
  int32_t num_needed = num_blocks_for(num_tokens) - static_cast<int32_t>(hits.size());
  for (block_id b : hits) num_needed += device_.ref_count(b) == 0 ? 1 : 0;
  return num_needed;
}

bool block_manager::can_allocate(std::span<const int32_t> token_ids, int32_t num_tokens,
                                 uint64_t cache_salt) const {
  return num_new_blocks_to_allocate(token_ids, num_tokens, root_block_hash_for(cache_salt), true) <=
         device_.num_available();
}

int32_t block_manager::allocate(seq_id seq, std::span<const int32_t> token_ids, int32_t num_tokens,
                                uint64_t cache_salt, bool reuse_cached) {
  ACTORLLM_CHECK(!has_blocks(seq));
  ACTORLLM_CHECK(num_tokens > 0 && num_tokens <= static_cast<int32_t>(token_ids.size()));
  table t;
  t.root = root_block_hash_for(cache_salt);
  if (reuse_cached) find_prefix(token_ids, num_tokens - 1, t.root, t.blocks, t.hashes);
  // Hits first: a fresh allocation could otherwise evict a block we are about to share.
  for (block_id b : t.blocks) device_.retain(b);
  const auto num_device_hits = static_cast<int32_t>(t.blocks.size());
  // Then the tier's hits after them, pinned before any allocation stores into the tier.
  std::vector<tier_slot> tier_hits;
  if (reuse_cached && tier_.enabled()) {
    std::vector<block_hash> hashes = t.hashes;
    find_tier_prefix(token_ids, num_tokens - 1, t.root, hashes);
    for (size_t i = t.hashes.size(); i < hashes.size(); ++i)
      tier_hits.push_back(*tier_.load(hashes[i]));
  }
  const int32_t num_hit_tokens =
      (num_device_hits + static_cast<int32_t>(tier_hits.size())) * block_size_;
  if (prefix_caching_ && reuse_cached) {
    num_queried_tokens_ += static_cast<int64_t>(token_ids.size());
    num_hit_tokens_ += int64_t{num_device_hits} * block_size_;
    if (tier_.enabled())
      num_tier_queried_tokens_ +=
          static_cast<int64_t>(token_ids.size()) - int64_t{num_device_hits} * block_size_;
    num_tier_hit_tokens_ += static_cast<int64_t>(tier_hits.size()) * block_size_;
  }
  int32_t num_needed = num_blocks_for(num_tokens);
  ACTORLLM_CHECK(num_needed - num_device_hits <= device_.num_available());
  while (static_cast<int32_t>(t.blocks.size()) < num_needed) t.blocks.push_back(device_.allocate());
  // A loaded block is hashed with the rest below: should its contents turn out wrong, the
  // worker recomputes it in this plan's forward, before any sequence reads it.
  for (size_t i = 0; i < tier_hits.size(); ++i)
    tier_moves_.loads.push_back({tier_hits[i], t.blocks[num_device_hits + i]});
  t.num_slots = num_tokens;
  cache_full_blocks(t, token_ids);
  tables_.emplace(seq, std::move(t));
  return num_hit_tokens;
}

bool block_manager::can_append(seq_id seq, int32_t num_tokens) const {
  slot_request request{seq, {}, num_tokens};
  return can_grow({&request, 1});
}

int32_t block_manager::append_slots(seq_id seq, std::span<const int32_t> token_ids,
                                    int32_t num_tokens, std::vector<block_copy>& copies) {
  table& t = table_of(seq);
  ACTORLLM_CHECK(!t.on_cpu);
  if (num_tokens <= t.num_slots) return 0;
  release_out_of_window(t);
  int32_t num_copies = 0;
  // Existing blocks that the new tokens write into: copy them first when shared.
  int32_t first_written = t.num_slots / block_size_;
  int32_t end_written = std::min(num_blocks_for(num_tokens), static_cast<int32_t>(t.blocks.size()));
  for (int32_t i = first_written; i < end_written; ++i) {
    block_id shared = t.blocks[i];
    if (device_.ref_count(shared) == 1) continue;
    ACTORLLM_CHECK(device_.num_available() > 0);
    block_id copy = device_.allocate();
    device_.release(shared);
    copies.push_back({shared, copy});
    t.blocks[i] = copy;
    ++num_copies;
  }
  int32_t num_needed = num_blocks_for(num_tokens);
  ACTORLLM_CHECK(num_needed - static_cast<int32_t>(t.blocks.size()) <= device_.num_available());
  while (static_cast<int32_t>(t.blocks.size()) < num_needed) t.blocks.push_back(device_.allocate());
  t.num_slots = num_tokens;
  cache_full_blocks(t, token_ids);
  return num_copies;
}

int32_t block_manager::trim_slots(seq_id seq, int32_t num_tokens) {
  table& t = table_of(seq);
  ACTORLLM_CHECK(!t.on_cpu && num_tokens >= 0 && num_tokens <= t.num_slots);
  const int32_t num_kept = num_blocks_for(num_tokens);
  ACTORLLM_CHECK(static_cast<int32_t>(t.hashes.size()) <= num_kept);
  int32_t num_released = 0;
  while (static_cast<int32_t>(t.blocks.size()) > num_kept) {
    if (t.blocks.back() != no_block) device_.release(t.blocks.back());
    t.blocks.pop_back();
    ++num_released;
  }
  t.num_slots = num_tokens;
  return num_released;
}

void block_manager::release_out_of_window(table& t) {
  if (sliding_window_ <= 0) return;
  // The next query sits at position num_slots and sees keys from num_slots - window + 1 on;
  // one token more is kept for a step still in flight when this one is planned ahead (its
  // query sits one position earlier).
  const int32_t first_visible = t.num_slots - sliding_window_;
  const int32_t num_invisible = std::max(0, first_visible) / block_size_;
  for (int32_t i = 0; i < num_invisible && i < static_cast<int32_t>(t.blocks.size()); ++i) {
    if (t.blocks[i] == no_block) continue;
    device_.release(t.blocks[i]);
    t.blocks[i] = no_block;
  }
}

void block_manager::cache_full_blocks(table& t, std::span<const int32_t> token_ids) {
  if (!prefix_caching_) return;
  // Only blocks whose tokens are all known: a step planned ahead holds a slot for a token still
  // being sampled, and that block is hashed by a later append, once the token is there.
  const int32_t num_known = std::min(t.num_slots, static_cast<int32_t>(token_ids.size()));
  const int32_t num_full = num_known / block_size_;
  while (static_cast<int32_t>(t.hashes.size()) < num_full) {
    size_t i = t.hashes.size();
    block_hash parent = i == 0 ? t.root : t.hashes[i - 1];
    block_hash h = hash_block(parent, token_ids.subspan(i * block_size_, block_size_));
    t.hashes.push_back(h);
    if (t.blocks[i] != no_block) device_.try_set_hash(t.blocks[i], h);
  }
}

int32_t block_manager::num_blocks_needed(std::span<const slot_request> requests) const {
  int32_t num_needed = 0;
  // Shared blocks written by several of the requests: the last writer keeps the original
  // when no one else holds it, so copies = min(writers, ref_count - 1).
  std::vector<std::pair<block_id, int32_t>> writers;
  for (const slot_request& r : requests) {
    auto it = tables_.find(r.seq);
    if (it == tables_.end()) {
      num_needed += num_new_blocks_to_allocate(r.token_ids, r.num_tokens,
                                               root_block_hash_for(r.cache_salt), r.reuse_cached);
      continue;
    }
    const table& t = it->second;
    ACTORLLM_CHECK(!t.on_cpu);
    if (r.num_tokens <= t.num_slots) continue;
    num_needed += std::max(0, num_blocks_for(r.num_tokens) - static_cast<int32_t>(t.blocks.size()));
    int32_t end_written =
        std::min(num_blocks_for(r.num_tokens), static_cast<int32_t>(t.blocks.size()));
    for (int32_t i = t.num_slots / block_size_; i < end_written; ++i) {
      block_id b = t.blocks[i];
      if (device_.ref_count(b) == 1) continue;
      auto w = std::find_if(writers.begin(), writers.end(),
                            [b](const auto& entry) { return entry.first == b; });
      if (w == writers.end())
        writers.emplace_back(b, 1);
      else
        ++w->second;
    }
  }
  for (const auto& [b, num_writers] : writers) {
    num_needed += std::min(num_writers, device_.ref_count(b) - 1);
  }
  return num_needed;
}

bool block_manager::can_grow(std::span<const slot_request> requests, int32_t num_reserved) const {
  return num_blocks_needed(requests) + num_reserved <= device_.num_available();
}

void block_manager::grow(std::span<const slot_request> requests, std::vector<block_copy>& copies) {
  for (const slot_request& r : requests) {
    if (has_blocks(r.seq)) {
      append_slots(r.seq, r.token_ids, r.num_tokens, copies);
    } else {
      allocate(r.seq, r.token_ids, r.num_tokens, r.cache_salt);
    }
  }
}

void block_manager::fork(seq_id parent, seq_id child) {
  ACTORLLM_CHECK(!has_blocks(child));
  table t = table_of(parent);
  ACTORLLM_CHECK(!t.on_cpu);
  for (block_id b : t.blocks)
    if (b != no_block) device_.retain(b);
  tables_.emplace(child, std::move(t));
}

void block_manager::free(seq_id seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  block_pool& pool = it->second.on_cpu ? cpu_ : device_;
  const std::vector<block_id>& blocks = it->second.blocks;
  for (auto b = blocks.rbegin(); b != blocks.rend(); ++b)
    if (*b != no_block) pool.release(*b);
  tables_.erase(it);
}

std::vector<block_id> block_manager::unique_blocks(std::span<const seq_id> seqs,
                                                   bool on_cpu) const {
  std::vector<block_id> blocks;
  for (seq_id seq : seqs) {
    auto it = tables_.find(seq);
    if (it == tables_.end()) continue;
    ACTORLLM_CHECK(it->second.on_cpu == on_cpu);
    for (block_id b : it->second.blocks)
      if (b != no_block) blocks.push_back(b);
  }
  std::sort(blocks.begin(), blocks.end());
  blocks.erase(std::unique(blocks.begin(), blocks.end()), blocks.end());
  return blocks;
}

bool block_manager::can_swap_out(std::span<const seq_id> seqs) const {
  return static_cast<int32_t>(unique_blocks(seqs, false).size()) <= cpu_.num_available();
}

std::vector<block_copy> block_manager::swap_out(std::span<const seq_id> seqs) {
  ACTORLLM_CHECK(can_swap_out(seqs));
  std::unordered_map<block_id, block_id> moved;  // device -> cpu
  std::vector<block_copy> copies;
  for (seq_id seq : seqs) {
    auto it = tables_.find(seq);
    if (it == tables_.end()) continue;
    table& t = it->second;
    for (block_id& b : t.blocks) {
      if (b == no_block) continue;
      auto [m, is_new] = moved.emplace(b, 0);
      if (is_new) {
        m->second = cpu_.allocate();
        copies.push_back({b, m->second});
      } else {
        cpu_.retain(m->second);
      }
      device_.release(b);
      b = m->second;
    }
    t.on_cpu = true;
  }
  return copies;
}

bool block_manager::can_swap_in(std::span<const seq_id> seqs, int32_t num_reserved) const {
  // Each unique block either hits the device cache or takes one available block: an upper
  // bound that is exact without hits.
  return static_cast<int32_t>(unique_blocks(seqs, true).size()) + num_reserved <=
         device_.num_available();
}

std::vector<block_copy> block_manager::swap_in(std::span<const seq_id> seqs) {
  ACTORLLM_CHECK(can_swap_in(seqs));
  std::unordered_map<block_id, block_id> moved;  // cpu -> device
  std::vector<block_copy> copies;
  for (seq_id seq : seqs) {
    auto it = tables_.find(seq);
    if (it == tables_.end()) continue;
    table& t = it->second;
    for (size_t i = 0; i < t.blocks.size(); ++i) {
      block_id cpu_block = t.blocks[i];
      if (cpu_block == no_block) continue;
      auto [m, is_new] = moved.emplace(cpu_block, 0);
      if (is_new) {
        std::optional<block_id> hit;
        if (i < t.hashes.size()) hit = device_.find(t.hashes[i]);
        if (hit) {
          device_.retain(*hit);
          m->second = *hit;
        } else {
          m->second = device_.allocate();
          copies.push_back({cpu_block, m->second});
          if (i < t.hashes.size()) device_.try_set_hash(m->second, t.hashes[i]);
        }
      } else {
        device_.retain(m->second);
      }
      cpu_.release(cpu_block);
      t.blocks[i] = m->second;
    }
    t.on_cpu = false;
  }
  return copies;
}

bool block_manager::is_swapped(seq_id seq) const {
  auto it = tables_.find(seq);
  return it != tables_.end() && it->second.on_cpu;
}

std::span<const block_id> block_manager::block_table(seq_id seq) const {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return {};
  return it->second.blocks;
}

int32_t block_manager::num_slots(seq_id seq) const {
  auto it = tables_.find(seq);
  return it == tables_.end() ? 0 : it->second.num_slots;
}

const block_manager::table& block_manager::table_of(seq_id seq) const {
  auto it = tables_.find(seq);
  ACTORLLM_CHECK(it != tables_.end());
  return it->second;
}

block_manager::table& block_manager::table_of(seq_id seq) {
  auto it = tables_.find(seq);
  ACTORLLM_CHECK(it != tables_.end());
  return it->second;
}

namespace {

pool_stats stats_of(const block_pool& pool) {
  return {pool.num_blocks(), pool.num_used(), pool.num_free(), pool.num_cached()};
}

}  // namespace

block_manager_stats block_manager::stats() const {
  return {stats_of(device_),        stats_of(cpu_),       num_queried_tokens_, num_hit_tokens_,
          num_tier_queried_tokens_, num_tier_hit_tokens_, tier_.stats()};
}

kv_cache_events block_manager::take_cache_events() {
  kv_cache_events events = device_.take_events();
  if (!tier_.enabled()) return events;
  std::erase_if(events.evicted, [this](uint64_t h) { return tier_.contains(h); });
  for (uint64_t h : tier_.take_dropped())
    if (!device_.find(h) && !tier_.contains(h)) events.evicted.push_back(h);
  std::sort(events.evicted.begin(), events.evicted.end());
  events.evicted.erase(std::unique(events.evicted.begin(), events.evicted.end()),
                       events.evicted.end());
  return events;
}

tier_moves block_manager::take_tier_moves() {
  // Each evicted block goes to the tier now: its content is intact until the plan runs, and
  // the workers store it before the plan writes the block again.
  for (const auto& evicted : device_.take_evictions())
    if (const auto slot = tier_.store(evicted.hash))
      tier_moves_.stores.push_back({evicted.block, *slot});
  tier_.unpin_all();
  return std::exchange(tier_moves_, {});
}

void block_manager::check_invariants() const {
  device_.check_invariants();
  cpu_.check_invariants();
  tier_.check_invariants();
  std::vector<int32_t> device_refs(device_.num_blocks(), 0);
  std::vector<int32_t> cpu_refs(cpu_.num_blocks(), 0);
  for (const auto& [seq, t] : tables_) {
    ACTORLLM_CHECK(static_cast<int32_t>(t.blocks.size()) == num_blocks_for(t.num_slots));
    ACTORLLM_CHECK(static_cast<int32_t>(t.hashes.size()) <= t.num_slots / block_size_);
    std::vector<int32_t>& refs = t.on_cpu ? cpu_refs : device_refs;
    for (block_id b : t.blocks) {
      if (b == no_block) continue;
      ACTORLLM_CHECK(b >= 0 && b < static_cast<int32_t>(refs.size()));
      ++refs[b];
    }
  }
  for (block_id b = 0; b < device_.num_blocks(); ++b) {
    ACTORLLM_CHECK(device_refs[b] == device_.ref_count(b));
  }
  for (block_id b = 0; b < cpu_.num_blocks(); ++b) ACTORLLM_CHECK(cpu_refs[b] == cpu_.ref_count(b));
}

}  // namespace actorllm

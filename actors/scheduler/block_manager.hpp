#pragma once
/// The paged KV cache's bookkeeping (cache_engine's core): a device pool and a CPU swap pool
/// of fixed-size blocks, one block table per sequence, reference counts, copy-on-write after
/// fork, prefix caching, and swap plans. Pure bookkeeping over integer ids: the workers hold
/// the tensors and execute the (src, dst) copies this class returns.
///
/// A sequence's table holds exactly ceil(num_slots / block_size) blocks, where num_slots is
/// the number of tokens whose KV the sequence may write (computed or scheduled this step).
/// A full block enters the prefix cache as soon as its tokens are scheduled: the worker writes
/// a step's KV before it reads it (a batched forward stores each layer's K and V for the whole
/// batch before that layer's attention), so a later sequence of the same step may hit it.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "actors/scheduler/block_pool.hpp"
#include "actors/scheduler/kv_tier.hpp"
#include "common/kv_ids.hpp"

namespace actorllm {

struct block_manager_config {
  int32_t block_size = 16;  ///< tokens per block
  int32_t num_device_blocks = 0;
  int32_t num_cpu_blocks = 0;  ///< swap space; 0: swapping is never possible
  bool enable_prefix_caching = true;
  /// The model's attention window in tokens when every layer has one (the widest), else 0.
  /// A sequence's blocks that fall wholly before the window of its next token go back to the
  /// pool (their table entries become no_block), so a long generation holds about
  /// window / block_size blocks, not its whole history.
  int32_t sliding_window = 0;
  /// Slots of the second KV tier (KV offload; kv_tier); 0: none. Needs prefix caching.
  int32_t num_tier_blocks = 0;
};

/// A plan's moves between the device pool and the second KV tier, run by the workers before
/// anything else of the plan writes a device block: the stores first, then the loads.
struct tier_moves {
  std::vector<block_copy> stores;  ///< (device src, tier slot dst): evicted prefix blocks
  std::vector<block_copy> loads;   ///< (tier slot src, device dst): prefix hits in the tier
};

struct block_manager_stats {
  pool_stats device;
  pool_stats cpu;
  int64_t prefix_cache_queries = 0;  ///< tokens of sequences looked up at allocation
  int64_t prefix_cache_hits = 0;     ///< of those, tokens found in the cache
  /// Of the tokens queried, those the device pool missed (looked up in the second tier, when
  /// there is one), and of those the ones the tier held.
  int64_t tier_cache_queries = 0;
  int64_t tier_cache_hits = 0;
  kv_tier_stats tier;
};

/// One sequence to grow to `num_tokens` slots; `token_ids` covers at least those tokens.
/// `cache_salt` (root_block_hash_for) keys its prefix-cache entries where it has no blocks yet.
struct slot_request {
  seq_id seq = 0;
  std::span<const int32_t> token_ids;
  int32_t num_tokens = 0;
  uint64_t cache_salt = 0;
  bool reuse_cached = true;  ///< false: a sequence without blocks takes no cached block
};

class block_manager {
 public:
  explicit block_manager(const block_manager_config& config);

  int32_t block_size() const { return block_size_; }
  bool prefix_caching() const { return prefix_caching_; }

  /// Tokens at the start of `token_ids` whose KV sits in the prefix cache, in device blocks or
  /// after them in the second tier: whole blocks only, and fewer than token_ids.size() so that
  /// the last token is always computed (its logits are sampled). 0 when prefix caching is off.
  /// `cache_salt` keys the cache apart for KV that depends on more than the tokens (a LoRA
  /// adapter; root_block_hash_for), here and in can_allocate and allocate.
  int32_t num_cached_tokens(std::span<const int32_t> token_ids, uint64_t cache_salt = 0) const;

  /// Whether a sequence without blocks can get slots for its first `num_tokens` tokens.
  bool can_allocate(std::span<const int32_t> token_ids, int32_t num_tokens,
                    uint64_t cache_salt = 0) const;
  /// Gives `seq` (no blocks yet) slots for its first `num_tokens` tokens: blocks of its cached
  /// prefix are shared (at most num_tokens - 1 tokens), the rest are fresh; the fresh blocks of
  /// the prefix's tier hits are loaded (take_tier_moves). Returns the number of tokens whose
  /// KV is present once the plan's loads are done (the sequence's num_computed_tokens). Counts one
  /// prefix-cache query of token_ids.size() tokens. `reuse_cached` false: every block fresh,
  /// no query counted (its full blocks still enter the cache for others).
  int32_t allocate(seq_id seq, std::span<const int32_t> token_ids, int32_t num_tokens,
                   uint64_t cache_salt = 0, bool reuse_cached = true);

  /// Whether `seq` (holding blocks) can grow to `num_tokens` slots.
  bool can_append(seq_id seq, int32_t num_tokens) const;
  /// Grows `seq` to `num_tokens` slots (no-op when it has as many). A shared block about to be
  /// written is first copied (copy-on-write): the pair is appended to `copies` and the table
  /// entry replaced. Returns the number of copies made. `num_tokens` may pass
  /// token_ids.size() (a slot for a token still being sampled); the prefix cache hashes only
  /// blocks whose tokens are all in token_ids.
  int32_t append_slots(seq_id seq, std::span<const int32_t> token_ids, int32_t num_tokens,
                       std::vector<block_copy>& copies);

  /// Shrinks `seq` to `num_tokens` slots: the blocks past them go back to the pool (the slots
  /// of a step's rejected speculative drafts). Blocks in the prefix cache are never among
  /// them: a block is hashed only once all its tokens are known. Returns the blocks released.
  int32_t trim_slots(seq_id seq, int32_t num_tokens);

  /// Device blocks that growing every request, in order, may take (exact for sequences with
  /// blocks, an upper bound for new ones). A request for a sequence without blocks allocates.
  int32_t num_blocks_needed(std::span<const slot_request> requests) const;
  /// Whether num_blocks_needed(requests) + num_reserved blocks are available.
  bool can_grow(std::span<const slot_request> requests, int32_t num_reserved = 0) const;
  /// Applies the requests in order (allocate or append_slots each); copy-on-write pairs are
  /// appended to `copies`.
  void grow(std::span<const slot_request> requests, std::vector<block_copy>& copies);

  /// `child` shares every block of `parent` (which must hold device blocks).
  void fork(seq_id parent, seq_id child);
  /// Releases every block of `seq`, last block first (so the tail of a cached sequence is
  /// evicted before its head). No-op for a sequence without blocks.
  void free(seq_id seq);

  /// Whether the CPU pool can hold every block of these device sequences.
  bool can_swap_out(std::span<const seq_id> seqs) const;
  /// Moves the sequences to the CPU pool; returns (device src, cpu dst) pairs. Shared blocks
  /// are moved once. The device blocks are released (cached ones stay hit-able: their
  /// content is intact until reused).
  std::vector<block_copy> swap_out(std::span<const seq_id> seqs);
  /// Whether the device pool can take back these swapped sequences, keeping num_reserved.
  bool can_swap_in(std::span<const seq_id> seqs, int32_t num_reserved = 0) const;
  /// Moves the sequences back; returns (cpu src, device dst) pairs. A block whose prefix is
  /// still cached on the device is reused instead of copied.
  std::vector<block_copy> swap_in(std::span<const seq_id> seqs);

  bool has_blocks(seq_id seq) const { return tables_.count(seq) != 0; }
  bool is_swapped(seq_id seq) const;
  /// Block ids of `seq` in token order (device ids, or CPU ids while swapped); empty if none.
  std::span<const block_id> block_table(seq_id seq) const;
  /// Slots (tokens) `seq` holds.
  int32_t num_slots(seq_id seq) const;
  int32_t num_free_device_blocks() const { return device_.num_available(); }

  block_manager_stats stats() const;
  /// The second tier's stores and loads of the plan being made, and ends it (its tier slots
  /// may be reused from the next plan on).
  tier_moves take_tier_moves();
  /// A worker found the contents of a tier slot changed when it loaded it (and recomputed the
  /// block): the slot is dropped.
  void tier_load_failed(tier_slot slot) { tier_.load_failed(slot); }
  const kv_tier& tier() const { return tier_; }

  /// KV events of the device pool (block_pool::record_events), off until asked for. A prefix
  /// block the second tier holds is still this replica's to hit (a load, not a prefill): it
  /// is evicted only once it leaves both.
  void record_cache_events() {
    device_.record_events();
    tier_.record_drops();
  }
  kv_cache_events take_cache_events();
  const block_pool& device_pool() const { return device_; }
  const block_pool& cpu_pool() const { return cpu_; }
  /// Aborts unless every reference count equals the number of tables naming the block and
  /// every table has the length its slots need.
  void check_invariants() const;

 private:
  struct table {
    std::vector<block_id> blocks;
    std::vector<block_hash> hashes;     // of the first hashes.size() (full) blocks
    block_hash root = root_block_hash;  // the first block's parent (its cache salt)
    int32_t num_slots = 0;
    bool on_cpu = false;
  };

  int32_t num_blocks_for(int32_t num_tokens) const {
    return (num_tokens + block_size_ - 1) / block_size_;
  }
  // The tier hits that follow a device prefix of `hashes.size()` blocks, within max_tokens:
  // their hashes are appended. Pins nothing.
  int32_t find_tier_prefix(std::span<const int32_t> token_ids, int32_t max_tokens, block_hash root,
                           std::vector<block_hash>& hashes) const;
  // Walks the prefix cache over the first max_tokens tokens; appends hit blocks and hashes.
  void find_prefix(std::span<const int32_t> token_ids, int32_t max_tokens, block_hash root,
                   std::vector<block_id>& blocks, std::vector<block_hash>& hashes) const;
  void cache_full_blocks(table& t, std::span<const int32_t> token_ids);
  int32_t num_new_blocks_to_allocate(std::span<const int32_t> token_ids, int32_t num_tokens,
                                     block_hash root, bool reuse_cached) const;
  std::vector<block_id> unique_blocks(std::span<const seq_id> seqs, bool on_cpu) const;
  const table& table_of(seq_id seq) const;
  table& table_of(seq_id seq);

  /// Releases the blocks of `t` that no query from position t.num_slots on can see.
  void release_out_of_window(table& t);

  int32_t block_size_;
  bool prefix_caching_;
  int32_t sliding_window_;
  block_pool device_;
  block_pool cpu_;
  kv_tier tier_;
  tier_moves tier_moves_;  // of the plan being made
  std::unordered_map<seq_id, table> tables_;
  int64_t num_queried_tokens_ = 0;
  int64_t num_hit_tokens_ = 0;
  int64_t num_tier_queried_tokens_ = 0;
  int64_t num_tier_hit_tokens_ = 0;
};

}  // namespace actorllm

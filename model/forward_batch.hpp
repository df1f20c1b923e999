#pragma once
/// One step's input to the model: the new tokens of every scheduled sequence, flattened,
/// with what attention needs to find each sequence's context in the paged KV cache.
#include <cstdint>
#include <span>
#include <vector>

namespace actorllm {

struct lora_adapter;

struct forward_batch {
  std::vector<int32_t> token_ids;           ///< (num_tokens) new tokens, sequence after sequence
  std::vector<int32_t> positions;           ///< (num_tokens)
  std::vector<int64_t> slot_mapping;        ///< (num_tokens) cache slot of each new token
  std::vector<int32_t> query_start_loc{0};  ///< (num_seqs + 1)
  std::vector<int32_t> seq_lens;            ///< (num_seqs) context length after this step
  std::vector<int32_t> block_tables;        ///< (num_seqs, max_blocks_per_seq), padded with 0
  int32_t max_blocks_per_seq = 0;
  std::vector<int32_t> logits_indices;  ///< token rows whose logits are wanted
  std::vector<int32_t> hidden_indices;  ///< token rows whose final hidden states are wanted
  /// Multi-LoRA: the adapters this batch uses, and each token row's (an index into them, or -1
  /// for the base model). Both empty where every row is the base model's. The adapters are
  /// owned by the caller and live through the forward.
  std::vector<const lora_adapter*> adapters;
  std::vector<int32_t> token_adapters;
  /// Rows whose input is the embedding given here instead of their token's (an image's
  /// features, in a vision-language model): their indices among the batch's token rows, and
  /// (rows, hidden) values in the same order. Both empty for text alone.
  std::vector<int32_t> embedding_rows;
  std::vector<float> embedding_values;
  /// Rows that attend both ways within a span (Gemma 3's images): each token row's span
  /// [first, end) of positions it sees besides its causal (and windowed) keys, (0, 0) for
  /// none; (num_tokens, 2), or empty: every row causal.
  std::vector<int32_t> visible_spans;
  /// M-RoPE (Qwen2-VL's decoder): each token row's temporal, height and width rotary
  /// positions, (num_tokens, 3); empty: `positions` on every axis.
  std::vector<int32_t> axis_positions;

  int64_t num_tokens() const { return static_cast<int64_t>(token_ids.size()); }
  int64_t num_seqs() const { return static_cast<int64_t>(seq_lens.size()); }

  void clear();
  /// Appends a sequence whose `new_tokens` sit at positions start_pos.. in the context.
  /// block_table must cover start_pos + new_tokens.size() tokens. With `sample`, the last
  /// new token's logits are computed.
  void add_sequence(std::span<const int32_t> new_tokens, int32_t start_pos,
                    std::span<const int32_t> block_table, int32_t block_size, bool sample) {
    add_sequence(new_tokens, start_pos, block_table, block_size, sample ? 1 : 0);
  }
  /// As above, with the logits of the last `num_logits` new tokens computed, in order (a
  /// sequence verifying speculative drafts wants one row per draft and one after them).
  void add_sequence(std::span<const int32_t> new_tokens, int32_t start_pos,
                    std::span<const int32_t> block_table, int32_t block_size, int32_t num_logits);
  /// The sequence added last runs with `adapter` (null: the base model).
  void use_adapter(const lora_adapter* adapter);
  /// Lays out block tables as a dense matrix; call after the last add_sequence.
  void finalize();

 private:
  std::vector<std::vector<int32_t>> pending_tables_;
};

}  // namespace actorllm

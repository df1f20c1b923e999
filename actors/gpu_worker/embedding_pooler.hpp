#pragma once
/// Embeddings' pooling (vLLM's pooler for decoder models): a sequence's final hidden states,
/// given chunk by chunk as its prompt is computed, become one vector: the last token's, or the
/// mean over every prompt token; L2-normalised on request. Pure data, no tensors.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/kv_ids.hpp"
#include "common/sampling_params.hpp"

namespace actorllm {

class embedding_pooler {
 public:
  /// The hidden states (rows of `dim`) of a chunk of `seq`'s prompt that starts at
  /// `start_position`: every row of the chunk for mean pooling, the chunk's last row for last
  /// pooling. A chunk at position 0 starts the sequence over (a recomputed prompt).
  void add(seq_id seq, pooling_type type, int32_t start_position, std::span<const float> rows,
           int64_t dim);
  /// The pooled vector once the prompt is computed, and the sequence forgotten.
  std::vector<float> finish(seq_id seq, bool normalize);
  void forget(seq_id seq) { pools_.erase(seq); }
  size_t num_sequences() const { return pools_.size(); }

 private:
  struct pool {
    std::vector<double> sum;  // mean: the rows' sum; last: the last row
    int64_t num_rows = 0;
    pooling_type type = pooling_type::last;
  };
  std::unordered_map<seq_id, pool> pools_;
};

}  // namespace actorllm

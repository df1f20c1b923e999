#pragma once
/// Attention over the paged KV cache. The cache of one layer is k_cache and v_cache, each
/// (num_blocks, num_kv_heads, block_size, head_dim) of the activations' type or of float8
/// (paged_batch::cache); a block holds block_size consecutive tokens of one sequence. The semantics
/// are those of actorllm::cpu::paged_attention.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// A varlen batch: sequence s has query_start_loc[s+1] - query_start_loc[s] new tokens, the
/// last ones of its seq_lens[s] context tokens (all already in the cache). Causal: query token
/// j of s sees keys 0 .. seq_lens[s] - q_len + j. The three tables live on the device; the
/// last three fields are host-side summaries that size the launch.
struct paged_batch {
  const int32_t* query_start_loc =
      nullptr;                        ///< (num_seqs + 1) prefix sums of query lengths, device
  const int32_t* seq_lens = nullptr;  ///< (num_seqs) context length incl. the new tokens, device
  const int32_t* block_tables = nullptr;  ///< (num_seqs, max_blocks_per_seq) block ids, device
  int64_t num_seqs = 0;
  int64_t max_blocks_per_seq = 0;
  int64_t num_tokens = 0;     ///< query_start_loc[num_seqs]
  int64_t max_query_len = 0;  ///< longest query of the batch
  int64_t max_seq_len = 0;    ///< longest context of the batch
  /// > 0: a sliding window, a query at position p sees only keys p - sliding_window + 1 .. p,
  /// and no block wholly before that is read (the scheduler may have freed it); 0: all keys.
  int64_t sliding_window = 0;
  /// > 0: Gemma 2's soft-capping of the scaled scores, softcap * tanh(score / softcap), before
  /// the softmax; 0: off.
  float softcap = 0.0f;
  /// The caches' elements: the activations' type t, or float8 E4M3 bytes (widened on load).
  kv_format cache = kv_format::activations;
};

/// A batch cut where its leading one-token queries (decodes) end: `decode` holds those
/// sequences, `prefill` the rest, each pointing into the whole batch's device tables (the
/// prefill part's query_start_loc keeps the whole batch's token offsets). Either part may be
/// empty (num_seqs 0); nothing is cut where the decode kernels cannot take the head_dim.
struct paged_split {
  paged_batch decode, prefill;
};

/// Cuts `batch` (host_query_start_loc and host_seq_lens: its tables on the host) as
/// paged_split says. Host-side pointer arithmetic only: no device access.
paged_split split_decode_prefix(const paged_batch& batch, const int32_t* host_query_start_loc,
                                const int32_t* host_seq_lens, int64_t head_dim);

/// out(num_tokens, num_heads, head_dim) = softmax(q k^T * scale) v per sequence, grouped-query
/// (num_heads a multiple of num_kv_heads). q, the caches and out are of type t. A batch whose
/// queries are all one token long takes the decode kernels, any other the prefill kernel.
/// `workspace` is as for paged_attention_decode (may be null).
void paged_attention(const void* q, const void* k_cache, const void* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                     cudaStream_t stream, void* workspace = nullptr, size_t workspace_bytes = 0);

/// As paged_attention over a batch cut by split_decode_prefix: where both parts hold
/// sequences, the decode rows run the decode kernels and the rest the prefill kernel (a mixed
/// batch's decodes no longer go through the prefill kernel); else the whole batch as above.
/// `workspace` serves the decode part.
void paged_attention(const void* q, const void* k_cache, const void* v_cache,
                     const paged_batch& batch, const paged_split& split, int64_t num_heads,
                     int64_t num_kv_heads, int64_t head_dim, int64_t block_size, float scale,
                     void* out, dtype t, cudaStream_t stream, void* workspace = nullptr,
                     size_t workspace_bytes = 0);

}  // namespace actorllm::cuda

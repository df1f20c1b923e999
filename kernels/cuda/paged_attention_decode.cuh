#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/paged_attention.cuh"

namespace actorllm::cuda {

/// Which decode kernel runs: v1 reads a whole context per thread block; v2 splits contexts
/// into partitions of decode_partition_size tokens and reduces the partial results after.
enum class decode_path { automatic, v1, v2 };

inline constexpr int64_t decode_partition_size = 512;

/// Device scratch bytes paged_attention_decode's v2 path needs for this batch.
size_t paged_attention_decode_workspace_bytes(int64_t num_seqs, int64_t num_heads, int64_t head_dim,
                                              int64_t max_seq_len);

/// Decode attention: every sequence has exactly one new token, so q and out are (num_seqs,
/// num_heads, head_dim). Each thread block serves all query heads of one kv head (up to 8),
/// so a key is read once per group. Needs head_dim % 8 == 0 and head_dim <= 256.
/// The v2 path uses `workspace` when it holds paged_attention_decode_workspace_bytes, else
/// stream-ordered scratch it allocates and frees itself. batch.max_seq_len must be at least
/// every seq_lens[s]: it sizes the v2 partitions.
void paged_attention_decode(const void* q, const void* k_cache, const void* v_cache,
                            const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                            int64_t head_dim, int64_t block_size, float scale, void* out, dtype t,
                            cudaStream_t stream, decode_path path = decode_path::automatic,
                            void* workspace = nullptr, size_t workspace_bytes = 0);

}  // namespace actorllm::cuda

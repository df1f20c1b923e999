#pragma once
/// Host-side op API of the CPU backend (float32). The CUDA backend in kernels/cuda
/// implements the same ops with the same argument order, plus a stream.
///
/// Shapes are given as (dim0, dim1, ...) in row-major order. The paged KV cache of one
/// layer is two tensors k_cache and v_cache, each (num_blocks, num_kv_heads, block_size,
/// head_dim): a block holds block_size consecutive tokens of one sequence.
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/cpu/float8.hpp"
#include "kernels/cpu/thread_team.hpp"  // set_num_threads: how many threads the ops use

namespace actorllm::cpu {

/// IEEE half precision, the element type of a float16 KV cache (GCC's _Float16; the
/// conversions compile to F16C instructions where the CPU has them). Clang before 15 has no
/// _Float16 on x86 but converts __fp16 the same way (the sanitizer builds use clang 14); both
/// are only converted to and from float here, never computed in.
#if defined(__clang__) && __clang_major__ < 15
using half = __fp16;
#else
using half = _Float16;
#endif

/// out(n, dim) = table[ids[i]] for each of the n ids.  table: (vocab, dim)
void embedding(const float* table, const int32_t* ids, int64_t n, int64_t dim, float* out);

/// out(n, dim) = x / rms(x) * weight, row by row.
void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out);

/// residual(n, dim) += x, then x = rms_norm(residual) * weight (vLLM's fused_add_rms_norm).
void fused_add_rms_norm(float* x, float* residual, const float* weight, int64_t n, int64_t dim,
                        float eps);

/// Rotary position embedding in place on q (n, num_heads, head_dim) and k (n, num_kv_heads,
/// head_dim). cos_sin: (max_position, rot_dim) with rot_dim/2 cosines then rot_dim/2 sines.
/// neox: rotate halves (x[i], x[i + rot_dim/2]); otherwise GPT-J style pairs (x[2i], x[2i+1]).
void rotary_embedding(const int32_t* positions, float* q, float* k, int64_t n, int64_t num_heads,
                      int64_t num_kv_heads, int64_t head_dim, const float* cos_sin, int64_t rot_dim,
                      bool neox);

/// Rotates each of num_vectors vectors of head_dim (side by side from x) in halves (neox,
/// transformers' rotate_half) by cos and sin, head_dim / 2 each.
void rotate_halves(float* x, int64_t num_vectors, int64_t head_dim, const float* cos,
                   const float* sin);

/// M-RoPE (neox halves): row t's pair i takes its cosine and sine from the table row of the
/// axis whose section holds i: axis_positions[3 t + a], a = 0 for i < sections[0], 1 for i <
/// sections[0] + sections[1], else 2. The sections add up to head_dim / 2.
void sectioned_rotary_embedding(const int32_t* axis_positions, const int32_t* sections, float* q,
                                float* k, int64_t n, int64_t num_heads, int64_t num_kv_heads,
                                int64_t head_dim, const float* cos_sin);

/// out(n, hidden) = silu(gate_up[:, :hidden]) * gate_up[:, hidden:].  gate_up: (n, 2 * hidden)
void silu_and_mul(const float* gate_up, int64_t n, int64_t hidden, float* out);
/// The same with GELU's tanh approximation (GeGLU: Gemma's gelu_pytorch_tanh).
void gelu_tanh_and_mul(const float* gate_up, int64_t n, int64_t hidden, float* out);
/// values = cap * tanh(values / cap), in place (Gemma's final logit soft-capping).
void softcap(float* values, int64_t count, float cap);

/// y(n, out_features) = x(n, in_features) @ w^T + bias;  w: (out_features, in_features) as
/// Hugging Face stores it; bias may be null. One weight pass for all n rows (a real GEMM).
void linear(const float* x, const float* w, const float* bias, int64_t n, int64_t in_features,
            int64_t out_features, float* y);

/// Writes each new token's key and value into its slot: slot s is block s / block_size,
/// offset s % block_size. A negative slot is skipped (padding).
/// key, value: (n, num_kv_heads, head_dim)
void reshape_and_cache(const float* key, const float* value, float* k_cache, float* v_cache,
                       const int64_t* slot_mapping, int64_t n, int64_t num_kv_heads,
                       int64_t head_dim, int64_t block_size);
/// The same into a float16 cache (each value rounded to nearest).
void reshape_and_cache(const float* key, const float* value, half* k_cache, half* v_cache,
                       const int64_t* slot_mapping, int64_t n, int64_t num_kv_heads,
                       int64_t head_dim, int64_t block_size);
/// The same into a float8 E4M3 cache (rounded to nearest, saturating at ±448; no scale, as
/// vLLM's uncalibrated fp8 cache).
void reshape_and_cache(const float* key, const float* value, float8_e4m3* k_cache,
                       float8_e4m3* v_cache, const int64_t* slot_mapping, int64_t n,
                       int64_t num_kv_heads, int64_t head_dim, int64_t block_size);

/// Describes a batch of sequences for attention over the paged cache. Sequence s has
/// query_start_loc[s+1] - query_start_loc[s] new tokens, which are the last tokens of its
/// seq_lens[s] context tokens (all already written to the cache). Causal: query token j
/// sees keys 0 .. seq_lens[s] - q_len + j.
struct paged_batch {
  const int32_t* query_start_loc;  ///< (num_seqs + 1) prefix sums of query lengths
  const int32_t* seq_lens;         ///< (num_seqs) context length including the new tokens
  const int32_t* block_tables;     ///< (num_seqs, max_blocks_per_seq) physical block ids
  int64_t num_seqs;
  int64_t max_blocks_per_seq;
  /// (num_tokens, 2) a span [first, end) of positions a query sees besides its causal and
  /// windowed keys (Gemma 3's images, attended both ways), all in the cache by this call;
  /// (0, 0), or a null array: none.
  const int32_t* visible_spans = nullptr;
};

/// How a layer attends: the softmax scale, a sliding window (a query at position p sees the
/// keys at positions p - sliding_window + 1 .. p; 0: all before it), and soft-capping of the
/// scores (softcap * tanh(score / softcap) after scaling; 0: off).
struct attention_options {
  float scale = 1.0f;
  int32_t sliding_window = 0;
  float softcap = 0.0f;
};

/// out(num_tokens, num_heads, head_dim) = softmax(q k^T * scale) v per sequence, with grouped-
/// query attention (num_heads a multiple of num_kv_heads). Prefill, chunked prefill and decode
/// are the same call with different query lengths.
void paged_attention(const float* q, const float* k_cache, const float* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out);
/// The same over a float16 cache (accumulation in float32).
void paged_attention(const float* q, const half* k_cache, const half* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out);
/// The same over a float8 E4M3 cache.
void paged_attention(const float* q, const float8_e4m3* k_cache, const float8_e4m3* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, float scale, float* out);
/// With a window and soft-capping: blocks wholly before a query's window are never read.
void paged_attention(const float* q, const float* k_cache, const float* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, const attention_options& options,
                     float* out);
void paged_attention(const float* q, const half* k_cache, const half* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, const attention_options& options,
                     float* out);
void paged_attention(const float* q, const float8_e4m3* k_cache, const float8_e4m3* v_cache,
                     const paged_batch& batch, int64_t num_heads, int64_t num_kv_heads,
                     int64_t head_dim, int64_t block_size, const attention_options& options,
                     float* out);

/// For every (src, dst) pair, copies block src to block dst in every layer's K and V
/// (copy-on-write). block_bytes: one block of one layer's K (or V) tensor, any element type
/// (num_kv_heads * block_size * head_dim elements).
void copy_blocks(const std::vector<void*>& k_caches, const std::vector<void*>& v_caches,
                 const std::vector<std::pair<int32_t, int32_t>>& pairs, int64_t block_bytes);

/// Copies block src of `from` to block dst of `to` for every pair (swap in or out).
void swap_blocks(const void* from, void* to, const std::vector<std::pair<int32_t, int32_t>>& pairs,
                 int64_t block_bytes);

/// The first index of the largest of x[0, n) (NaN never is; every value NaN, or n = 0: 0).
int64_t argmax(const float* x, int64_t n);

/// out(n, vocab) = log_softmax(logits) row by row.
void log_softmax(const float* logits, int64_t n, int64_t vocab, float* out);

}  // namespace actorllm::cpu

#pragma once
/// The ops a decoder forward is written over, one interface for every backend. The forward of
/// every architecture is written once, in model/decoder_forward.cpp, as a sequence of these
/// calls; a backend (kernels/cpu/cpu_forward_ops.hpp; the CUDA backend's next) implements
/// each op over its own memory, element type, kernels, threads or streams, and knows no
/// architecture: what sets a family apart (which norms exist, windows, soft-capping, GeGLU,
/// experts, the rotary table's rows) reaches the ops as data.
///
/// Activations live in the backend, in buffers named by role and sized for the step by
/// begin_step; the forward never reads them. Weights are handles into the backend's own table
/// (whatever the backend made of the model's tensors: float32 rows, packed panels, device
/// copies); a null handle is an absent tensor (no bias, no q/k norm). C++17.
#include <array>
#include <cstdint>
#include <functional>
#include <stdexcept>

namespace actorllm {

/// The backend's activation buffers. Rows are the step's tokens unless said otherwise.
enum class act_buffer : uint8_t {
  x,          ///< (tokens, hidden) a sublayer's output, or the normalised input of the next
  residual,   ///< (tokens, hidden) the residual stream
  q,          ///< (tokens, q_size) queries, normalised and rotated
  attention,  ///< (tokens, q_size) attention's output
  last,       ///< (logits rows, hidden) the rows that sample, gathered and normalised
  hidden,     ///< (hidden rows, hidden) the rows whose final hidden states are wanted
};

/// A tensor in the backend's weight table; null: absent.
using op_weight = const void*;

/// A projection y = x Wᵀ + bias: the matrix and its bias (null: none).
struct op_linear {
  op_weight matrix = nullptr;
  op_weight bias = nullptr;
};

/// One adapter's LoRA pair for one projection, host float32 rows: A (rank, in), B transposed
/// (rank, out); rank 0: the adapter leaves this projection alone.
struct op_lora_pair {
  const float* a = nullptr;
  const float* b_t = nullptr;
  int64_t rank = 0;
  float scaling = 1.0f;
};

/// The pairs of one projection, one per adapter of the step (begin_step's num_adapters), or
/// null where the step has no adapters.
using op_loras = const op_lora_pair*;

enum class gate_activation : uint8_t { silu, gelu_tanh };

/// The shape every op's buffers follow.
struct forward_dims {
  int64_t hidden = 0;        ///< the residual's width
  int64_t num_heads = 0;     ///< query heads (this rank's)
  int64_t num_kv_heads = 0;  ///< key/value heads (this rank's)
  int64_t head_dim = 0;
  int64_t intermediate = 0;  ///< the dense MLP's width (this rank's)
  int64_t vocab = 0;
  int64_t q_size() const { return num_heads * head_dim; }
  int64_t kv_size() const { return num_kv_heads * head_dim; }
};

/// One step's rows, host arrays valid until the step's last op (the backend copies what it
/// keeps). positions are the rotary table's rows (past LongRoPE's offset where due).
struct step_rows {
  const int32_t* token_ids = nullptr;        ///< (num_tokens)
  const int32_t* positions = nullptr;        ///< (num_tokens) rotary rows
  const int64_t* slot_mapping = nullptr;     ///< (num_tokens) cache slots; < 0: none
  const int32_t* query_start_loc = nullptr;  ///< (num_seqs + 1)
  const int32_t* seq_lens = nullptr;         ///< (num_seqs)
  const int32_t* block_tables = nullptr;     ///< (num_seqs, max_blocks_per_seq)
  int64_t num_tokens = 0;
  int64_t num_seqs = 0;
  int64_t max_blocks_per_seq = 0;
  const int32_t* logits_indices = nullptr;  ///< (num_logits) rows whose logits are wanted
  int64_t num_logits = 0;
  const int32_t* hidden_indices = nullptr;  ///< (num_hidden) rows whose hidden states are wanted
  int64_t num_hidden = 0;
  /// Multi-LoRA: each row's adapter (an index below num_adapters, or -1: the base model);
  /// null where every row is the base model's.
  const int32_t* adapter_of_row = nullptr;
  int64_t num_adapters = 0;
  /// (num_tokens, 2) rows that attend both ways within a span (an image's tokens): the span
  /// [first, end) of positions each row sees besides its causal and windowed keys, written to
  /// the cache in this step at the latest; (0, 0), or a null array: none.
  const int32_t* visible_spans = nullptr;
  /// M-RoPE: (num_tokens, 3) each row's temporal, height and width rotary rows, the rotation's
  /// pairs split between them by qkv_params::rotary_sections; null: `positions` for every pair.
  const int32_t* axis_positions = nullptr;
};

/// How the q/k/v projection's output reaches attention: per-head RMSNorm of q and k (both
/// null: none), rotation by `rotary` ((rows, head_dim) cosines then sines), and k and v
/// written to the layer's cache slots; q goes to act_buffer::q.
struct qkv_params {
  op_weight q_norm = nullptr;
  op_weight k_norm = nullptr;
  op_weight rotary = nullptr;
  /// M-RoPE: rotary pairs [0, s0) take the temporal axis' row, [s0, s0 + s1) the height's,
  /// the rest the width's (step_rows::axis_positions); unused where the step has none.
  std::array<int32_t, 3> rotary_sections{};
  float eps = 1e-5f;
  op_loras q_lora = nullptr, k_lora = nullptr, v_lora = nullptr;
};

/// One layer's attention over the paged cache.
struct attention_params {
  float scale = 0.0f;          ///< the softmax scale
  int32_t sliding_window = 0;  ///< 0: the whole context
  float softcap = 0.0f;        ///< cap * tanh(score / cap); 0: off
};

/// A gated MLP: down(act(gate) * up), gate_up's rows the gate's then the up's.
struct mlp_params {
  op_linear gate_up, down;
  int64_t width = 0;
  gate_activation activation = gate_activation::silu;
  op_loras gate_lora = nullptr, up_lora = nullptr, down_lora = nullptr;
};

/// Routes n tokens from the router's float32 logits (n, num_experts), on the host, into each
/// token's experts (n, top_k) and their weights (n, top_k). The forward's rule; the backend
/// only calls it.
using expert_router =
    std::function<void(const float* logits, int64_t n, int32_t* experts, float* weights)>;

/// A mixture of experts: the router, each expert's MLP, and a shared expert (width 0: none)
/// whose output is scaled by sigmoid(x . shared_gate).
struct experts_params {
  op_weight router = nullptr;  ///< (num_experts, hidden)
  const mlp_params* experts = nullptr;
  int64_t num_experts = 0;
  int64_t top_k = 0;
  mlp_params shared;
  op_weight shared_gate = nullptr;       ///< (hidden)
  const expert_router* route = nullptr;  ///< the forward's, valid through the call
};

class forward_ops {
 public:
  virtual ~forward_ops() = default;

  /// Starts a step: sizes the buffers for its rows and takes what the ops will read of them.
  virtual void begin_step(const step_rows& rows) = 0;
  /// residual = embedding rows of the step's tokens (table (vocab, hidden)) * multiplier;
  /// x = 0.
  virtual void embed(op_weight table, float multiplier) = 0;
  /// residual's rows `rows[i]` = values' row i ((count, hidden) host float32): after embed,
  /// the rows whose input is an embedding rather than a token's (an image's features). A
  /// backend that serves no vision-language model leaves it unimplemented.
  virtual void set_rows(const int32_t* rows, const float* values, int64_t count) {
    (void)rows, (void)values, (void)count;
    throw std::logic_error("this backend takes no embeddings in place of tokens (images)");
  }
  /// residual += x; x = rms_norm(residual) * weight.
  virtual void add_rms_norm(op_weight weight, float eps) = 0;
  /// b = rms_norm(b) * weight, row by row (b of hidden columns).
  virtual void rms_norm(act_buffer b, op_weight weight, float eps) = 0;
  /// q, k and v of layer `layer` from x through `qkv` ((q_size + 2 kv_size) rows), plus each
  /// row's adapters, then as qkv_params says.
  virtual void qkv_to_cache(int64_t layer, const op_linear& qkv, const qkv_params& params) = 0;
  /// attention = layer `layer`'s attention of q over the cache.
  virtual void attention(int64_t layer, const attention_params& params) = 0;
  /// out = in Wᵀ + bias, plus each row's adapter update (in: attention, out: x here).
  virtual void linear(act_buffer in, const op_linear& w, act_buffer out, op_loras lora) = 0;
  /// x = the MLP of x.
  virtual void mlp(const mlp_params& params) = 0;
  /// x = the experts of x.
  virtual void experts(const experts_params& params, gate_activation activation) = 0;
  /// Sums x over the tensor-parallel group (a row-parallel projection's partial output); a
  /// no-op on one rank.
  virtual void all_reduce() = 0;
  /// last = rms_norm(x + residual) * final_norm at the logits rows; then the logits
  /// (num_logits, vocab) = last headᵀ, soft-capped when softcap > 0, kept by the backend.
  virtual void logits(op_weight final_norm, float eps, const op_linear& head, float softcap) = 0;
  /// hidden = rms_norm(x + residual) * final_norm at the hidden rows, kept by the backend.
  virtual void final_hidden(op_weight final_norm, float eps) = 0;
  /// Ends the step: every op of it has been issued. A backend that records the ops instead of
  /// running them one by one (a CUDA graph) runs them here; the logits and hidden rows are
  /// ready to read after it.
  virtual void end_step() = 0;

  /// Tests and diagnostics: `count` rows of b from or to host float32, in the step begun (the
  /// backend converts from and to its element type), and the last logits (num_logits, vocab).
  virtual void write(act_buffer b, const float* rows, int64_t count) = 0;
  virtual void read(act_buffer b, float* rows, int64_t count) = 0;
  virtual void read_logits(float* out) = 0;
};

}  // namespace actorllm

#pragma once
/// A model's weights as one backend's handles (decoder_refs), made once at load. Which tensor
/// plays which part in the forward (the norms each family places, the experts, the tables) is
/// said here, once for every backend; what a handle is (float32 rows and packed panels, a
/// device copy in the activations' type, a quantized matrix) is the backend's
/// weight_handle_maker.
#include <string>
#include <vector>

#include "model/decoder_forward.hpp"
#include "model/llama_weights.hpp"
#include "model/model_config.hpp"
#include "model/packed_weights.hpp"

namespace actorllm {

/// What a backend makes of each tensor. Names ("layers.3.qkv") key a backend's own table and
/// name its errors; no maker is called for an absent (empty) tensor, whose handle is null.
class weight_handle_maker {
 public:
  virtual ~weight_handle_maker() = default;
  /// A vector of float32 values: a norm, a bias, a router, a shared expert's gate.
  virtual op_weight vector(const std::string& name, const std::vector<float>& values) = 0;
  /// A rotary table (rows, head_dim): cosines then sines, float32.
  virtual op_weight rotary(const std::string& name, const std::vector<float>& cos_sin) = 0;
  /// A projection (out, in) from its float32 rows, or from `panels` where the model keeps a
  /// packed copy (null: none; empty rows: the panels are the only copy), plus its bias.
  virtual op_linear linear(const std::string& name, const std::vector<float>& rows,
                           const cpu::packed_matrix* panels, int64_t in, int64_t out,
                           op_weight bias) = 0;
  /// The embedding table (vocab, hidden), rows or panels as for linear.
  virtual op_weight embedding(const std::vector<float>& rows, const cpu::packed_matrix* panels) = 0;
  /// The LM head (out: vocab, in: hidden), rows or panels as for linear; `tied`: these are
  /// the embedding table's, whose handle is `embedding`.
  virtual op_linear head(const std::vector<float>& rows, const cpu::packed_matrix* panels,
                         int64_t in, int64_t out, bool tied, op_weight embedding) = 0;
};

/// The handles of `weights` (and of `packs`, the packed copy, where the backend reads one;
/// null: none) that decoder_forward runs over; `config` is the shard's. Throws
/// std::runtime_error for experts of one layer that differ in width.
decoder_refs decoder_refs_of(const llama_weights& weights, const packed_llama_weights* packs,
                             const model_config_hf& config, weight_handle_maker& make);

}  // namespace actorllm

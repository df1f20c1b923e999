#pragma once
/// The CPU forward ops' handles (kernels/cpu/cpu_forward_ops.hpp) of a model's weights: each
/// projection's float32 rows and packed panels, norms and tables as float32 rows. Points into
/// the weights and panels it was made from, which must outlive it; made once per model.
#include <deque>

#include "kernels/cpu/cpu_forward_ops.hpp"
#include "model/decoder_forward.hpp"
#include "model/llama_weights.hpp"
#include "model/model_config.hpp"
#include "model/packed_weights.hpp"

namespace actorllm {

struct cpu_weight_table {
  decoder_refs refs;
  cpu::embedding_weight embed;
  std::deque<cpu::linear_weight> linears;  ///< what refs' op_linear handles point at
  int64_t embed_width = 0, vocab = 0;      ///< the head's shape
};

/// The table of `weights` and, where packed (null: not), `packs`; `config` is the shard's.
/// Not copyable or movable once made: refs point into it.
std::unique_ptr<const cpu_weight_table> make_cpu_weight_table(const llama_weights& weights,
                                                              const packed_llama_weights* packs,
                                                              const model_config_hf& config);

}  // namespace actorllm

#pragma once
/// The Llama projections packed into the panels of cpu::linear_packed (decode-sized batches).
#include <memory>
#include <vector>

#include "kernels/cpu/packed_linear.hpp"
#include "model/llama_weights.hpp"
#include "model/model_config.hpp"

namespace actorllm {

/// The projection weights again, packed for cpu::linear_packed (decode-sized batches). Made
/// when a CPU engine loads the model (prepare_cpu_weights), or else on the first CPU forward,
/// so a model that only feeds a GPU never pays for them: they double the host memory of the
/// projections.
struct packed_llama_weights {
  struct layer {
    cpu::packed_matrix qkv, o, gate_up, down;
  };
  std::vector<layer> layers;
  cpu::packed_matrix lm_head;  // packed from embed when tied
};

/// Packs every projection of `weights` and the LM head (the embedding table where tied).
/// `config` is the shard's view the weights were cut to. Needs cpu::packed_linear_supported().
std::unique_ptr<packed_llama_weights> pack_llama_weights(const llama_weights& weights,
                                                         const model_config_hf& config);

}  // namespace actorllm

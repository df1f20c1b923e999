#pragma once
/// Tensor parallelism on the host: which slice of a Llama-family model one worker keeps.
#include <cstdint>

#include "model/llama_weights.hpp"
#include "model/model_config.hpp"

namespace actorllm {

/// Which slice of the model a worker holds: rank `rank` of `size` takes every size-th part of
/// the attention heads, KV heads and MLP columns (Megatron-style: column-parallel q/k/v and
/// gate/up, row-parallel o and down, one all-reduce after each).
struct tp_shard {
  int32_t rank = 0;
  int32_t size = 1;
};

/// Keeps rank `shard.rank`'s heads, KV heads and MLP columns of `weights`, and makes `config`
/// the shard's view (num_heads, num_kv_heads and intermediate_size divided by shard.size).
/// Throws std::runtime_error when shard.size does not divide them.
void shard_llama_weights(llama_weights& weights, model_config_hf& config, tp_shard shard);

}  // namespace actorllm

#pragma once
/// Decoder-only transformers (the families of model/architectures.cpp: Llama, Mistral,
/// Qwen2/3, Phi-3, Gemma 2/3 and the mixtures of experts): the loaded model, float32 weights or
/// (dense models) packed 16-bit or int8 matrices as their only copy (weight_options.hpp), and
/// its forward on the CPU: model/decoder_forward.cpp (every family's forward, written once over
/// the forward ops) through the CPU's ops (kernels/cpu/cpu_forward_ops.hpp), one pass over a
/// whole step's batch (prefill chunks and decodes together) against the paged KV cache.
/// Loading is llama_weights.cpp, sharding tensor_parallel.cpp, the rotary table
/// rotary_table.cpp, packing packed_weights.cpp; this file is the model and its forward.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cpu/all_reduce.hpp"
#include "kernels/cpu/cpu_forward_ops.hpp"
#include "model/cpu_weight_table.hpp"
#include "model/decoder_forward.hpp"
#include "model/forward_batch.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_weights.hpp"
#include "model/lora_adapter.hpp"
#include "model/model_config.hpp"
#include "model/moe_layer.hpp"
#include "model/packed_weights.hpp"
#include "model/profiled_ops.hpp"
#include "model/tensor_parallel.hpp"
#include "model/vision_tower.hpp"
#include "model/weight_options.hpp"

namespace actorllm {

/// Scratch of one forward pass on the CPU, grown to the largest batch seen and reused: no
/// allocation once warm. One per caller, so one model can serve several workers at once.
struct forward_workspace {
  cpu::forward_scratch ops;  ///< the CPU ops' buffers
  decoder_scratch forward;   ///< the forward's host-side rows
  /// Tensor parallelism: this worker's rank and its group's all-reduce (null: no parallelism).
  cpu::host_all_reduce* all_reduce = nullptr;
  int32_t tp_rank = 0;
  /// Where each op's time is added (profiled_ops); null: not profiled.
  op_profile* profile = nullptr;
};

class llama_model {
 public:
  /// Loads config.json and the safetensors weights of `model_dir`, stored as `options` and
  /// the checkpoint say (choose_weight_format). Throws std::runtime_error naming a missing
  /// tensor, a wrong shape, an unsupported architecture, dtype or quantization method.
  explicit llama_model(const std::filesystem::path& model_dir, tp_shard shard = {},
                       const weight_options& options = {});

  /// The shard's view: num_heads, num_kv_heads and intermediate_size are this rank's share.
  const model_config_hf& config() const { return config_; }
  tp_shard shard() const { return shard_; }
  /// The float32 weights. Where packed panels are the only copy of the matrices (a 16-bit or
  /// int8 store), the embedding table, projections and LM head here are empty: read them
  /// through cpu_weights() (cpu::unpack_matrix gives them as float32).
  const llama_weights& weights() const { return weights_; }
  /// What the matrices are stored as, and the startup log's line for it.
  const weight_choice& storage() const { return storage_; }
  /// Whether packed panels are the only copy of the matrices (storage() is not float32).
  bool packed_only() const { return storage_.packed_only(); }
  /// The packed weights (made now where they are a copy); null where the CPU lacks AVX2.
  const packed_llama_weights* cpu_weights() const { return packed(); }
  /// Bytes of weights one decoded token reads, in the form they are stored.
  int64_t bytes_read_per_token() const;
  /// Number of weights one decoded token reads (the bytes a device copy of another element
  /// type takes follow from it).
  int64_t num_weights_read_per_token() const;
  /// Computes the batch's new K/V into `cache` and writes logits (logits_indices.size(), vocab)
  /// into `logits`, resized as needed. The model is read-only: concurrent calls are safe with
  /// distinct caches and workspaces.
  /// Rows of batch.token_adapters add their LoRA adapter's update after each projection it
  /// targets (dense models on one shard: throws std::invalid_argument otherwise).
  /// With `hidden`, also the final hidden states (after the model's last norm) of the rows
  /// batch.hidden_indices names: (hidden_indices.size(), hidden_size), for embeddings.
  void forward(const forward_batch& batch, kv_cache& cache, forward_workspace& ws,
               std::vector<float>& logits, std::vector<float>* hidden = nullptr) const;

  /// A vision-language model's tower and projector (config().vision); null for text alone.
  const vision_tower* vision() const { return vision_.get(); }

  kv_cache_shape cache_shape(int64_t num_blocks, int64_t block_size,
                             kv_cache_dtype dtype = kv_cache_dtype::float32) const;

  /// Packs the weights for the CPU forward now rather than in the first forward (about a
  /// second per 100M parameters on this class of machine, which the first request would
  /// wait for). Thread-safe; a no-op once done or where the CPU lacks AVX2/FMA.
  void prepare_cpu_weights() const { packed(); }
  /// Whether the packed weights exist (made by prepare_cpu_weights or a CPU forward); not
  /// to be asked while another thread may be packing them.
  bool has_cpu_weights() const { return packed_->weights != nullptr; }

 private:
  /// The packed weights, made once (thread-safe); null where the CPU lacks AVX2/FMA.
  const packed_llama_weights* packed() const;
  /// The CPU ops' handles of the weights (after packing), made once (thread-safe).
  const cpu_weight_table& cpu_table() const;

  model_config_hf config_;
  tp_shard shard_;
  std::unique_ptr<const vision_tower> vision_;
  weight_choice storage_;
  llama_weights weights_;
  struct lazy_packed {
    std::once_flag once;
    std::unique_ptr<packed_llama_weights> weights;
  };
  std::unique_ptr<lazy_packed> packed_ = std::make_unique<lazy_packed>();
  struct lazy_table {
    std::once_flag once;
    std::unique_ptr<const cpu_weight_table> table;
  };
  std::unique_ptr<lazy_table> table_ = std::make_unique<lazy_table>();
};

}  // namespace actorllm

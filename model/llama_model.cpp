#include "model/llama_model.hpp"

#include <malloc.h>

#include <cmath>

#include "kernels/cpu/ops.hpp"
#include "model/quantized_checkpoint.hpp"
#include "model/rotary_table.hpp"
#include "model/safetensors.hpp"

namespace actorllm {

namespace {

/// Why this model must keep float32 weights; empty when packed panels can be its only copy.
std::string why_float32_only(const model_config_hf& c, tp_shard shard) {
  if (c.moe.num_experts > 0) return "16-bit and int8 weights do not cover experts yet";
  if (shard.size > 1) return "tensor parallelism shards float32 weights only";
  if (!cpu::packed_linear_supported()) return "this CPU lacks AVX2, FMA or F16C";
  return "";
}

/// Refuses a quantization_config that the checkpoint's projections contradict: a method that
/// ships integer codes (GPTQ, AWQ, pack-quantized) or float8 weights where not one projection
/// of the first layer is stored that way would run the floats while saying it serves the
/// method.
void check_quantization_matches(const tensor_store& store, const checkpoint_quantization& q) {
  using method = checkpoint_quantization::method;
  if (q.kind == method::none) return;
  const char* const projections[] = {"self_attn.q_proj", "self_attn.qkv_proj", "self_attn.o_proj",
                                     "mlp.gate_proj",    "mlp.gate_up_proj",   "mlp.down_proj"};
  std::string float_tensor;
  for (const char* projection : projections) {
    const std::string prefix = std::string("model.layers.0.") + projection;
    if (q.kind == method::fp8) {
      if (!store.contains(prefix + ".weight")) continue;
      if (store.get(prefix + ".weight").dtype == tensor_dtype::f8_e4m3) return;
    } else if (has_quantized_projection(store, q, prefix)) {
      return;
    }
    if (float_tensor.empty() && store.contains(prefix + ".weight"))
      float_tensor = prefix + ".weight";
  }
  throw std::runtime_error(
      "config.json: quantization_config names a quantized checkpoint, but no projection of "
      "layer 0 is stored quantized" +
      (float_tensor.empty() ? std::string() : " ('" + float_tensor + "' holds plain weights)"));
}

}  // namespace

llama_model::llama_model(const std::filesystem::path& model_dir, tp_shard shard,
                         const weight_options& options)
    : config_(load_model_config(model_dir)), shard_(shard) {
  const checkpoint_quantization quantized =
      read_checkpoint_quantization(config_.quantization_config);
  const tensor_store store(model_dir);
  check_quantization_matches(store, quantized);
  if (config_.vision) {
    if (shard.size > 1)
      throw std::runtime_error(config_.architecture +
                               ": tensor parallelism over a vision-language model is not "
                               "supported yet (--tensor-parallel-size 1, or several replicas)");
    vision_ = std::make_unique<const vision_tower>(store, *config_.vision);
  }
  if (shard.size > 1 && config_.moe.num_experts > 0)
    throw std::runtime_error(config_.architecture +
                             ": tensor parallelism over experts is not supported yet "
                             "(--tensor-parallel-size 1, or several replicas)");
  storage_ =
      choose_weight_format(options, source_format(store.get("model.embed_tokens.weight").dtype),
                           why_float32_only(config_, shard), quantized);
  // Packed panels as the only copy: made from the mapped file, which is unmapped when the
  // store goes at the end of this constructor.
  weights_ = load_llama_weights(store, config_, /*with_matrices=*/!packed_only());
  if (packed_only()) {
    std::call_once(packed_->once, [&] {
      packed_->weights = load_packed_llama_weights(store, config_, storage_.format, quantized);
    });
    // Decoding and quantizing at load free tens of megabytes of temporaries (a matrix's codes,
    // one byte a weight) that glibc keeps in its heap once its mmap threshold has risen:
    // handed back, so that the resident memory is the panels'.
    malloc_trim(0);
  }
  weights_.rotary = build_rotary_table(config_, config_.max_context());
  weights_.local_rotary = build_local_rotary_table(config_, config_.max_context());
  if (shard.size > 1) shard_llama_weights(weights_, config_, shard);
}

int64_t llama_model::bytes_read_per_token() const {
  int64_t bytes = weights_.bytes_read_per_token(config_);
  if (packed_only()) bytes += packed_->weights->bytes() - packed_->weights->embed.bytes();
  return bytes;
}

int64_t llama_model::num_weights_read_per_token() const {
  int64_t n = weights_.bytes_read_per_token(config_) / 4;
  if (!packed_only()) return n;
  const auto& p = *packed_->weights;
  auto count = [](const cpu::packed_matrix& m) { return m.out_features * m.in_features; };
  for (const auto& l : p.layers) n += count(l.qkv) + count(l.o) + count(l.gate_up) + count(l.down);
  return n + count(p.lm_head);
}

kv_cache_shape llama_model::cache_shape(int64_t num_blocks, int64_t block_size,
                                        kv_cache_dtype dtype) const {
  return {config_.num_layers,   num_blocks,       block_size,
          config_.num_kv_heads, config_.head_dim, dtype};
}

const packed_llama_weights* llama_model::packed() const {
  if (!cpu::packed_linear_supported()) return nullptr;
  std::call_once(packed_->once,
                 [this] { packed_->weights = pack_llama_weights(weights_, config_); });
  return packed_->weights.get();
}

const cpu_weight_table& llama_model::cpu_table() const {
  const packed_llama_weights* packs = packed();
  std::call_once(table_->once,
                 [&] { table_->table = make_cpu_weight_table(weights_, packs, config_); });
  return *table_->table;
}

void llama_model::forward(const forward_batch& batch, kv_cache& cache, forward_workspace& ws,
                          std::vector<float>& logits, std::vector<float>* hidden) const {
  cpu::cpu_forward_ops ops(dims_of(config_), ws.ops, cache.view(), ws.all_reduce, ws.tp_rank,
                           logits, hidden);
  if (ws.profile) {
    profiled_ops timed(ops, *ws.profile);
    return decoder_forward(config_, cpu_table().refs, batch, timed, ws.forward, shard_.size);
  }
  decoder_forward(config_, cpu_table().refs, batch, ops, ws.forward, shard_.size);
}

}  // namespace actorllm

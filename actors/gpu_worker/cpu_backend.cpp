#include "actors/gpu_worker/cpu_backend.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "kernels/cpu/kernel_isa.hpp"
#include "kernels/cpu/ops.hpp"
#include "model/packed_weights.hpp"

namespace actorllm {

namespace {

std::vector<std::pair<int32_t, int32_t>> as_pairs(const std::vector<block_copy>& copies) {
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(copies.size());
  for (const auto& c : copies) pairs.emplace_back(c.src, c.dst);
  return pairs;
}

}  // namespace

cpu_backend::cpu_backend(std::shared_ptr<const llama_model> model,
                         const model_runner_config& config)
    : model_(std::move(model)),
      device_cache_(
          model_->cache_shape(config.num_device_blocks, config.block_size, config.cache_dtype)),
      cpu_cache_(model_->cache_shape(config.num_cpu_blocks, config.block_size, config.cache_dtype)),
      tier_(config.num_tier_blocks > 0
                ? std::make_unique<kv_tier_store>(config.num_tier_blocks,
                                                  device_cache_.shape().bytes_per_block(),
                                                  config.tier_folder)
                : nullptr),
      all_reduce_(config.all_reduce) {
  workspace_.all_reduce = all_reduce_.get();
  workspace_.tp_rank = config.tp_rank;
  workspace_.profile = config.profile.get();
  profile_ = config.profile;
}

std::vector<block_copy> cpu_backend::move_blocks(const step_plan& plan) {
  if (!tier_ && (!plan.blocks_to_store.empty() || !plan.blocks_to_load.empty()))
    throw std::runtime_error("step plan moves blocks of a KV offload tier this worker lacks");
  for (const block_copy& store : plan.blocks_to_store) {
    device_cache_.export_block(store.src, tier_->slot(store.dst));
    tier_->seal(store.dst);
  }
  cpu_cache_.copy_from(device_cache_, as_pairs(plan.blocks_to_swap_out));
  device_cache_.copy_from(cpu_cache_, as_pairs(plan.blocks_to_swap_in));
  std::vector<block_copy> failed;
  for (const block_copy& load : plan.blocks_to_load) {
    if (tier_->intact(load.src))
      device_cache_.import_block(tier_->slot(load.src), load.dst);
    else
      failed.push_back(load);
  }
  device_cache_.copy_blocks(as_pairs(plan.blocks_to_copy));
  return failed;
}

void cpu_backend::encode_images(std::span<const image_pixels> images,
                                std::vector<float>& embeddings) {
  if (!model_->vision()) throw std::runtime_error("this model has no vision tower");
  model_->vision()->encode(images, encoder_scratch_, embeddings);
}

void cpu_backend::forward(const forward_batch& batch, std::vector<float>& logits) {
  model_->forward(batch, device_cache_, workspace_, logits);
}

void cpu_backend::forward_hidden(const forward_batch& batch, std::vector<float>& logits,
                                 std::vector<float>& hidden) {
  model_->forward(batch, device_cache_, workspace_, logits, &hidden);
}

void cpu_backend_provider::prepare(const llama_model& model) const {
  if (const char* isa = std::getenv("ACTORLLM_CPU_ISA"); isa && *isa)
    cpu::set_kernel_isa(cpu::kernel_isa_named(isa));
  model.prepare_cpu_weights();
}

std::string cpu_backend_provider::describe_weights(const llama_model& model) const {
  const cpu::kernel_isa isa = cpu::kernel_isa_in_use();
  std::string line = model.storage().description + "; CPU kernels " + cpu::to_string(isa);
  const auto* packed = model.packed_only() ? model.cpu_weights() : nullptr;
  const bool integer_projections = packed && !packed->layers.empty() &&
                                   (packed->layers.front().qkv.format == cpu::weight_format::q8 ||
                                    packed->layers.front().qkv.format == cpu::weight_format::q4);
  if (cpu::rounds_activations(isa) && integer_projections)
    line += std::string(" (the integer projections meet x rounded to 8 bits") +
            (isa != cpu::kernel_isa::amx ? ""
             : packed->layers.front().qkv.per_channel_int8()
                 ? ", or in batches of 4 rows or more x rounded to bf16 against the codes "
                   "themselves in the AMX tiles"
                 : ", or in batches of 32 rows or more x and the weights rounded to bf16 in the "
                   "AMX tiles") +
            "; ACTORLLM_CPU_ISA=" + (cpu::uses_avx512(isa) ? "avx512" : "avx2") +
            " keeps it float32)";
  const bool bf16_projections = packed && !packed->layers.empty() &&
                                packed->layers.front().qkv.format == cpu::weight_format::bf16;
  if (cpu::rounds_activations_to_bf16(isa) && bf16_projections)
    line +=
        " (batches of more than one row meet the bf16 projections with x rounded to bf16; "
        "ACTORLLM_CPU_ISA=avx512_vnni keeps it float32)";
  return line;
}

kv_budget cpu_backend_provider::plan_kv(const llama_model& model, const engine_config& config,
                                        int32_t max_model_len) const {
  return plan_kv_budget(
      config.cache, model.cache_shape(1, config.cache.block_size, cpu_cache_dtype(config.cache)),
      model.bytes_read_per_token(), max_model_len);
}

std::unique_ptr<forward_backend> cpu_backend_provider::make_backend(
    std::shared_ptr<const llama_model> model, const model_runner_config& config) const {
  return std::make_unique<cpu_backend>(std::move(model), config);
}

}  // namespace actorllm

#pragma once
/// The CPU backend: the KV pool and the swap pool in host memory (float32 or float16), the forward
/// pass through llama_model::forward on the calling thread's team of --cpu-threads math threads.
#include <memory>
#include <string>
#include <vector>

#include "actors/gpu_worker/forward_backend.hpp"
#include "model/kv_cache.hpp"
#include "model/kv_tier_store.hpp"

namespace actorllm {

class cpu_backend : public forward_backend {
 public:
  cpu_backend(std::shared_ptr<const llama_model> model, const model_runner_config& config);

  std::string device() const override { return "cpu"; }
  std::vector<block_copy> move_blocks(const step_plan& plan) override;
  /// The second tier's store (null: none); tests change its bytes to see loads refused.
  kv_tier_store* tier_store() { return tier_.get(); }
  void forward(const forward_batch& batch, std::vector<float>& logits) override;
  void encode_images(std::span<const image_pixels> images, std::vector<float>& embeddings) override;
  void forward_hidden(const forward_batch& batch, std::vector<float>& logits,
                      std::vector<float>& hidden) override;

 private:
  std::shared_ptr<const llama_model> model_;
  kv_cache device_cache_;
  kv_cache cpu_cache_;
  std::unique_ptr<kv_tier_store> tier_;
  forward_workspace workspace_;
  cpu::encoder_scratch encoder_scratch_;
  std::shared_ptr<cpu::host_all_reduce> all_reduce_;  ///< keeps the group alive
  std::shared_ptr<op_profile> profile_;               ///< keeps the profile alive
};

/// Pools sized from host memory (plan_kv_budget); one cpu_backend per worker.
class cpu_backend_provider : public backend_provider {
 public:
  std::string device() const override { return "cpu"; }
  kv_budget plan_kv(const llama_model& model, const engine_config& config,
                    int32_t max_model_len) const override;
  /// Packs the weights (llama_model::prepare_cpu_weights), and uses the CPU kernel set that
  /// ACTORLLM_CPU_ISA names (avx2, avx512, avx512_vnni), if set: std::invalid_argument for a
  /// name it does not know or a set this CPU does not run.
  void prepare(const llama_model& model) const override;
  /// The model's storage and the CPU kernel set in use.
  std::string describe_weights(const llama_model& model) const override;
  std::unique_ptr<forward_backend> make_backend(std::shared_ptr<const llama_model> model,
                                                const model_runner_config& config) const override;
};

}  // namespace actorllm

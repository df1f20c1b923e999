#pragma once
/// The seam between the worker core and the hardware. model_runner owns the protocol (the
/// sequence mirror, batching, sampling on host logits); a forward_backend owns the KV pools
/// and runs the block moves and the forward pass on one device. A backend_provider sizes the
/// pools before any worker exists (the scheduler must know them) and builds each worker's
/// backend, again for a worker that supervision respawns.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "actors/gpu_worker/device_draws.hpp"
#include "actors/gpu_worker/kv_budget.hpp"
#include "common/step_plan.hpp"
#include "config/engine_config.hpp"
#include "kernels/cpu/all_reduce.hpp"
#include "model/forward_batch.hpp"
#include "model/llama_model.hpp"
#include "model/lora_registry.hpp"

namespace actorllm {

namespace grammar {
class grammar_compiler;
}

struct model_runner_config {
  int32_t block_size = 16;
  int32_t num_device_blocks = 0;
  int32_t num_cpu_blocks = 0;
  uint64_t seed = 0;  ///< global seed for requests without their own
  /// The device this worker runs on, of the provider's kind (device_slots places each
  /// replica's workers; 0 on the CPU backend).
  int32_t device_index = 0;
  kv_cache_dtype cache_dtype = kv_cache_dtype::float32;  ///< of the CPU backend's pools
  /// CUDA graphs for decode steps of up to this many sequences (0: eager) and contexts of up
  /// to cuda_graph_max_context tokens (--enforce-eager, --max-seq-len-to-capture).
  int32_t cuda_graph_max_batch = 0;
  int32_t cuda_graph_max_context = 8192;
  /// Tensor parallelism (CPU): this worker's rank and its replica's group (null: none).
  std::shared_ptr<cpu::host_all_reduce> all_reduce;
  int32_t tp_rank = 0;
  /// Structured output: the compiler of requests' constraints (null: a constrained sequence
  /// is a broken plan), and the ids that end a sequence, allowed where its grammar may end.
  std::shared_ptr<grammar::grammar_compiler> grammars;
  std::vector<int32_t> eos_token_ids;
  /// The token that ends reasoning ("</think>"), where a constraint with after_reasoning
  /// starts; -1: the vocabulary has none.
  int32_t reasoning_end_token = -1;
  /// Speculative decoding: how proposals are made (the n-gram lookup's bounds).
  speculative_config speculative;
  /// The draft model of speculative decoding (null: none), whole on every rank, and the
  /// blocks of its own KV pool (attach_draft_model).
  std::shared_ptr<const llama_model> draft_model;
  int32_t num_draft_blocks = 0;
  /// Multi-LoRA: where a sequence's adapter (sampling_params::lora_id) is found (null: LoRA
  /// is off, and a sequence naming an adapter is a broken plan).
  std::shared_ptr<const lora_registry> loras;
  /// The second KV tier (--kv-offload-bytes): its blocks (0: none) and the folder of its file
  /// (--kv-offload-dir; empty: anonymous memory).
  int32_t num_tier_blocks = 0;
  std::string tier_folder;
  /// Where the CPU backend adds each forward op's time (a step profile); null: none.
  std::shared_ptr<op_profile> profile;
};

/// The allowed-token masks of some logits rows of one step (structured output).
struct row_token_masks {
  std::vector<int32_t> rows;    ///< logits rows that are constrained, ascending
  std::vector<uint32_t> words;  ///< (rows.size(), words_per_row): bit id % 32 of word id / 32
  int64_t words_per_row = 0;
};

/// One worker's device: its KV pool, its CPU swap pool and the forward pass over them.
/// Errors throw (std::runtime_error, or cuda::cuda_error on a device); the worker shell turns
/// them into an error reply and exits, and supervision recomputes on a fresh worker.
class forward_backend {
 public:
  virtual ~forward_backend() = default;

  /// "cpu" or "cuda:N", as worker_info reports it.
  virtual std::string device() const = 0;

  /// The plan's block moves, in this order: the second tier's stores and the swap-outs (device
  /// to tier, device to CPU pool) first, since the plan may reuse the device blocks they
  /// release; then swap-in (CPU pool to device); then the tier's loads; then the copy-on-write
  /// copies within the device pool. Each move is a (src, dst) block pair. Returns the loads
  /// whose contents did not match what was stored (their device blocks left as they were).
  virtual std::vector<block_copy> move_blocks(const step_plan& plan) = 0;

  /// Writes the batch's new K/V into the device pool and the float32 logits
  /// (batch.logits_indices.size(), vocab), row-major on the host, into `logits` (resized).
  virtual void forward(const forward_batch& batch, std::vector<float>& logits) = 0;

  /// As forward, and the final hidden states of batch.hidden_indices into `hidden`
  /// (hidden_indices.size(), hidden_size) for embeddings. Throws where the backend cannot
  /// (engine_setup refuses --task embed on such a device first).
  virtual void forward_hidden(const forward_batch& /*batch*/, std::vector<float>& /*logits*/,
                              std::vector<float>& /*hidden*/) {
    throw std::runtime_error("this device does not compute embeddings");
  }

  /// Each image's embeddings through the model's vision tower and projector
  /// (llama_model::vision()): (its rows, hidden) per image, end to end, into `embeddings`.
  /// Throws where the backend runs no tower (engine_setup refuses such a model there first).
  virtual void encode_images(std::span<const image_pixels> /*images*/,
                             std::vector<float>& /*embeddings*/) {
    throw std::runtime_error("this device runs no vision tower");
  }

  /// As forward, but each logits row's argmax (the lowest index among equal maxima) is taken
  /// where the logits are, into `tokens` (batch.logits_indices.size()). `masks`, when given,
  /// is called once, after the forward has started and before the argmax (so the caller
  /// computes masks while the device works); the rows it names are masked first, each id
  /// whose bit is clear set to -infinity. False, with nothing done and `masks` not called,
  /// when the backend has no such shortcut; the caller then calls forward.
  virtual bool try_forward_greedy(const forward_batch& /*batch*/, std::vector<int32_t>& /*tokens*/,
                                  const std::function<const row_token_masks&()>& /*masks*/ = {}) {
    return false;
  }

  /// As forward, but each logits row's token is drawn where the logits are, as row i of
  /// draws() says (device_draws: mask, bias, penalties, temperature, top_k, top_p, min_p, the
  /// draw from its uniform), into `tokens` (batch.logits_indices.size()). `draws`, then
  /// `masks` when given, are called once each, after the forward has started (the caller packs
  /// them, and draws the uniforms, while the device works); draws().rows has one entry per
  /// logits row. False, with nothing done and neither called (so no generator advances), when
  /// the backend has no such shortcut; the caller then calls forward.
  virtual bool try_forward_sample(const forward_batch& /*batch*/,
                                  const std::function<const device_draws&()>& /*draws*/,
                                  std::vector<int32_t>& /*tokens*/,
                                  const std::function<const row_token_masks&()>& /*masks*/ = {}) {
    return false;
  }
};

/// How one process makes its workers' backends.
class backend_provider {
 public:
  virtual ~backend_provider() = default;

  /// The kind of device the workers run on: "cpu" or "cuda".
  virtual std::string device() const = 0;

  /// Devices a worker can be placed on, one worker per device (model_runner_config::
  /// device_index names one); 0 where workers share the host and are not counted (the CPU).
  virtual int32_t num_devices() const { return 0; }

  /// What the workers keep `model`'s weights in, for the startup log. Default: the host
  /// model's own storage (the CPU backend computes on it).
  virtual std::string describe_weights(const llama_model& model) const {
    return model.storage().description;
  }

  /// Why --tensor-parallel-size > 1 cannot run on these workers, or empty where it can.
  /// Default: the CPU's host all-reduce serves the CPU; another device needs its own.
  virtual std::string tensor_parallel_refusal() const {
    return device() == "cpu" ? std::string()
                             : "tensor parallelism runs on the CPU backend only (use --device cpu)";
  }

  /// What the workers keep the KV cache in under --kv-cache-dtype, for the startup log.
  /// Default: the CPU pools' type (cpu_cache_dtype).
  virtual std::string describe_kv_cache(const llama_model& /*model*/,
                                        const engine_config& config) const {
    return kv_cache_dtype_name(cpu_cache_dtype(config.cache));
  }

  /// The KV pools' sizes for `model` under `config`, or an error line (kv_budget::error)
  /// when the engine cannot start: no memory left, or max_model_len does not fit.
  virtual kv_budget plan_kv(const llama_model& model, const engine_config& config,
                            int32_t max_model_len) const = 0;

  /// What `model` needs before its first forward on this device, done while the engine
  /// loads so that no request waits for it. Default: nothing.
  virtual void prepare(const llama_model& /*model*/) const {}

  /// A worker's backend with pools of `config`'s sizes. Throws when the device fails.
  virtual std::unique_ptr<forward_backend> make_backend(
      std::shared_ptr<const llama_model> model, const model_runner_config& config) const = 0;
};

}  // namespace actorllm

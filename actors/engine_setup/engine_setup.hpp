#pragma once
/// Everything an engine needs before its first step, resolved once from the config: the
/// model and tokenizer, the served name, max_model_len, the KV pools' sizes, and the options
/// of the scheduler and worker cores, and the backend that builds each worker's device side.
/// Shared by the offline spine and the actor system.
#include <memory>
#include <string>
#include <vector>

#include "actors/gpu_worker/forward_backend.hpp"
#include "actors/gpu_worker/model_runner.hpp"
#include "actors/request_router/prompt_builder.hpp"
#include "actors/scheduler/scheduler.hpp"
#include "common/sampling_defaults.hpp"
#include "config/engine_config.hpp"
#include "grammar/grammar_compiler.hpp"
#include "model/llama_model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {

struct engine_setup {
  explicit engine_setup(tokenizer t) : tok(std::move(t)) {}

  engine_config config;
  std::shared_ptr<llama_model> model;  ///< rank 0's shard (the whole model without parallelism)
  /// One shard per rank of --tensor-parallel-size (shards[0] == model).
  std::vector<std::shared_ptr<llama_model>> shards;
  tokenizer tok;
  chat_renderer render_chat;  ///< empty when the model has no chat template
  std::string served_model_name;
  /// Other names requests may use: the --model argument when no --served-model-name was set.
  std::vector<std::string> model_aliases;
  int32_t max_model_len = 0;
  sampling_defaults sampling;  ///< --generation-config's defaults for requests
  int64_t kv_block_bytes = 0;  ///< bytes of one device KV block of one worker
  scheduler_options scheduler;
  model_runner_config runner;
  std::shared_ptr<const backend_provider> backend;  ///< sized the pools; builds workers' backends
  /// Compiles requests' structured output for this model's vocabulary (runner.grammars too).
  std::shared_ptr<grammar::grammar_compiler> grammars;
  /// --enable-lora: the adapters requests may name (runner.loras too); null otherwise.
  std::shared_ptr<lora_registry> loras;
  /// A vision-language model's image side for the router; null for text alone.
  std::shared_ptr<const image_pipeline> images;

  /// Loads and sizes everything on `backend` (null: the CPU, which refuses --device cuda; the
  /// shells pass select_backend(config)). Throws std::runtime_error with one clear line (an
  /// unknown architecture, a missing tensor, a max_model_len that does not fit the KV cache, ...).
  static engine_setup load(const engine_config& config,
                           std::shared_ptr<const backend_provider> backend = nullptr);
  /// A fresh forward_backend for one worker, with the pools sized above.
  std::unique_ptr<forward_backend> make_backend() const {
    return backend->make_backend(model, runner);
  }

  prompt_builder make_prompt_builder() const;
  /// One line per fact, as vLLM logs at startup: model, dtype, blocks, context length.
  std::string describe() const;
};

}  // namespace actorllm

#include "actors/gpu_worker/cuda_decoder.hpp"

#include <stdexcept>

#include "model/llama_model.hpp"

namespace actorllm {

namespace {

cuda::decode_graph_limits graph_limits_for(const model_config_hf& config,
                                           cuda::decode_graph_limits limits) {
  // Host routing waits on the device inside the step: never captured.
  if (config.moe.num_experts > 0) limits.max_batch = 0;
  return limits;
}

}  // namespace

cuda_decoder::cuda_decoder(const llama_model& model, const cuda_decoder_options& options,
                           cudaStream_t stream)
    : model_(model),
      options_(options),
      max_position_(model.config().head_dim > 0
                        ? static_cast<int64_t>(model.weights().cos_sin().size()) /
                              model.config().head_dim
                        : 0),
      own_stream_(stream ? nullptr : std::make_unique<cuda::device_stream>()),
      stream_(stream ? stream : own_stream_->get()),
      projector_(stream_),
      weights_(options.storage, projector_),
      table_(make_cuda_weight_table(model, weights_)),
      sampler_(model.config().vocab_size, stream_) {
  options_.graphs = graph_limits_for(model.config(), options.graphs);
}

cuda_decoder::~cuda_decoder() = default;

cuda::kv_cache_layout cuda_decoder::cache_layout(int64_t num_blocks, int64_t block_size,
                                                 cuda::kv_format format) const {
  const model_config_hf& c = model_.config();
  cuda::kv_cache_layout layout;
  layout.num_layers = c.num_layers;
  layout.num_blocks = num_blocks;
  layout.block_size = block_size;
  layout.num_kv_heads = c.num_kv_heads;
  layout.head_dim = c.head_dim;
  layout.type = options_.storage;
  layout.format = format;
  return layout;
}

void cuda_decoder::use_cache(int64_t num_blocks, int64_t block_size, cuda::kv_format format,
                             int64_t num_cpu_blocks) {
  if (graph_ops_) {
    const auto counts = graph_ops_->graphs();
    earlier_graphs_.captured += counts.captured;
    earlier_graphs_.replayed += counts.replayed;
  }
  graph_ops_.reset();
  ops_.reset();
  cache_.reset();  // free the old cache first
  cache_ = std::make_unique<cuda::device_kv_cache>(cache_layout(num_blocks, block_size, format),
                                                   num_cpu_blocks);
  ops_ = std::make_unique<cuda::cuda_forward_ops>(dims_of(model_.config()), max_position_,
                                                  options_.storage, *cache_, projector_,
                                                  options_.all_reduce);
  graph_ops_ = std::make_unique<cuda::graph_forward_ops>(*ops_, options_.graphs);
}

cuda::graph_forward_ops::counts cuda_decoder::graphs() const {
  cuda::graph_forward_ops::counts counts = earlier_graphs_;
  if (graph_ops_) {
    counts.captured += graph_ops_->graphs().captured;
    counts.replayed += graph_ops_->graphs().replayed;
  }
  return counts;
}

float* cuda_decoder::run(const forward_batch& batch) {
  if (!graph_ops_) throw std::logic_error("cuda_decoder: a step before use_cache");
  // engine_setup refuses --enable-lora on a device; a batch with adapters here is a bug.
  if (!batch.adapters.empty())
    throw std::runtime_error("LoRA adapters run on the CPU backend only (use --device cpu)");
  const model_config_hf& config = model_.config();
  try {
    decoder_forward(config, table_->refs, batch, *graph_ops_, scratch_, options_.tp_size);
  } catch (...) {
    if (!graph_ops_->abandon_capture()) throw;
    // A step its graph could not capture did not run: once more, op by op, as its shape
    // runs from now on.
    decoder_forward(config, table_->refs, batch, *graph_ops_, scratch_, options_.tp_size);
  }
  return graph_ops_->device_logits();
}

void cuda_decoder::forward(const forward_batch& batch, std::vector<float>& logits) {
  const float* device_logits = run(batch);
  sampler_.to_host(device_logits, static_cast<int64_t>(batch.logits_indices.size()), logits);
}

void cuda_decoder::forward_greedy(const forward_batch& batch, std::vector<int32_t>& tokens,
                                  const std::function<cuda::host_token_masks()>& masks) {
  float* device_logits = run(batch);
  sampler_.greedy(device_logits, static_cast<int64_t>(batch.logits_indices.size()), masks, tokens);
}

void cuda_decoder::forward_sample(const forward_batch& batch,
                                  const std::function<cuda::host_draws()>& draws,
                                  std::vector<int32_t>& tokens,
                                  const std::function<cuda::host_token_masks()>& masks) {
  float* device_logits = run(batch);
  sampler_.sample(device_logits, static_cast<int64_t>(batch.logits_indices.size()), draws, masks,
                  tokens);
}

}  // namespace actorllm

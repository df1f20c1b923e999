#pragma once
/// The drivers cuda_golden and cuda_logits share: one model (the CUDA decoder, or the CPU
/// forward as the reference) behind one interface, with a fresh KV cache per run, and greedy
/// decoding of several prompts over contiguous block tables. Header-only: each tool is one
/// translation unit.
#include <algorithm>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "actors/gpu_worker/cuda_decoder.hpp"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "model/forward_batch.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_model.hpp"

namespace actorllm::golden {

using tokens_t = std::vector<int32_t>;

/// One model with a fresh KV cache per run.
class model_under_test {
 public:
  virtual ~model_under_test() = default;
  virtual void reset(int64_t num_blocks, int64_t block_size) = 0;
  /// Logits (logits_indices.size(), vocab) of a finalized batch.
  virtual void forward(const forward_batch& b, std::vector<float>& logits) = 0;
  virtual void greedy(const forward_batch& b, tokens_t& next) = 0;
};

/// The positions the model's rotary table holds.
inline int64_t max_position_of(const llama_model& m) {
  return static_cast<int64_t>(m.weights().cos_sin().size()) / m.config().head_dim;
}

/// The worker's cuda_decoder over the model's weights, as its cuda_backend builds it, with
/// decode graphs for batches of up to 256 sequences, or none.
class cuda_model : public model_under_test {
 public:
  cuda_model(const llama_model& m, cuda::dtype t, bool graphs)
      : decoder_(m, options(t, graphs), nullptr) {}
  cuda::graph_forward_ops::counts graphs() const { return decoder_.graphs(); }
  void reset(int64_t num_blocks, int64_t block_size) override {
    decoder_.use_cache(num_blocks, block_size, cuda::kv_format::activations, 0);
  }
  void forward(const forward_batch& b, std::vector<float>& logits) override {
    decoder_.forward(b, logits);
  }
  void greedy(const forward_batch& b, tokens_t& next) override { decoder_.forward_greedy(b, next); }

 private:
  static cuda_decoder_options options(cuda::dtype t, bool graphs) {
    cuda_decoder_options o;
    o.storage = t;
    o.graphs.max_batch = graphs ? 256 : 0;
    return o;
  }
  cuda_decoder decoder_;
};

/// llama_model::forward on the CPU, over a float32 kv_cache.
class cpu_model : public model_under_test {
 public:
  explicit cpu_model(const llama_model& m) : model_(m) {}
  void reset(int64_t num_blocks, int64_t block_size) override {
    cache_.reset();
    cache_ = std::make_unique<kv_cache>(model_.cache_shape(num_blocks, block_size));
  }
  void forward(const forward_batch& b, std::vector<float>& logits) override {
    model_.forward(b, *cache_, ws_, logits);
  }
  void greedy(const forward_batch& b, tokens_t& next) override {
    forward(b, logits_);
    const int64_t vocab = model_.config().vocab_size;
    next.resize(b.logits_indices.size());
    for (size_t i = 0; i < next.size(); ++i) {
      const float* row = logits_.data() + static_cast<int64_t>(i) * vocab;
      next[i] = static_cast<int32_t>(std::max_element(row, row + vocab) - row);
    }
  }

 private:
  const llama_model& model_;
  std::unique_ptr<kv_cache> cache_;
  forward_workspace ws_;
  std::vector<float> logits_;
};

constexpr int32_t block_size = 16;

/// Greedy decoding of several prompts at once, as greedy_batch in llama_model_test.cpp: each
/// sequence owns a contiguous range of blocks; prompts are prefilled in chunks of `chunk`
/// tokens (0: whole), then decoded together one token per step.
inline std::vector<tokens_t> greedy_run(model_under_test& model, int64_t max_position,
                                        const std::vector<tokens_t>& prompts, int max_tokens,
                                        int chunk) {
  const int32_t blocks_per_seq = static_cast<int32_t>((max_position + block_size - 1) / block_size);
  model.reset(static_cast<int64_t>(blocks_per_seq) * prompts.size(), block_size);
  std::vector<tokens_t> tables(prompts.size()), outputs(prompts.size());
  std::vector<tokens_t> tokens = prompts;
  std::vector<int32_t> computed(prompts.size(), 0);
  for (size_t s = 0; s < prompts.size(); ++s) {
    tables[s].resize(blocks_per_seq);
    std::iota(tables[s].begin(), tables[s].end(), static_cast<int32_t>(s) * blocks_per_seq);
  }
  tokens_t next;
  while (true) {
    forward_batch batch;
    std::vector<size_t> sampled;
    for (size_t s = 0; s < prompts.size(); ++s) {
      if (static_cast<int>(outputs[s].size()) >= max_tokens) continue;
      const int32_t remaining = static_cast<int32_t>(tokens[s].size()) - computed[s];
      const int32_t take = chunk > 0 ? std::min(remaining, chunk) : remaining;
      const bool sample = take == remaining;
      batch.add_sequence(std::span(tokens[s]).subspan(computed[s], take), computed[s], tables[s],
                         block_size, sample);
      computed[s] += take;
      if (sample) sampled.push_back(s);
    }
    if (batch.seq_lens.empty()) break;
    batch.finalize();
    model.greedy(batch, next);
    for (size_t i = 0; i < sampled.size(); ++i) {
      outputs[sampled[i]].push_back(next[i]);
      tokens[sampled[i]].push_back(next[i]);
    }
  }
  return outputs;
}

}  // namespace actorllm::golden

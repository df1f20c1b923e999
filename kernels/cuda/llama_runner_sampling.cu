// llama_runner's ends of a step: the logits back to the host, or tokens chosen on the device
// (argmax, or sample_rows' draws), with the structured-output masks applied there first.
#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/llama_runner.cuh"
#include "kernels/cuda/llama_runner_helpers.cuh"
#include "kernels/cuda/sampling.cuh"
#include "kernels/cuda/token_bitmask.cuh"

namespace actorllm::cuda {

using runner_detail::require;
using runner_detail::reserve;
using runner_detail::upload_async;

void llama_runner::forward(const llama_host_batch& batch, device_kv_cache& cache,
                           std::vector<float>& logits) {
  const float* device_logits = run(batch, cache);
  logits.resize(static_cast<size_t>(batch.num_logits * config_.vocab_size));
  if (!logits.empty())
    CUDA_CHECK(cudaMemcpyAsync(logits.data(), device_logits, logits.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void llama_runner::upload_masks(int64_t num_logits, const host_token_masks& m) {
  for (int64_t i = 0; i < m.num_masked; ++i)
    require(m.rows[i] >= 0 && m.rows[i] < num_logits, "masked row outside the logits");
  require(m.words_per_row >= 0, "negative mask width");
  reserve(ws_.mask_rows, static_cast<size_t>(m.num_masked) * sizeof(int32_t));
  reserve(ws_.mask_words, static_cast<size_t>(m.num_masked * m.words_per_row) * sizeof(uint32_t));
  upload_async(ws_.mask_rows, m.rows, m.num_masked, stream_);
  upload_async(ws_.mask_words, m.words, m.num_masked * m.words_per_row, stream_);
}

void llama_runner::apply_masks(float* logits, int64_t num_logits, const host_token_masks& m) {
  if (m.num_masked <= 0) return;
  upload_masks(num_logits, m);
  apply_token_bitmask(logits, config_.vocab_size, ws_.mask_rows.as<int32_t>(),
                      ws_.mask_words.as<uint32_t>(), m.num_masked, m.words_per_row, stream_);
}

void llama_runner::upload_draws(int64_t num_logits, const host_draws& d) {
  require(d.num_rows == num_logits, "one draw per logits row");
  require(d.rows != nullptr && d.edit_offsets != nullptr, "draws without rows or offsets");
  require(d.edit_offsets[0] == 0, "edit offsets start at 0");
  for (int64_t r = 0; r < num_logits; ++r) {
    require(d.edit_offsets[r + 1] >= d.edit_offsets[r], "edit offsets decrease");
    for (int32_t e = d.edit_offsets[r]; e < d.edit_offsets[r + 1]; ++e) {
      require(d.edits[e].token >= 0 && d.edits[e].token < config_.vocab_size,
              "edited token outside the vocabulary");
      require(e == d.edit_offsets[r] || d.edits[e].token > d.edits[e - 1].token,
              "a row's edited tokens must ascend (each once)");
    }
  }
  const int64_t num_edits = d.edit_offsets[num_logits];
  require(num_edits == 0 || d.edits != nullptr, "edits missing");
  reserve(ws_.draw_rows, static_cast<size_t>(num_logits) * sizeof(row_sampling));
  reserve(ws_.edit_offsets, static_cast<size_t>(num_logits + 1) * sizeof(int32_t));
  reserve(ws_.edits, static_cast<size_t>(num_edits) * sizeof(logit_edit));
  upload_async(ws_.draw_rows, d.rows, num_logits, stream_);
  upload_async(ws_.edit_offsets, d.edit_offsets, num_logits + 1, stream_);
  upload_async(ws_.edits, d.edits, num_edits, stream_);
}

void llama_runner::forward_greedy(const llama_host_batch& batch, device_kv_cache& cache,
                                  std::vector<int32_t>& tokens,
                                  const std::function<host_token_masks()>& masks) {
  float* device_logits = run(batch, cache);
  tokens.resize(static_cast<size_t>(batch.num_logits));
  // The forward is queued, not done: the host computes the masks while the device works.
  if (masks) apply_masks(device_logits, batch.num_logits, masks());
  if (!tokens.empty()) {
    argmax(device_logits, batch.num_logits, config_.vocab_size, ws_.next_tokens.as<int32_t>(),
           dtype::f32, stream_);
    CUDA_CHECK(cudaMemcpyAsync(tokens.data(), ws_.next_tokens.get(),
                               tokens.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void llama_runner::forward_sample(const llama_host_batch& batch, device_kv_cache& cache,
                                  const std::function<host_draws()>& draws,
                                  std::vector<int32_t>& tokens,
                                  const std::function<host_token_masks()>& masks) {
  float* device_logits = run(batch, cache);
  const int64_t n = batch.num_logits;
  tokens.resize(static_cast<size_t>(n));
  // The forward is queued, not done: the host packs the draws and masks while the device works.
  upload_draws(n, draws());
  const host_token_masks m = masks ? masks() : host_token_masks{};
  const int32_t* mask_of_row = nullptr;
  std::vector<int32_t> host_mask_of_row;  // alive until the synchronize below
  if (m.num_masked > 0) {
    upload_masks(n, m);
    host_mask_of_row.assign(static_cast<size_t>(n), -1);
    for (int64_t i = 0; i < m.num_masked; ++i) {
      require(host_mask_of_row[m.rows[i]] < 0, "a logits row masked twice");
      host_mask_of_row[m.rows[i]] = static_cast<int32_t>(i);
    }
    reserve(ws_.mask_of_row, static_cast<size_t>(n) * sizeof(int32_t));
    upload_async(ws_.mask_of_row, host_mask_of_row.data(), n, stream_);
    mask_of_row = ws_.mask_of_row.as<int32_t>();
  }
  if (n > 0) {
    sample_rows(device_logits, n, config_.vocab_size, ws_.draw_rows.as<row_sampling>(),
                ws_.edit_offsets.as<int32_t>(), ws_.edits.as<logit_edit>(), mask_of_row,
                ws_.mask_words.as<uint32_t>(), m.words_per_row, ws_.next_tokens.as<int32_t>(),
                stream_);
    CUDA_CHECK(cudaMemcpyAsync(tokens.data(), ws_.next_tokens.get(),
                               tokens.size() * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace actorllm::cuda

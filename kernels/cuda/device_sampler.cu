#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device_sampler.cuh"
#include "kernels/cuda/token_bitmask.cuh"

namespace actorllm::cuda {

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("device_sampler: " + what);
}

template <typename T>
void upload_async(device_buffer& dst, const T* src, int64_t n, cudaStream_t stream) {
  if (n > 0)
    CUDA_CHECK(cudaMemcpyAsync(dst.get(), src, static_cast<size_t>(n) * sizeof(T),
                               cudaMemcpyHostToDevice, stream));
}

}  // namespace

void device_sampler::to_host(const float* logits, int64_t rows, std::vector<float>& out) {
  out.resize(static_cast<size_t>(rows * vocab_));
  if (!out.empty())
    CUDA_CHECK(cudaMemcpyAsync(out.data(), logits, out.size() * sizeof(float),
                               cudaMemcpyDeviceToHost, stream_));
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void device_sampler::upload_masks(int64_t rows, const host_token_masks& m) {
  for (int64_t i = 0; i < m.num_masked; ++i)
    require(m.rows[i] >= 0 && m.rows[i] < rows, "masked row outside the logits");
  require(m.words_per_row >= 0, "negative mask width");
  mask_rows_.grow(static_cast<size_t>(m.num_masked) * sizeof(int32_t));
  mask_words_.grow(static_cast<size_t>(m.num_masked * m.words_per_row) * sizeof(uint32_t));
  upload_async(mask_rows_, m.rows, m.num_masked, stream_);
  upload_async(mask_words_, m.words, m.num_masked * m.words_per_row, stream_);
}

void device_sampler::upload_draws(int64_t rows, const host_draws& d) {
  require(d.num_rows == rows, "one draw per logits row");
  require(d.rows != nullptr && d.edit_offsets != nullptr, "draws without rows or offsets");
  require(d.edit_offsets[0] == 0, "edit offsets start at 0");
  for (int64_t r = 0; r < rows; ++r) {
    require(d.edit_offsets[r + 1] >= d.edit_offsets[r], "edit offsets decrease");
    for (int32_t e = d.edit_offsets[r]; e < d.edit_offsets[r + 1]; ++e) {
      require(d.edits[e].token >= 0 && d.edits[e].token < vocab_,
              "edited token outside the vocabulary");
      require(e == d.edit_offsets[r] || d.edits[e].token > d.edits[e - 1].token,
              "a row's edited tokens must ascend (each once)");
    }
  }
  const int64_t num_edits = d.edit_offsets[rows];
  require(num_edits == 0 || d.edits != nullptr, "edits missing");
  draw_rows_.grow(static_cast<size_t>(rows) * sizeof(row_sampling));
  edit_offsets_.grow(static_cast<size_t>(rows + 1) * sizeof(int32_t));
  edits_.grow(static_cast<size_t>(num_edits) * sizeof(logit_edit));
  upload_async(draw_rows_, d.rows, rows, stream_);
  upload_async(edit_offsets_, d.edit_offsets, rows + 1, stream_);
  upload_async(edits_, d.edits, num_edits, stream_);
}

void device_sampler::greedy(float* logits, int64_t rows,
                            const std::function<host_token_masks()>& masks,
                            std::vector<int32_t>& tokens) {
  tokens.resize(static_cast<size_t>(rows));
  if (masks) {
    const host_token_masks m = masks();
    if (m.num_masked > 0) {
      upload_masks(rows, m);
      apply_token_bitmask(logits, vocab_, mask_rows_.as<int32_t>(), mask_words_.as<uint32_t>(),
                          m.num_masked, m.words_per_row, stream_);
    }
  }
  if (rows > 0) {
    next_tokens_.grow(static_cast<size_t>(rows) * sizeof(int32_t));
    argmax(logits, rows, vocab_, next_tokens_.as<int32_t>(), dtype::f32, stream_);
    CUDA_CHECK(cudaMemcpyAsync(tokens.data(), next_tokens_.get(), tokens.size() * sizeof(int32_t),
                               cudaMemcpyDeviceToHost, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void device_sampler::sample(float* logits, int64_t rows, const std::function<host_draws()>& draws,
                            const std::function<host_token_masks()>& masks,
                            std::vector<int32_t>& tokens) {
  tokens.resize(static_cast<size_t>(rows));
  upload_draws(rows, draws());
  const host_token_masks m = masks ? masks() : host_token_masks{};
  const int32_t* mask_of_row = nullptr;
  std::vector<int32_t> host_mask_of_row;  // alive until the synchronize below
  if (m.num_masked > 0) {
    upload_masks(rows, m);
    host_mask_of_row.assign(static_cast<size_t>(rows), -1);
    for (int64_t i = 0; i < m.num_masked; ++i) {
      require(host_mask_of_row[m.rows[i]] < 0, "a logits row masked twice");
      host_mask_of_row[m.rows[i]] = static_cast<int32_t>(i);
    }
    mask_of_row_.grow(static_cast<size_t>(rows) * sizeof(int32_t));
    upload_async(mask_of_row_, host_mask_of_row.data(), rows, stream_);
    mask_of_row = mask_of_row_.as<int32_t>();
  }
  if (rows > 0) {
    next_tokens_.grow(static_cast<size_t>(rows) * sizeof(int32_t));
    sample_rows(logits, rows, vocab_, draw_rows_.as<row_sampling>(), edit_offsets_.as<int32_t>(),
                edits_.as<logit_edit>(), mask_of_row, mask_words_.as<uint32_t>(), m.words_per_row,
                next_tokens_.as<int32_t>(), stream_);
    CUDA_CHECK(cudaMemcpyAsync(tokens.data(), next_tokens_.get(), tokens.size() * sizeof(int32_t),
                               cudaMemcpyDeviceToHost, stream_));
  }
  CUDA_CHECK(cudaStreamSynchronize(stream_));
}

}  // namespace actorllm::cuda

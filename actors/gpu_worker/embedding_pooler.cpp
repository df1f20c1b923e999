#include "actors/gpu_worker/embedding_pooler.hpp"

#include <cmath>

namespace actorllm {

void embedding_pooler::add(seq_id seq, pooling_type type, int32_t start_position,
                           std::span<const float> rows, int64_t dim) {
  pool& p = pools_[seq];
  if (start_position == 0 || p.sum.empty()) p = pool{std::vector<double>(dim, 0.0), 0, type};
  const auto num_rows = static_cast<int64_t>(rows.size()) / dim;
  if (num_rows == 0) return;
  if (type == pooling_type::last) {
    const auto last = rows.subspan(static_cast<size_t>((num_rows - 1) * dim));
    for (int64_t d = 0; d < dim; ++d) p.sum[d] = last[d];
    p.num_rows = 1;
    return;
  }
  for (int64_t r = 0; r < num_rows; ++r)
    for (int64_t d = 0; d < dim; ++d) p.sum[d] += rows[r * dim + d];
  p.num_rows += num_rows;
}

std::vector<float> embedding_pooler::finish(seq_id seq, bool normalize) {
  auto it = pools_.find(seq);
  if (it == pools_.end()) return {};
  pool p = std::move(it->second);
  pools_.erase(it);
  if (p.type == pooling_type::mean && p.num_rows > 0)
    for (double& v : p.sum) v /= static_cast<double>(p.num_rows);
  double norm = 0.0;
  for (double v : p.sum) norm += v * v;
  norm = std::sqrt(norm);
  const double scale = normalize && norm > 0.0 ? 1.0 / norm : 1.0;
  std::vector<float> out(p.sum.size());
  for (size_t d = 0; d < out.size(); ++d) out[d] = static_cast<float>(p.sum[d] * scale);
  return out;
}

}  // namespace actorllm

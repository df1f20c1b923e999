#include "model/tensor_parallel.hpp"

#include <stdexcept>
#include <string>

namespace actorllm {
namespace {

/// Rows [first, first + count) of a row-major (rows, cols) matrix.
std::vector<float> rows_of(const std::vector<float>& m, int64_t cols, int64_t first,
                           int64_t count) {
  return {m.begin() + first * cols, m.begin() + (first + count) * cols};
}

/// Columns [first, first + count) of a row-major (rows, cols) matrix.
std::vector<float> cols_of(const std::vector<float>& m, int64_t cols, int64_t first,
                           int64_t count) {
  std::vector<float> out;
  for (int64_t r = 0; r < static_cast<int64_t>(m.size()) / cols; ++r)
    out.insert(out.end(), m.begin() + r * cols + first, m.begin() + r * cols + first + count);
  return out;
}

std::vector<float> concat_parts(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

/// Keeps this rank's heads, KV heads and MLP columns; `c` becomes the shard's view.
void shard_llama_weights(llama_weights& w, model_config_hf& c, tp_shard shard) {
  const int64_t n = shard.size, r = shard.rank, dim = c.hidden_size;
  if (c.num_heads % n || c.num_kv_heads % n || c.intermediate_size % n)
    throw std::runtime_error(
        "--tensor-parallel-size " + std::to_string(n) + " must divide the heads (" +
        std::to_string(c.num_heads) + "), KV heads (" + std::to_string(c.num_kv_heads) +
        ") and intermediate size (" + std::to_string(c.intermediate_size) + ")");
  const int64_t q = c.q_size(), kv = c.kv_size();
  const int64_t q_local = q / n, kv_local = kv / n, hidden = c.intermediate_size,
                hidden_local = hidden / n;
  for (auto& l : w.layers) {
    l.qkv = concat_parts({rows_of(l.qkv, dim, r * q_local, q_local),
                          rows_of(l.qkv, dim, q + r * kv_local, kv_local),
                          rows_of(l.qkv, dim, q + kv + r * kv_local, kv_local)});
    if (!l.qkv_bias.empty())
      l.qkv_bias = concat_parts({rows_of(l.qkv_bias, 1, r * q_local, q_local),
                                 rows_of(l.qkv_bias, 1, q + r * kv_local, kv_local),
                                 rows_of(l.qkv_bias, 1, q + kv + r * kv_local, kv_local)});
    l.o = cols_of(l.o, q, r * q_local, q_local);
    l.gate_up = concat_parts({rows_of(l.gate_up, dim, r * hidden_local, hidden_local),
                              rows_of(l.gate_up, dim, hidden + r * hidden_local, hidden_local)});
    l.down = cols_of(l.down, hidden, r * hidden_local, hidden_local);
  }
  c.num_heads /= n;
  c.num_kv_heads /= n;
  c.intermediate_size /= n;
}

}  // namespace actorllm

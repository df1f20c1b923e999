#include "model/packed_weights.hpp"

#include <deque>
#include <string>

namespace actorllm {

namespace {

/// Reads checkpoint tensors as rows to pack, after checking their shapes, and keeps the
/// per-row scales of float8 ones (their weight_scale, per tensor or per output channel) while
/// the packing reads them.
class rows_reader {
 public:
  explicit rows_reader(const tensor_store& store) : store_(store) {}

  cpu::matrix_rows operator()(const std::string& name, int64_t rows, int64_t cols) {
    const tensor_view& view = store_.get(name);
    if (view.shape != std::vector<int64_t>{rows, cols})
      throw std::runtime_error("tensor '" + name + "' has shape " + shape_text(view.shape) +
                               ", expected [" + std::to_string(rows) + ", " + std::to_string(cols) +
                               "]");
    cpu::matrix_rows r{view.data, source_format(view.dtype), rows};
    if (view.dtype == tensor_dtype::f8_e4m3) r.row_scales = scales_of(name + "_scale", rows).data();
    return r;
  }

 private:
  static std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s;
    for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
  }

  /// `name` (shape [], [1], [rows] or [rows, 1]) as one float32 scale per row.
  const std::vector<float>& scales_of(const std::string& name, int64_t rows) {
    const tensor_view& view = store_.get(name);
    const int64_t n = view.numel();
    if (view.dtype == tensor_dtype::f8_e4m3 || (n != 1 && n != rows) || view.shape.size() > 2)
      throw std::runtime_error("tensor '" + name + "' has shape " + shape_text(view.shape) +
                               ": expected one scale per tensor or per output channel (" +
                               std::to_string(rows) + ")");
    std::vector<float> values(n);
    convert_to_f32(view.dtype, view.data, n, values.data());
    if (n == 1) values.assign(rows, values[0]);
    return scales_.emplace_back(std::move(values));
  }

  const tensor_store& store_;
  std::deque<std::vector<float>> scales_;  // stable addresses while the reader lives
};

}  // namespace

cpu::weight_format source_format(tensor_dtype dtype) {
  switch (dtype) {
    case tensor_dtype::f16:
      return cpu::weight_format::f16;
    case tensor_dtype::bf16:
      return cpu::weight_format::bf16;
    case tensor_dtype::f8_e4m3:
      return cpu::weight_format::fp8;
    case tensor_dtype::f32:
      break;
  }
  return cpu::weight_format::f32;
}

int64_t packed_llama_weights::bytes() const {
  int64_t total = lm_head.bytes() + embed.bytes();
  for (const auto& l : layers)
    total += l.qkv.bytes() + l.o.bytes() + l.gate_up.bytes() + l.down.bytes();
  return total;
}

std::unique_ptr<packed_llama_weights> pack_llama_weights(const llama_weights& weights,
                                                         const model_config_hf& c) {
  const int64_t dim = c.hidden_size, q_size = c.q_size();
  auto p = std::make_unique<packed_llama_weights>();
  for (const auto& w : weights.layers) {
    packed_llama_weights::layer layer{cpu::pack_matrix(w.qkv.data(), q_size + 2 * c.kv_size(), dim),
                                      cpu::pack_matrix(w.o.data(), dim, q_size),
                                      {},
                                      {}};
    if (!w.sparse()) {  // experts run through cpu::linear, on their gathered tokens
      layer.gate_up = cpu::pack_matrix(w.gate_up.data(), 2 * c.intermediate_size, dim);
      layer.down = cpu::pack_matrix(w.down.data(), dim, c.intermediate_size);
    }
    p->layers.push_back(std::move(layer));
  }
  p->lm_head = cpu::pack_matrix(weights.head().data(), c.vocab_size, dim);
  return p;
}

std::unique_ptr<packed_llama_weights> load_packed_llama_weights(const tensor_store& store,
                                                                const model_config_hf& c,
                                                                cpu::weight_format format) {
  const int64_t dim = c.hidden_size, hidden = c.intermediate_size;
  const int64_t q = c.q_size(), kv = c.kv_size();
  rows_reader rows_of(store);
  // float8 rows stay float8; the rest is packed as `format`.
  auto pack = [&](std::initializer_list<cpu::matrix_rows> parts, int64_t in) {
    const bool fp8 = parts.begin()->format == cpu::weight_format::fp8;
    return cpu::pack_matrix({parts.begin(), parts.size()}, in,
                            fp8 ? cpu::weight_format::fp8 : format);
  };
  auto p = std::make_unique<packed_llama_weights>();
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string a = "model.layers." + std::to_string(l) + ".self_attn.";
    const std::string m = "model.layers." + std::to_string(l) + ".mlp.";
    packed_llama_weights::layer layer;
    // Phi-3 ships q, k and v fused already, and gate and up, in our order.
    layer.qkv =
        store.contains(a + "qkv_proj.weight")
            ? pack({rows_of(a + "qkv_proj.weight", q + 2 * kv, dim)}, dim)
            : pack({rows_of(a + "q_proj.weight", q, dim), rows_of(a + "k_proj.weight", kv, dim),
                    rows_of(a + "v_proj.weight", kv, dim)},
                   dim);
    layer.o = pack({rows_of(a + "o_proj.weight", dim, q)}, q);
    layer.gate_up = store.contains(m + "gate_up_proj.weight")
                        ? pack({rows_of(m + "gate_up_proj.weight", 2 * hidden, dim)}, dim)
                        : pack({rows_of(m + "gate_proj.weight", hidden, dim),
                                rows_of(m + "up_proj.weight", hidden, dim)},
                               dim);
    layer.down = pack({rows_of(m + "down_proj.weight", dim, hidden)}, hidden);
    p->layers.push_back(std::move(layer));
  }
  const auto embed = rows_of("model.embed_tokens.weight", c.vocab_size, dim);
  if (store.contains("lm_head.weight") || !c.tie_word_embeddings) {
    p->lm_head = pack({rows_of("lm_head.weight", c.vocab_size, dim)}, dim);
    p->embed = pack({embed}, dim);
  } else {
    p->lm_head = pack({embed}, dim);
  }
  return p;
}

}  // namespace actorllm

#include "model/packed_weights.hpp"

#include <deque>
#include <string>

#include "model/quantized_checkpoint.hpp"

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
    if (view.dtype == tensor_dtype::i32 || view.dtype == tensor_dtype::i64)
      throw std::runtime_error("tensor '" + name + "' holds integers, not weights");
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
    case tensor_dtype::i32:
    case tensor_dtype::i64:
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

namespace {

/// A projection to pack: its tensors' name without ".weight" (or ".qweight", ...), and rows.
struct projection {
  std::string prefix;
  int64_t rows;
};

/// Packs projections stacked in order (q, k, v fused) from a checkpoint: dense rows (float,
/// 16-bit, float8) as the choice says, integer codes as shipped.
class projection_packer {
 public:
  projection_packer(const tensor_store& store, cpu::weight_format format,
                    const checkpoint_quantization& quantized)
      : store_(store), rows_of_(store), format_(format), quantized_(quantized) {}

  /// Whether the checkpoint has projection `prefix` in any form.
  bool has(const std::string& prefix) const {
    return store_.contains(prefix + ".weight") ||
           has_quantized_projection(store_, quantized_, prefix);
  }

  cpu::packed_matrix operator()(std::initializer_list<projection> parts, int64_t in) {
    const bool integer = has_quantized_projection(store_, quantized_, parts.begin()->prefix);
    for (const auto& part : parts)
      if (has_quantized_projection(store_, quantized_, part.prefix) != integer)
        throw std::runtime_error("'" + part.prefix + "' and '" + parts.begin()->prefix +
                                 "' are fused into one projection, but only one is quantized");
    if (integer) return pack_integer(parts, in);
    std::vector<cpu::matrix_rows> rows;
    for (const auto& part : parts) rows.push_back(rows_of_(part.prefix + ".weight", part.rows, in));
    // float8 rows stay float8; the rest is packed as `format`.
    const bool fp8 = rows.front().format == cpu::weight_format::fp8;
    return cpu::pack_matrix(rows, in, fp8 ? cpu::weight_format::fp8 : format_);
  }

 private:
  cpu::packed_matrix pack_integer(std::initializer_list<projection> parts, int64_t in) const {
    std::vector<decoded_projection> decoded;
    std::vector<cpu::quantized_rows> rows;
    for (const auto& part : parts) {
      decoded.push_back(decode_projection(store_, quantized_, part.prefix, part.rows, in));
      if (decoded.back().input_order != decoded.front().input_order)
        throw std::runtime_error("'" + part.prefix + "' orders its groups (g_idx) unlike '" +
                                 parts.begin()->prefix +
                                 "', with which it is fused into one projection");
    }
    for (const auto& d : decoded) rows.push_back(d.rows_view());
    const cpu::quantized_layout layout{quantized_.bits, decoded.front().group_size,
                                       decoded.front().input_order};
    try {
      return cpu::pack_quantized(rows, in, layout);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error("'" + parts.begin()->prefix + "': " + e.what());
    }
  }

  const tensor_store& store_;
  rows_reader rows_of_;
  cpu::weight_format format_;
  checkpoint_quantization quantized_;
};

}  // namespace

std::unique_ptr<packed_llama_weights> load_packed_llama_weights(
    const tensor_store& store, const model_config_hf& c, cpu::weight_format format,
    const checkpoint_quantization& quantized) {
  const int64_t dim = c.hidden_size, hidden = c.intermediate_size;
  const int64_t q = c.q_size(), kv = c.kv_size();
  projection_packer pack(store, format, quantized);
  auto p = std::make_unique<packed_llama_weights>();
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string a = "model.layers." + std::to_string(l) + ".self_attn.";
    const std::string m = "model.layers." + std::to_string(l) + ".mlp.";
    packed_llama_weights::layer layer;
    // Phi-3 ships q, k and v fused already, and gate and up, in our order.
    layer.qkv = pack.has(a + "qkv_proj")
                    ? pack({{a + "qkv_proj", q + 2 * kv}}, dim)
                    : pack({{a + "q_proj", q}, {a + "k_proj", kv}, {a + "v_proj", kv}}, dim);
    layer.o = pack({{a + "o_proj", dim}}, q);
    layer.gate_up = pack.has(m + "gate_up_proj")
                        ? pack({{m + "gate_up_proj", 2 * hidden}}, dim)
                        : pack({{m + "gate_proj", hidden}, {m + "up_proj", hidden}}, dim);
    layer.down = pack({{m + "down_proj", dim}}, hidden);
    p->layers.push_back(std::move(layer));
  }
  if (store.contains("lm_head.weight") || !c.tie_word_embeddings) {
    p->lm_head = pack({{"lm_head", c.vocab_size}}, dim);
    p->embed = pack({{"model.embed_tokens", c.vocab_size}}, dim);
  } else {
    p->lm_head = pack({{"model.embed_tokens", c.vocab_size}}, dim);
  }
  return p;
}

}  // namespace actorllm

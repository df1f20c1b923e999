#include "actors/gpu_worker/cuda_weights.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/packed_linear.hpp"
#include "model/llama_model.hpp"
#include "model/llama_weights.hpp"
#include "model/packed_weights.hpp"
#include "model/weight_handles.hpp"

namespace actorllm {

cuda::quantized_matrix quantized_host_matrix::view() const {
  cuda::quantized_matrix v;
  v.code = code;
  v.out_features = out_features;
  v.in_features = in_features;
  v.group_size = group_size;
  v.codes = codes.data();
  v.scales = scales.data();
  v.zeros = zeros.empty() ? nullptr : zeros.data();
  v.input_order = input_order.empty() ? nullptr : input_order.data();
  return v;
}

std::optional<quantized_host_matrix> device_layout_of(const cpu::packed_matrix& p) {
  using cpu::weight_format;
  quantized_host_matrix m;
  switch (p.format) {
    case weight_format::q8:
      m.code = cuda::weight_code::q8;
      break;
    case weight_format::fp8:
      m.code = cuda::weight_code::fp8;
      break;
    case weight_format::q4:
      m.code = cuda::weight_code::q4;
      break;
    default:
      return std::nullopt;
  }
  m.out_features = p.out_features;
  m.in_features = p.in_features;
  m.group_size = p.group_length();
  const int64_t width = cpu::packed_matrix::panel_width, in = p.in_features;
  const int64_t groups = p.num_groups();
  m.codes.resize(static_cast<size_t>(m.view().code_bytes()));
  m.scales.resize(static_cast<size_t>(p.out_features * groups));
  if (m.code == cuda::weight_code::q4) m.zeros.resize(m.scales.size());
  if (!cuda::quantized_layout_error(m.view()).empty()) return std::nullopt;
  m.input_order = p.input_order;
  // The packing's fp8 scales hold 2^8 times the weight's (packed_matrix::scales).
  const float scale_divisor = m.code == cuda::weight_code::fp8 ? 256.0f : 1.0f;
  for (int64_t o = 0; o < p.out_features; ++o) {
    const int64_t panel = o / width, lane = o % width;
    for (int64_t g = 0; g < groups; ++g) {
      const size_t from = static_cast<size_t>((panel * groups + g) * width + lane);
      if (m.code == cuda::weight_code::q4) {
        m.scales[o * groups + g] = p.q4_scale(static_cast<int64_t>(from));
        m.zeros[o * groups + g] = static_cast<uint8_t>(p.q4_zero(static_cast<int64_t>(from)));
      } else {
        m.scales[o * groups + g] = p.scales[from] / scale_divisor;
      }
    }
    if (m.code == cuda::weight_code::q4) {
      // Panel row bytes hold feature `lane % 8` in the low nibble, `lane % 8 + 8` in the high.
      const int shift = lane < width / 2 ? 0 : 4;
      const auto nibble = [&](int64_t r) {
        return (p.panels4[(panel * in + r) * (width / 2) + lane % (width / 2)] >> shift) & 0xf;
      };
      for (int64_t r = 0; r < in; r += 2)
        m.codes[(o * in + r) / 2] = static_cast<uint8_t>(nibble(r) | nibble(r + 1) << 4);
    } else {
      for (int64_t r = 0; r < in; ++r)
        m.codes[o * in + r] = static_cast<uint8_t>(p.panels8[(panel * in + r) * width + lane]);
    }
  }
  return m;
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("CUDA weights: " + what);
}

/// The CUDA ops' handles, made as decoder_refs_of walks the model.
class cuda_handle_maker final : public weight_handle_maker {
 public:
  /// `packed`: the model's panels where they are its only copy (null: float32 rows).
  cuda_handle_maker(const packed_llama_weights* packed, cuda_weight_sink& sink,
                    cuda_weight_table& table)
      : packed_(packed), sink_(sink), t_(table) {}

  op_weight vector(const std::string& name, const std::vector<float>& values) override {
    return sink_.store(name, values.data(), static_cast<int64_t>(values.size()), false);
  }
  op_weight rotary(const std::string& name, const std::vector<float>& cos_sin) override {
    return sink_.store(name, cos_sin.data(), static_cast<int64_t>(cos_sin.size()), true);
  }
  op_linear linear(const std::string& name, const std::vector<float>& rows,
                   const cpu::packed_matrix* panels, int64_t in, int64_t out,
                   op_weight bias) override {
    cuda::linear_weight w;
    // A quantized projection stays quantized: the device layout, no dense copy.
    std::optional<quantized_host_matrix> layout;
    if (packed(panels)) layout = device_layout_of(*panels);
    if (layout) {
      require(layout->out_features == out && layout->in_features == in,
              name + ": quantized with another shape than the model's");
      w.quantized = sink_.store_quantized(name, *layout);
    } else {
      w.dense = sink_.store(name, matrix(name, rows, panels, out * in), out * in, false);
    }
    t_.linears.push_back(w);
    return {&t_.linears.back(), bias};
  }
  op_weight embedding(const std::vector<float>& rows, const cpu::packed_matrix* panels) override {
    const int64_t n = packed(panels) ? panels->out_features * panels->in_features
                                     : static_cast<int64_t>(rows.size());
    return sink_.store("embed", matrix("embed", rows, panels, n), n, false);
  }
  op_linear head(const std::vector<float>& rows, const cpu::packed_matrix* panels, int64_t in,
                 int64_t out, bool tied, op_weight embedding) override {
    if (!tied) return linear("lm_head", rows, panels, in, out, nullptr);
    t_.linears.push_back({embedding, {}});  // the embedding table, read as the head
    return {&t_.linears.back(), nullptr};
  }

 private:
  /// Whether the device reads `panels` (the model keeps only its packed copy).
  bool packed(const cpu::packed_matrix* panels) const {
    return packed_ && panels && !panels->empty();
  }
  /// What the device receives of a dense matrix of n values: its float32 rows, or its panels
  /// unpacked when uploaded, one at a time: 16-bit panels as their own bits (the device gets
  /// the checkpoint's values, no float32 staging), others as float32.
  cuda::host_tensor matrix(const std::string& name, const std::vector<float>& rows,
                           const cpu::packed_matrix* panels, int64_t n) const {
    if (!packed(panels)) {
      require(static_cast<int64_t>(rows.size()) == n, name + ": " + std::to_string(rows.size()) +
                                                          " values, the model needs " +
                                                          std::to_string(n));
      return rows.data();
    }
    require(panels->out_features * panels->in_features == n, name + ": panels of another shape");
    if (panels->format == cpu::weight_format::bf16 || panels->format == cpu::weight_format::f16)
      return {
          panels->format == cpu::weight_format::bf16 ? cuda::dtype::bf16 : cuda::dtype::f16,
          [panels](void* out) { cpu::unpack_matrix_bits16(*panels, static_cast<uint16_t*>(out)); }};
    return {cuda::dtype::f32, [panels](void* out) {
              const std::vector<float> values = cpu::unpack_matrix(*panels);
              std::copy(values.begin(), values.end(), static_cast<float*>(out));
            }};
  }

  const packed_llama_weights* packed_;
  cuda_weight_sink& sink_;
  cuda_weight_table& t_;
};

}  // namespace

std::unique_ptr<const cuda_weight_table> make_cuda_weight_table(const llama_model& model,
                                                                cuda_weight_sink& sink) {
  const llama_weights& w = model.weights();
  const auto& local = w.local_rotary.cos_sin;
  if (!local.empty() && local.size() != w.cos_sin().size())
    throw std::runtime_error(
        model.config().architecture +
        ": the local layers' rotary table differs in size from the global "
        "one, which the CUDA backend does not run: serve it with --device cpu");
  auto table = std::make_unique<cuda_weight_table>();
  const packed_llama_weights* packed = model.packed_only() ? model.cpu_weights() : nullptr;
  cuda_handle_maker make(packed, sink, *table);
  table->refs = decoder_refs_of(w, packed, model.config(), make);
  return table;
}

const void* device_weight_sink::store(const std::string& name, const cuda::host_tensor& values,
                                      int64_t n, bool keep_fp32) {
  require(!values.empty() && n > 0, "missing weight " + name);
  return store_.upload(name, values, n, keep_fp32);
}

cuda::quantized_matrix device_weight_sink::store_quantized(const std::string& name,
                                                           const quantized_host_matrix& matrix) {
  const std::string error = cuda::quantized_layout_error(matrix.view());
  require(error.empty(), name + ": " + error);
  quantized_.push_back(std::make_unique<cuda::device_quantized_matrix>(matrix.view()));
  const cuda::quantized_matrix& on_device = quantized_.back()->view();
  projector_.prepare(on_device);
  return on_device;
}

}  // namespace actorllm

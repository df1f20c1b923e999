// Decoding GPTQ, AWQ and compressed-tensors pack-quantized projections, each as its format's
// documentation lays the tensors out:
//   GPTQ (AutoGPTQ):  qweight int32 (cols * bits / 32, rows), code of (o, k) in bits
//                     [bits * (k % p), ...) of qweight[k / p][o], p = 32 / bits;
//                     qzeros int32 (groups, rows * bits / 32), packed the same way along o,
//                     holding the zero point minus 1; scales (groups, rows); g_idx int32 (cols).
//   AWQ (GEMM):       qweight int32 (cols, rows / 8), code of (o, k) in nibble i of
//                     qweight[k][o / 8] where (0 2 4 6 1 3 5 7)[i] = o % 8; qzeros
//                     (groups, rows / 8) the same way; scales (groups, rows).
//   compressed-tensors pack-quantized: weight_packed int32 (rows, ceil(cols * bits / 32)),
//                     code + 2^(bits-1) of (o, k) in bits [bits * (k % p), ...) of
//                     weight_packed[o][k / p]; weight_scale (rows, groups); weight_shape
//                     (2) = (rows, cols).
#include "model/quantized_checkpoint.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace actorllm {

namespace {

using method = checkpoint_quantization::method;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += (s.empty() ? "" : ", ") + std::to_string(d);
  return "[" + s + "]";
}

/// The tensor `name` after checking that it is int32 of shape `shape`.
const tensor_view& int32_tensor(const tensor_store& store, const std::string& name,
                                const std::vector<int64_t>& shape) {
  const tensor_view& v = store.get(name);
  if (v.dtype != tensor_dtype::i32)
    throw std::runtime_error("tensor '" + name + "' must be int32 (I32)");
  if (v.shape != shape)
    throw std::runtime_error("tensor '" + name + "' has shape " + shape_text(v.shape) +
                             ", expected " + shape_text(shape));
  return v;
}

/// Element i of an int32 tensor (read byte-wise: it may sit at any address).
uint32_t word(const tensor_view& v, int64_t i) {
  uint32_t w;
  std::memcpy(&w, static_cast<const unsigned char*>(v.data) + 4 * i, 4);
  return w;
}

/// A float tensor of shape `shape` as float32, laid out as (rows, groups) from the file's
/// (groups, rows) when `transposed`.
std::vector<float> scales_of(const tensor_store& store, const std::string& name,
                             const std::vector<int64_t>& shape, bool transposed) {
  const tensor_view& v = store.get(name);
  if (v.dtype != tensor_dtype::f16 && v.dtype != tensor_dtype::bf16 && v.dtype != tensor_dtype::f32)
    throw std::runtime_error("tensor '" + name + "' must be float16, bfloat16 or float32");
  if (v.shape != shape)
    throw std::runtime_error("tensor '" + name + "' has shape " + shape_text(v.shape) +
                             ", expected " + shape_text(shape));
  std::vector<float> file(v.numel());
  convert_to_f32(v.dtype, v.data, v.numel(), file.data());
  if (!transposed) return file;
  std::vector<float> out(file.size());
  const int64_t groups = shape[0], rows = shape[1];
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < rows; ++o) out[o * groups + g] = file[g * rows + o];
  return out;
}

/// The group size and count of a projection with `cols` input features.
void set_groups(decoded_projection& d, const checkpoint_quantization& q, const std::string& name) {
  d.group_size = q.group_size > 0 ? q.group_size : d.cols;
  if (d.cols % d.group_size != 0)
    throw std::runtime_error("'" + name + "': group_size " + std::to_string(q.group_size) +
                             " does not divide its " + std::to_string(d.cols) + " input features");
}

int64_t num_groups(const decoded_projection& d) {
  return d.cols / d.group_size;
}

/// GPTQ's g_idx: input feature k is in group g_idx[k]. Sorted by group into input_order
/// unless it is the plain k / group_size; every group must hold group_size features.
void read_g_idx(decoded_projection& d, const tensor_store& store, const std::string& name) {
  const tensor_view& v = int32_tensor(store, name, {d.cols});
  const int64_t groups = num_groups(d);
  std::vector<int32_t> group_of(d.cols);
  std::vector<int64_t> members(groups, 0);
  bool plain = true;
  for (int64_t k = 0; k < d.cols; ++k) {
    const auto g = static_cast<int32_t>(word(v, k));
    if (g < 0 || g >= groups)
      throw std::runtime_error("tensor '" + name + "': input feature " + std::to_string(k) +
                               " is in group " + std::to_string(g) + ", outside [0, " +
                               std::to_string(groups) + ")");
    group_of[k] = g;
    plain = plain && g == k / d.group_size;
    ++members[g];
  }
  for (int64_t g = 0; g < groups; ++g)
    if (members[g] != d.group_size)
      throw std::runtime_error("tensor '" + name + "': group " + std::to_string(g) + " has " +
                               std::to_string(members[g]) + " input features, expected " +
                               std::to_string(d.group_size));
  if (plain) return;
  d.input_order.resize(d.cols);
  std::iota(d.input_order.begin(), d.input_order.end(), 0);
  std::stable_sort(d.input_order.begin(), d.input_order.end(),
                   [&](int32_t a, int32_t b) { return group_of[a] < group_of[b]; });
}

void decode_gptq(decoded_projection& d, const tensor_store& store, const checkpoint_quantization& q,
                 const std::string& p) {
  const int bits = q.bits, per_word = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  if (d.cols % per_word != 0 || d.rows % per_word != 0)
    throw std::runtime_error("'" + p + "': GPTQ packs " + std::to_string(per_word) +
                             " codes per int32, which does not divide its shape [" +
                             std::to_string(d.rows) + ", " + std::to_string(d.cols) + "]");
  const int64_t groups = num_groups(d);
  const tensor_view& qweight = int32_tensor(store, p + ".qweight", {d.cols / per_word, d.rows});
  const tensor_view& qzeros = int32_tensor(store, p + ".qzeros", {groups, d.rows / per_word});
  d.scales = scales_of(store, p + ".scales", {groups, d.rows}, true);
  if (store.contains(p + ".g_idx"))
    read_g_idx(d, store, p + ".g_idx");
  else if (q.desc_act)
    throw std::runtime_error("checkpoint is missing tensor '" + p + ".g_idx' (desc_act)");
  for (int64_t k = 0; k < d.cols; ++k)
    for (int64_t o = 0; o < d.rows; ++o)
      d.codes[o * d.cols + k] = static_cast<uint8_t>(
          (word(qweight, (k / per_word) * d.rows + o) >> (bits * (k % per_word))) & mask);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < d.rows; ++o) {
      const uint32_t stored =
          (word(qzeros, g * (d.rows / per_word) + o / per_word) >> (bits * (o % per_word))) & mask;
      if (stored + 1 > 255)
        throw std::runtime_error("tensor '" + p + ".qzeros': an 8-bit zero point of 256");
      d.zeros[o * groups + g] = static_cast<uint8_t>(stored + 1);
    }
}

/// AWQ's order of the eight columns in an int32: nibble i holds column (0 2 4 6 1 3 5 7)[i],
/// so column j is in nibble awq_nibble[j].
constexpr int awq_nibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};

void decode_awq(decoded_projection& d, const tensor_store& store, const std::string& p) {
  if (d.rows % 8 != 0)
    throw std::runtime_error("'" + p +
                             "': AWQ packs 8 output features per int32, which does "
                             "not divide its " +
                             std::to_string(d.rows));
  const int64_t groups = num_groups(d), words = d.rows / 8;
  const tensor_view& qweight = int32_tensor(store, p + ".qweight", {d.cols, words});
  const tensor_view& qzeros = int32_tensor(store, p + ".qzeros", {groups, words});
  d.scales = scales_of(store, p + ".scales", {groups, d.rows}, true);
  auto nibble = [](uint32_t w, int64_t o) {
    return static_cast<uint8_t>((w >> (4 * awq_nibble[o % 8])) & 0xf);
  };
  for (int64_t k = 0; k < d.cols; ++k)
    for (int64_t o = 0; o < d.rows; ++o)
      d.codes[o * d.cols + k] = nibble(word(qweight, k * words + o / 8), o);
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t o = 0; o < d.rows; ++o)
      d.zeros[o * groups + g] = nibble(word(qzeros, g * words + o / 8), o);
}

void decode_pack_quantized(decoded_projection& d, const tensor_store& store,
                           const checkpoint_quantization& q, const std::string& p) {
  const int bits = q.bits, per_word = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  const tensor_view& shape = store.get(p + ".weight_shape");
  std::vector<float> dims(shape.numel());
  if (shape.dtype != tensor_dtype::i32 && shape.dtype != tensor_dtype::i64)
    throw std::runtime_error("tensor '" + p + ".weight_shape' must be int32 or int64");
  convert_to_f32(shape.dtype, shape.data, shape.numel(), dims.data());
  if (dims != std::vector<float>{float(d.rows), float(d.cols)})
    throw std::runtime_error("tensor '" + p + ".weight_shape' does not say [" +
                             std::to_string(d.rows) + ", " + std::to_string(d.cols) + "]");
  const int64_t groups = num_groups(d), words = (d.cols + per_word - 1) / per_word;
  const tensor_view& packed = int32_tensor(store, p + ".weight_packed", {d.rows, words});
  d.scales = scales_of(store, p + ".weight_scale", {d.rows, groups}, false);
  for (int64_t o = 0; o < d.rows; ++o)
    for (int64_t k = 0; k < d.cols; ++k)
      d.codes[o * d.cols + k] = static_cast<uint8_t>(
          (word(packed, o * words + k / per_word) >> (bits * (k % per_word))) & mask);
  std::fill(d.zeros.begin(), d.zeros.end(), static_cast<uint8_t>(1u << (bits - 1)));
}

}  // namespace

bool has_quantized_projection(const tensor_store& store, const checkpoint_quantization& q,
                              const std::string& prefix) {
  if (q.kind == method::gptq || q.kind == method::awq) return store.contains(prefix + ".qweight");
  if (q.kind == method::pack_quantized) return store.contains(prefix + ".weight_packed");
  return false;
}

decoded_projection decode_projection(const tensor_store& store, const checkpoint_quantization& q,
                                     const std::string& prefix, int64_t rows, int64_t cols) {
  decoded_projection d;
  d.rows = rows;
  d.cols = cols;
  set_groups(d, q, prefix);
  d.codes.resize(rows * cols);
  d.zeros.resize(rows * num_groups(d));
  switch (q.kind) {
    case method::gptq:
      decode_gptq(d, store, q, prefix);
      break;
    case method::awq:
      decode_awq(d, store, prefix);
      break;
    case method::pack_quantized:
      decode_pack_quantized(d, store, q, prefix);
      break;
    case method::none:
    case method::fp8:
      throw std::logic_error("decode_projection of a checkpoint without integer codes");
  }
  return d;
}

}  // namespace actorllm

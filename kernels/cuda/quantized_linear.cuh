#pragma once
/// Linear layers whose weights stay on the device in the form they were shipped (W8A16,
/// W4A16 and float8 weights against 32- or 16-bit activations): the codes are read and scaled
/// in registers. Decode shapes (a few rows) run quantized_gemv, which reads every code once
/// per step; prefill shapes dequantize the matrix into a scratch of the storage type and
/// multiply through cuBLAS (dequantize-then-GEMM, as vLLM's exllama path does for large
/// batches). The layout helpers are plain C++, usable where no device is.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

enum class weight_code : uint8_t {
  q8,   ///< int8 codes: w = code * scale
  q4,   ///< 4-bit codes 0..15: w = (code - zero) * scale
  fp8,  ///< float8 E4M3FN codes: w = e4m3(code) * scale
};
const char* weight_code_name(weight_code code);

/// A (out_features, in_features) matrix as codes, row-major by output feature, with a scale
/// (q4: and a zero point) per output feature and group of group_size consecutive code columns.
/// Code column r multiplies input feature input_order[r] (GPTQ's desc_act), or input feature r
/// where input_order is null. q8 and fp8 take a byte per code; q4 packs the columns 2j and
/// 2j + 1 of a row into byte j's low and high nibble. The pointers are the host's or the
/// device's, as the function taking the view says.
struct quantized_matrix {
  weight_code code = weight_code::q8;
  int64_t out_features = 0;
  int64_t in_features = 0;
  int64_t group_size = 0;
  const uint8_t* codes = nullptr;        ///< (out, in) bytes, or for q4 (out, in / 2)
  const float* scales = nullptr;         ///< (out, num_groups)
  const uint8_t* zeros = nullptr;        ///< q4: (out, num_groups); null otherwise
  const int32_t* input_order = nullptr;  ///< (in), or null

  bool empty() const { return codes == nullptr; }
  int64_t num_groups() const { return group_size > 0 ? in_features / group_size : 0; }
  int64_t code_bytes() const {
    return code == weight_code::q4 ? out_features * in_features / 2 : out_features * in_features;
  }
};

/// Code columns one kernel thread decodes at a time: in_features and group_size must be
/// multiples of it.
constexpr int64_t quantized_column_step = 16;

/// Why the kernels cannot run `w` (a size that is not a multiple of quantized_column_step, a
/// group that does not tile the row, a missing scale or zero point), or "" when they can.
std::string quantized_layout_error(const quantized_matrix& w);

/// E4M3FN's value of an fp8 code (no infinities; 0x7f and 0xff are NaN).
inline float e4m3_value(uint8_t code) {
  const int exponent = (code >> 3) & 0xf, mantissa = code & 7;
  float magnitude;
  if ((code & 0x7f) == 0x7f)
    magnitude = NAN;
  else if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -9);  // m / 8 * 2^-6
  else
    magnitude = std::ldexp(1.0f + static_cast<float>(mantissa) / 8.0f, exponent - 7);
  return (code & 0x80) ? -magnitude : magnitude;
}

/// The weight at output feature o and code column r, read from host pointers, as the kernels
/// compute it in float32: the reference they are tested against.
inline float dequantized_weight(const quantized_matrix& w, int64_t o, int64_t r) {
  const int64_t group = o * w.num_groups() + r / w.group_size;
  switch (w.code) {
    case weight_code::q8:
      return static_cast<float>(static_cast<int8_t>(w.codes[o * w.in_features + r])) *
             w.scales[group];
    case weight_code::fp8:
      return e4m3_value(w.codes[o * w.in_features + r]) * w.scales[group];
    case weight_code::q4: {
      const uint8_t byte = w.codes[(o * w.in_features + r) / 2];
      const int code = r % 2 == 0 ? byte & 0xf : byte >> 4;
      return static_cast<float>(code - static_cast<int>(w.zeros[group])) * w.scales[group];
    }
  }
  return 0.0f;
}

/// Rows up to which a linear layer on quantized weights runs quantized_gemv; past it, the
/// matrix is dequantized and multiplied by cuBLAS. A first guess, to be tuned on a device:
/// the GEMV reads the codes once per eight rows.
constexpr int64_t quantized_gemv_max_rows = 16;

/// A quantized matrix uploaded to the current device; freed with this.
class device_quantized_matrix {
 public:
  /// Copies `host` (host pointers; quantized_layout_error must be "") to the device.
  /// Throws std::invalid_argument on a layout the kernels cannot run.
  explicit device_quantized_matrix(const quantized_matrix& host);
  /// The same matrix with device pointers.
  const quantized_matrix& view() const { return view_; }
  /// Device bytes of the codes, scales, zero points and column order.
  size_t bytes() const { return codes_.size() + scales_.size() + zeros_.size() + order_.size(); }

 private:
  device_buffer codes_, scales_, zeros_, order_;
  quantized_matrix view_;
};

/// y(n, out_features) = x(n, in_features) @ w^T + bias for n <= quantized_gemv_max_rows (more
/// runs in chunks), with x already in w's code column order (gather_columns), and x, bias and
/// y of type t; w on the device, float32 accumulation. Each warp computes one output feature
/// of up to eight rows, reading its codes once, 16 to a thread.
void quantized_gemv(const void* x, const quantized_matrix& w, const void* bias, int64_t n, void* y,
                    dtype t, cudaStream_t stream);

/// out(out_features, in_features) = w's weights in its code column order, as type t (the
/// float32 weight rounded once).
void dequantize(const quantized_matrix& w, void* out, dtype t, cudaStream_t stream);

/// out(n, in)[i][r] = x(n, in)[i][order[r]], type t: a row batch put in the code column order
/// of a matrix quantized with desc_act.
void gather_columns(const void* x, const int32_t* order, int64_t n, int64_t in, void* out, dtype t,
                    cudaStream_t stream);

}  // namespace actorllm::cuda

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/quantized_linear.cuh"

namespace actorllm::cuda {

const char* weight_code_name(weight_code code) {
  switch (code) {
    case weight_code::q8:
      return "int8";
    case weight_code::q4:
      return "int4";
    case weight_code::fp8:
      return "fp8 e4m3";
  }
  return "?";
}

std::string quantized_layout_error(const quantized_matrix& w) {
  const std::string step = std::to_string(quantized_column_step);
  if (w.out_features <= 0 || w.in_features <= 0) return "an empty matrix";
  if (w.in_features % quantized_column_step != 0)
    return "in_features " + std::to_string(w.in_features) + " is not a multiple of " + step;
  if (w.group_size <= 0 || w.group_size % quantized_column_step != 0 ||
      w.in_features % w.group_size != 0)
    return "group size " + std::to_string(w.group_size) + " is not a multiple of " + step +
           " that divides in_features " + std::to_string(w.in_features);
  if (!w.codes || !w.scales) return "codes or scales missing";
  if ((w.code == weight_code::q4) != (w.zeros != nullptr))
    return "zero points come with 4-bit codes, and only with them";
  return "";
}

device_quantized_matrix::device_quantized_matrix(const quantized_matrix& host) : view_(host) {
  if (const std::string error = quantized_layout_error(host); !error.empty())
    throw std::invalid_argument("device_quantized_matrix: " + error);
  const auto copy = [](device_buffer& dst, const void* src, size_t bytes) {
    dst = device_buffer(bytes);
    dst.upload(src, bytes);
    return dst.get();
  };
  const size_t groups = static_cast<size_t>(host.out_features * host.num_groups());
  view_.codes =
      static_cast<const uint8_t*>(copy(codes_, host.codes, static_cast<size_t>(host.code_bytes())));
  view_.scales = static_cast<const float*>(copy(scales_, host.scales, groups * sizeof(float)));
  if (host.zeros) view_.zeros = static_cast<const uint8_t*>(copy(zeros_, host.zeros, groups));
  if (host.input_order)
    view_.input_order = static_cast<const int32_t*>(
        copy(order_, host.input_order, static_cast<size_t>(host.in_features) * sizeof(int32_t)));
}

namespace {

constexpr int warps_per_block = 8;
constexpr int max_chunk_rows = 8;

/// Columns [k0, k0 + 16) of output feature o, unscaled: code (q8), code - zero (q4), or the
/// fp8 value read through float16, 2^8 smaller (exact; scale_factor makes up for it).
template <weight_code C>
__device__ __forceinline__ void decode16(const quantized_matrix& w, int64_t o, int64_t k0,
                                         int64_t group, float (&v)[16]) {
  if constexpr (C == weight_code::q4) {
    const uint2 raw = *reinterpret_cast<const uint2*>(w.codes + (o * w.in_features + k0) / 2);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&raw);
    const float zero = static_cast<float>(w.zeros[group]);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      v[2 * j] = static_cast<float>(bytes[j] & 0xf) - zero;
      v[2 * j + 1] = static_cast<float>(bytes[j] >> 4) - zero;
    }
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(w.codes + o * w.in_features + k0);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&raw);
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      if constexpr (C == weight_code::q8) {
        v[j] = static_cast<float>(static_cast<int8_t>(bytes[j]));
      } else {
        // E4M3's sign, exponent and mantissa land on float16's with the exponent bias 8
        // short: the half reads 2^-8 of the fp8 value, subnormals included.
        const auto half_bits =
            static_cast<unsigned short>(((bytes[j] & 0x80u) << 8) | ((bytes[j] & 0x7fu) << 7));
        v[j] = __half2float(__ushort_as_half(half_bits));
      }
    }
  }
}

/// What a decoded value is multiplied by besides its group's scale.
template <weight_code C>
__device__ __forceinline__ constexpr float scale_factor() {
  return C == weight_code::fp8 ? 256.0f : 1.0f;
}

// One warp per output feature, R rows (only `rows` of them live) at once: each lane decodes
// 16 codes per step, 512 consecutive columns a warp, and dots them with every row.
template <typename T, weight_code C, int R>
__global__ void __launch_bounds__(warps_per_block * 32)
    quantized_gemv_kernel(const T* __restrict__ x, int rows, quantized_matrix w,
                          const T* __restrict__ bias, T* __restrict__ y) {
  const int lane = threadIdx.x & 31;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * warps_per_block + (threadIdx.x >> 5);
  if (o >= w.out_features) return;  // the whole warp together
  const int64_t in = w.in_features;
  float acc[R];
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = 0.0f;
  for (int64_t k0 = lane * quantized_column_step; k0 < in; k0 += 32 * quantized_column_step) {
    const int64_t group = o * (w.in_features / w.group_size) + k0 / w.group_size;
    float v[16];
    decode16<C>(w, o, k0, group, v);
    const float scale = w.scales[group] * scale_factor<C>();
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (r >= rows) break;
      float lo[8], hi[8];
      load8(x + r * in + k0, lo);
      load8(x + r * in + k0 + 8, hi);
      float dot = 0.0f;
#pragma unroll
      for (int j = 0; j < 8; ++j) dot += v[j] * lo[j] + v[j + 8] * hi[j];
      acc[r] += dot * scale;
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float sum = acc[r];
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0 && r < rows)
      y[r * w.out_features + o] = from_float<T>(sum + (bias ? to_float(bias[o]) : 0.0f));
  }
}

// One thread per 16 code columns of a row.
template <typename T, weight_code C>
__global__ void dequantize_kernel(quantized_matrix w, T* __restrict__ out) {
  const int64_t steps_per_row = w.in_features / quantized_column_step;
  const int64_t total = w.out_features * steps_per_row;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t o = i / steps_per_row, k0 = (i % steps_per_row) * quantized_column_step;
    const int64_t group = o * (w.in_features / w.group_size) + k0 / w.group_size;
    float v[16];
    decode16<C>(w, o, k0, group, v);
    const float scale = w.scales[group];
    float lo[8], hi[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      // As dequantized_weight: the fp8 value first (exact), then one product with the scale.
      lo[j] = v[j] * scale_factor<C>() * scale;
      hi[j] = v[j + 8] * scale_factor<C>() * scale;
    }
    T* dst = out + o * w.in_features + k0;
    store8(dst, lo);
    store8(dst + 8, hi);
  }
}

template <typename E>
__global__ void gather_columns_kernel(const E* __restrict__ x, const int32_t* __restrict__ order,
                                      int64_t n, int64_t in, E* __restrict__ out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n * in;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / in, column = i % in;
    out[i] = x[row * in + order[column]];
  }
}

unsigned grid_for(int64_t work, int threads) {
  return static_cast<unsigned>(std::min<int64_t>((work + threads - 1) / threads, 65535 * 8));
}

template <typename T, weight_code C>
void launch_gemv(const T* x, const quantized_matrix& w, const T* bias, int64_t n, T* y,
                 cudaStream_t stream) {
  const auto blocks =
      static_cast<unsigned>((w.out_features + warps_per_block - 1) / warps_per_block);
  constexpr int threads = warps_per_block * 32;
  for (int64_t first = 0; first < n; first += max_chunk_rows) {
    const int rows = static_cast<int>(std::min<int64_t>(max_chunk_rows, n - first));
    const T* xs = x + first * w.in_features;
    T* ys = y + first * w.out_features;
    if (rows == 1)
      quantized_gemv_kernel<T, C, 1><<<blocks, threads, 0, stream>>>(xs, rows, w, bias, ys);
    else if (rows == 2)
      quantized_gemv_kernel<T, C, 2><<<blocks, threads, 0, stream>>>(xs, rows, w, bias, ys);
    else if (rows <= 4)
      quantized_gemv_kernel<T, C, 4><<<blocks, threads, 0, stream>>>(xs, rows, w, bias, ys);
    else
      quantized_gemv_kernel<T, C, 8><<<blocks, threads, 0, stream>>>(xs, rows, w, bias, ys);
    CUDA_CHECK_LAUNCH();
  }
}

template <typename T>
void dispatch_gemv(const T* x, const quantized_matrix& w, const T* bias, int64_t n, T* y,
                   cudaStream_t stream) {
  switch (w.code) {
    case weight_code::q8:
      return launch_gemv<T, weight_code::q8>(x, w, bias, n, y, stream);
    case weight_code::q4:
      return launch_gemv<T, weight_code::q4>(x, w, bias, n, y, stream);
    case weight_code::fp8:
      return launch_gemv<T, weight_code::fp8>(x, w, bias, n, y, stream);
  }
}

template <typename T>
void dispatch_dequantize(const quantized_matrix& w, T* out, cudaStream_t stream) {
  constexpr int threads = 256;
  const unsigned blocks =
      grid_for(w.out_features * (w.in_features / quantized_column_step), threads);
  switch (w.code) {
    case weight_code::q8:
      dequantize_kernel<T, weight_code::q8><<<blocks, threads, 0, stream>>>(w, out);
      break;
    case weight_code::q4:
      dequantize_kernel<T, weight_code::q4><<<blocks, threads, 0, stream>>>(w, out);
      break;
    case weight_code::fp8:
      dequantize_kernel<T, weight_code::fp8><<<blocks, threads, 0, stream>>>(w, out);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

void require_runnable(const quantized_matrix& w, const char* op) {
  if (const std::string error = quantized_layout_error(w); !error.empty())
    throw std::invalid_argument(std::string(op) + ": " + error);
}

}  // namespace

void quantized_gemv(const void* x, const quantized_matrix& w, const void* bias, int64_t n, void* y,
                    dtype t, cudaStream_t stream) {
  require_runnable(w, "quantized_gemv");
  if (n <= 0) return;
  ACTORLLM_DISPATCH_DTYPE(t, T,
                          dispatch_gemv<T>(static_cast<const T*>(x), w, static_cast<const T*>(bias),
                                           n, static_cast<T*>(y), stream));
}

void dequantize(const quantized_matrix& w, void* out, dtype t, cudaStream_t stream) {
  require_runnable(w, "dequantize");
  ACTORLLM_DISPATCH_DTYPE(t, T, dispatch_dequantize<T>(w, static_cast<T*>(out), stream));
}

void gather_columns(const void* x, const int32_t* order, int64_t n, int64_t in, void* out, dtype t,
                    cudaStream_t stream) {
  if (n <= 0 || in <= 0) return;
  constexpr int threads = 256;
  const unsigned blocks = grid_for(n * in, threads);
  if (dtype_size(t) == 4)
    gather_columns_kernel<uint32_t><<<blocks, threads, 0, stream>>>(
        static_cast<const uint32_t*>(x), order, n, in, static_cast<uint32_t*>(out));
  else
    gather_columns_kernel<uint16_t><<<blocks, threads, 0, stream>>>(
        static_cast<const uint16_t*>(x), order, n, in, static_cast<uint16_t*>(out));
  CUDA_CHECK_LAUNCH();
}

}  // namespace actorllm::cuda

#pragma once
/// Storage types of the CUDA ops. Tensors are stored as fp32, fp16 or bf16; every op
/// accumulates in fp32. The device helpers below are visible to nvcc only.
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace actorllm::cuda {

enum class dtype { f32, f16, bf16 };

/// Bytes per element.
inline int64_t dtype_size(dtype t) {
  return t == dtype::f32 ? 4 : 2;
}

/// What a KV cache's elements are: the activations' type, or float8 E4M3FN bytes (vLLM's
/// --kv-cache-dtype fp8) read back as floats. The fp8 cache has no scales (vLLM's default
/// k_scale = v_scale = 1): values beyond ±448 saturate, as the CPU cache's do.
enum class kv_format { activations, fp8_e4m3 };

/// Bytes of one cache element of `format` beside activations of type t.
inline int64_t kv_element_size(kv_format format, dtype t) {
  return format == kv_format::fp8_e4m3 ? 1 : dtype_size(t);
}

inline const char* dtype_name(dtype t) {
  switch (t) {
    case dtype::f32:
      return "f32";
    case dtype::f16:
      return "f16";
    case dtype::bf16:
      return "bf16";
  }
  return "?";
}

}  // namespace actorllm::cuda

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace actorllm::cuda {

template <typename T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ float to_float<__half>(__half x) {
  return __half2float(x);
}
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

/// E4M3FN to float is exact (through half, which holds every E4M3 value).
template <>
__device__ __forceinline__ float to_float<__nv_fp8_e4m3>(__nv_fp8_e4m3 x) {
  return static_cast<float>(x);
}

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}
/// Rounded to nearest even; beyond ±448 saturates to ±448 and NaN stays NaN, as
/// cpu::float8_e4m3 encodes.
template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float x) {
  __nv_fp8_e4m3 r;
  r.__x = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
  return r;
}

/// x as the cache element C: unchanged where C is x's own type.
template <typename C, typename T>
__device__ __forceinline__ C to_cache(T x) {
  if constexpr (std::is_same_v<C, T>)
    return x;
  else
    return from_float<C>(to_float(x));
}

/// v[0..8) = p[0..8) as floats. p must be aligned to 8 elements (8, 16 or 32 bytes).
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&v)[8]) {
  if constexpr (sizeof(T) == 1) {
    const uint2 raw = *reinterpret_cast<const uint2*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = to_float(e[i]);
  } else if constexpr (sizeof(T) == 4) {
    const float4 a = reinterpret_cast<const float4*>(p)[0];
    const float4 b = reinterpret_cast<const float4*>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
    v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) v[i] = to_float(e[i]);
  }
}

/// p[0..8) = v[0..8) rounded to T. Same alignment as load8.
template <typename T>
__device__ __forceinline__ void store8(T* p, const float (&v)[8]) {
  if constexpr (sizeof(T) == 1) {
    uint2 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = from_float<T>(v[i]);
    *reinterpret_cast<uint2*>(p) = raw;
  } else if constexpr (sizeof(T) == 4) {
    reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
  } else {
    uint4 raw;
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int i = 0; i < 8; ++i) e[i] = from_float<T>(v[i]);
    *reinterpret_cast<uint4*>(p) = raw;
  }
}

/// Sum over the whole block; every thread gets the result. `scratch` holds 32 floats.
/// All threads of the block must call it (it synchronizes twice).
__device__ __forceinline__ float block_sum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int num_warps = (blockDim.x + 31) >> 5;
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? scratch[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// Maximum over the whole block; same contract as block_sum.
__device__ __forceinline__ float block_max(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int num_warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < num_warps ? scratch[lane] : -INFINITY;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace actorllm::cuda

/// Runs the statements with T bound to the storage type of `t`.
#define ACTORLLM_DISPATCH_DTYPE(t, T, ...) \
  switch (t) {                             \
    case ::actorllm::cuda::dtype::f32: {   \
      using T = float;                     \
      __VA_ARGS__;                         \
    } break;                               \
    case ::actorllm::cuda::dtype::f16: {   \
      using T = __half;                    \
      __VA_ARGS__;                         \
    } break;                               \
    case ::actorllm::cuda::dtype::bf16: {  \
      using T = __nv_bfloat16;             \
      __VA_ARGS__;                         \
    } break;                               \
  }

/// Runs the statements with T bound to the storage type of `t` and C to the cache element of
/// `format` (T itself, or __nv_fp8_e4m3).
#define ACTORLLM_DISPATCH_CACHE(t, format, T, C, ...)          \
  ACTORLLM_DISPATCH_DTYPE(                                     \
      t, T,                                                    \
      if ((format) == ::actorllm::cuda::kv_format::fp8_e4m3) { \
        using C = __nv_fp8_e4m3;                               \
        __VA_ARGS__;                                           \
      } else {                                                 \
        using C = T;                                           \
        __VA_ARGS__;                                           \
      })
#endif

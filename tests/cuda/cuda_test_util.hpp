#pragma once
/// Helpers for the CUDA kernel tests: skip without a device, move float data to and from the
/// device in any storage type, poison outputs, compare with the CPU reference.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/float8.hpp"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"

/// Skips the test where no CUDA device can be used (no driver, no GPU).
#define REQUIRE_CUDA_DEVICE()                                                         \
  do {                                                                                \
    if (::actorllm::cuda::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

namespace actorllm::cuda::testing {

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

/// Host bytes of `values` stored as t.
inline std::vector<uint8_t> to_storage(const std::vector<float>& values, dtype t) {
  std::vector<uint8_t> bytes(values.size() * dtype_size(t));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == dtype::f32) {
      std::memcpy(bytes.data() + 4 * i, &values[i], 4);
    } else if (t == dtype::f16) {
      const __half h = __float2half_rn(values[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    } else {
      const __nv_bfloat16 b = __float2bfloat16_rn(values[i]);
      std::memcpy(bytes.data() + 2 * i, &b, 2);
    }
  }
  return bytes;
}

/// Floats of host bytes stored as t.
inline std::vector<float> from_storage(const std::vector<uint8_t>& bytes, dtype t) {
  const size_t n = bytes.size() / dtype_size(t);
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) {
    if (t == dtype::f32) {
      std::memcpy(&values[i], bytes.data() + 4 * i, 4);
    } else if (t == dtype::f16) {
      __half h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      values[i] = __half2float(h);
    } else {
      __nv_bfloat16 b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      values[i] = __bfloat162float(b);
    }
  }
  return values;
}

/// Rounds values to what t can hold, so that the CPU reference sees the device's inputs.
inline void round_to(std::vector<float>& values, dtype t) {
  if (t != dtype::f32) values = from_storage(to_storage(values, t), t);
}

/// E4M3 bytes of `values`, as the CPU's float8 cache encodes them.
inline std::vector<uint8_t> to_e4m3(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size());
  for (size_t i = 0; i < values.size(); ++i) bytes[i] = cpu::float8_e4m3::encode(values[i]);
  return bytes;
}

/// `values` rounded to E4M3 and read back.
inline void round_to_e4m3(std::vector<float>& values) {
  for (auto& v : values) v = cpu::float8_e4m3::decode(cpu::float8_e4m3::encode(v));
}

/// A device tensor of `numel` elements of type t.
struct device_tensor {
  device_tensor(size_t numel, dtype type) : t(type), n(numel), buf(numel * dtype_size(type)) {}
  device_tensor(const std::vector<float>& values, dtype type) : device_tensor(values.size(), type) {
    upload(values);
  }
  void upload(const std::vector<float>& values) {
    const auto bytes = to_storage(values, t);
    buf.upload(bytes.data(), bytes.size());
  }
  std::vector<float> download() const {
    std::vector<uint8_t> bytes(n * dtype_size(t));
    buf.download(bytes.data(), bytes.size());
    return from_storage(bytes, t);
  }
  /// All bytes 0xFF: NaN in fp32, fp16 and bf16, so an element never written fails.
  void poison() { CUDA_CHECK(cudaMemset(buf.get(), 0xFF, buf.size())); }
  void* get() const { return buf.get(); }

  dtype t;
  size_t n;
  device_buffer buf;
};

/// A device copy of plain host data (ids, slots, tables).
template <typename T>
device_buffer upload(const std::vector<T>& values) {
  device_buffer buf(values.size() * sizeof(T));
  buf.upload(values.data(), values.size() * sizeof(T));
  return buf;
}

template <typename T>
std::vector<T> download(const device_buffer& buf, size_t n) {
  std::vector<T> values(n);
  buf.download(values.data(), n * sizeof(T));
  return values;
}

/// Waits for the device and turns an asynchronous fault into a test failure.
inline void sync_device() {
  CUDA_CHECK(cudaDeviceSynchronize());
}

struct tolerance {
  float atol;
  float rtol;
};

/// fp32 near 1e-5 relative; fp16 and bf16 at a few units of their last place.
inline tolerance default_tolerance(dtype t) {
  switch (t) {
    case dtype::f32:
      return {1e-5f, 1e-5f};
    case dtype::f16:
      return {4e-3f, 4e-3f};
    case dtype::bf16:
      return {2e-2f, 2e-2f};
  }
  return {0, 0};
}

/// Every element finite and within atol + rtol * |expected|; reports the first few misses.
inline ::testing::AssertionResult all_close(const std::vector<float>& actual,
                                            const std::vector<float>& expected, tolerance tol) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << "size " << actual.size() << " != " << expected.size();
  size_t bad = 0;
  std::string first;
  double worst = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double err = std::fabs(double(actual[i]) - double(expected[i]));
    const double limit = tol.atol + tol.rtol * std::fabs(double(expected[i]));
    if (!std::isfinite(actual[i]) || !(err <= limit)) {
      if (bad < 5)
        first += " [" + std::to_string(i) + "] " + std::to_string(actual[i]) + " vs " +
                 std::to_string(expected[i]) + ";";
      ++bad;
    }
    if (std::isfinite(err)) worst = std::max(worst, err);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << actual.size()
                                       << " elements off (max abs err " << worst << "):" << first;
}

/// The largest |actual - expected| over the RMS of `expected`: an output of zeros (or one
/// that is right only where values are small) scores about 1 or more.
inline double rms_relative_error(const std::vector<float>& actual,
                                 const std::vector<float>& expected) {
  double sq = 0, worst = 0;
  for (size_t i = 0; i < expected.size() && i < actual.size(); ++i) {
    sq += double(expected[i]) * expected[i];
    worst = std::max(worst, std::fabs(double(actual[i]) - expected[i]));
  }
  if (actual.size() != expected.size()) return INFINITY;
  return worst / std::sqrt(sq / double(std::max<size_t>(1, expected.size())));
}

inline const std::vector<dtype>& all_dtypes() {
  static const std::vector<dtype> types{dtype::f32, dtype::f16, dtype::bf16};
  return types;
}

}  // namespace actorllm::cuda::testing

#pragma once
// What a cuda::host_tensor holds, read on the host: its values as float32 (widened exactly
// from bf16) and, for a 16-bit tensor, its raw bits; and a cuda_weight_sink that records what
// a model sends the device, by name, with no device. Test support; needs a build with CUDA.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "actors/gpu_worker/cuda_weights.hpp"
#include "kernels/cuda/weight_store.cuh"

namespace actorllm::testing {

/// The n elements of `t` as stored (written now where the tensor writes on demand).
inline std::vector<char> host_bytes(const cuda::host_tensor& t, int64_t n) {
  std::vector<char> bytes(static_cast<size_t>(n * cuda::dtype_size(t.type)));
  if (t.data)
    std::memcpy(bytes.data(), t.data, bytes.size());
  else if (t.write)
    t.write(bytes.data());
  else
    bytes.clear();
  return bytes;
}

/// The n values of `t` as float32; empty for an empty tensor. Only f32 and bf16 are read.
inline std::vector<float> host_values(const cuda::host_tensor& t, int64_t n) {
  const std::vector<char> bytes = host_bytes(t, n);
  if (bytes.empty()) return {};
  std::vector<float> values(static_cast<size_t>(n));
  if (t.type == cuda::dtype::f32) {
    std::memcpy(values.data(), bytes.data(), bytes.size());
  } else {
    EXPECT_EQ(t.type, cuda::dtype::bf16) << "host_values reads f32 and bf16 only";
    for (int64_t i = 0; i < n; ++i) {
      uint16_t half;
      std::memcpy(&half, bytes.data() + 2 * i, 2);
      const uint32_t bits = static_cast<uint32_t>(half) << 16;
      std::memcpy(&values[i], &bits, 4);
    }
  }
  return values;
}

/// What make_cuda_weight_table sends the device, kept on the host by name (the tensors point
/// into the model, which must outlive the record).
class recorded_weights final : public cuda_weight_sink {
 public:
  struct dense {
    cuda::host_tensor values;
    int64_t n = 0;
    bool keep_fp32 = false;
  };
  const void* store(const std::string& name, const cuda::host_tensor& values, int64_t n,
                    bool keep_fp32) override {
    EXPECT_FALSE(dense_.count(name) || quantized_.count(name)) << name << " stored twice";
    return &(dense_[name] = {values, n, keep_fp32});
  }
  cuda::quantized_matrix store_quantized(const std::string& name,
                                         const quantized_host_matrix& matrix) override {
    EXPECT_FALSE(dense_.count(name) || quantized_.count(name)) << name << " stored twice";
    return quantized_.insert_or_assign(name, matrix).first->second.view();
  }
  /// The dense tensor stored as `name`, or null.
  const dense* find(const std::string& name) const {
    const auto it = dense_.find(name);
    return it == dense_.end() ? nullptr : &it->second;
  }
  /// The quantized matrix stored as `name`, or null.
  const quantized_host_matrix* quantized(const std::string& name) const {
    const auto it = quantized_.find(name);
    return it == quantized_.end() ? nullptr : &it->second;
  }
  bool empty_of_quantized() const { return quantized_.empty(); }

 private:
  std::map<std::string, dense> dense_;
  std::map<std::string, quantized_host_matrix> quantized_;
};

}  // namespace actorllm::testing

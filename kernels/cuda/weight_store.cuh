#pragma once
/// Device-side weights of one worker: named tensors in the worker's storage type, uploaded
/// once from the host's float32 copies (converted on the device), freed together.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

class weight_store {
 public:
  /// `storage`: the type of every matrix and vector; tensors marked fp32 on upload keep fp32
  /// (the rotary table).
  explicit weight_store(dtype storage) : storage_(storage) {}

  /// Uploads host float32 values as `name` in the store's type (or fp32 with keep_fp32), and
  /// returns the device pointer. Waits for the copy, so `values` may go right after.
  /// An existing tensor of that name is replaced.
  void* upload(const std::string& name, const float* values, int64_t n, bool keep_fp32 = false);
  void* upload(const std::string& name, const std::vector<float>& values, bool keep_fp32 = false) {
    return upload(name, values.data(), static_cast<int64_t>(values.size()), keep_fp32);
  }

  /// The device pointer of `name`; throws std::out_of_range when absent.
  void* get(const std::string& name) const;
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  dtype type_of(const std::string& name) const;
  int64_t numel(const std::string& name) const;

  dtype storage() const { return storage_; }
  /// Device bytes held by all tensors.
  size_t bytes() const { return bytes_; }

 private:
  struct tensor {
    device_buffer buf;
    dtype type;
    int64_t numel;
  };
  dtype storage_;
  std::map<std::string, tensor> tensors_;
  size_t bytes_ = 0;
};

}  // namespace actorllm::cuda

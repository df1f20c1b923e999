#pragma once
/// Device-side weights of one worker: named tensors in the worker's storage type, uploaded
/// once from the host in the host's own type (float32, float16 or bfloat16; converted on the
/// device where the types differ), freed together.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"

namespace actorllm::cuda {

/// A host tensor to upload: n values of `type` at `data`, or, where data is null, written by
/// `write` into a host buffer of n values of `type` just before the upload. The second form
/// lets a loader unpack its own layout one tensor at a time, so no whole-model host copy exists
/// beside the model.
struct host_tensor {
  const void* data = nullptr;
  dtype type = dtype::f32;
  std::function<void(void* out)> write;

  host_tensor() = default;
  host_tensor(const float* values) : data(values) {}  // NOLINT: a float32 array converts
  host_tensor(const void* values, dtype t) : data(values), type(t) {}
  host_tensor(dtype t, std::function<void(void* out)> writer) : type(t), write(std::move(writer)) {}
  bool empty() const { return data == nullptr && !write; }
};

class weight_store {
 public:
  /// `storage`: the type of every matrix and vector; tensors marked fp32 on upload keep fp32
  /// (the rotary table).
  explicit weight_store(dtype storage) : storage_(storage) {}

  /// Uploads n host values as `name` in the store's type (or fp32 with keep_fp32), and returns
  /// the device pointer. Values of the store's type are copied as they are; others are copied,
  /// then converted on the device. Waits for the copy, so `values` may go right after.
  /// An existing tensor of that name is replaced. Throws std::invalid_argument on no values.
  void* upload(const std::string& name, const host_tensor& values, int64_t n,
               bool keep_fp32 = false);
  void* upload(const std::string& name, const float* values, int64_t n, bool keep_fp32 = false) {
    return upload(name, host_tensor(values), n, keep_fp32);
  }
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

#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/weight_store.cuh"

namespace actorllm::cuda {

void* weight_store::upload(const std::string& name, const float* values, int64_t n,
                           bool keep_fp32) {
  const dtype type = keep_fp32 ? dtype::f32 : storage_;
  if (auto it = tensors_.find(name); it != tensors_.end()) {
    bytes_ -= it->second.buf.size();
    tensors_.erase(it);
  }
  tensor t{device_buffer(static_cast<size_t>(n) * dtype_size(type)), type, n};
  if (type == dtype::f32) {
    t.buf.upload(values, static_cast<size_t>(n) * sizeof(float));
  } else {
    device_buffer staging(static_cast<size_t>(n) * sizeof(float));
    staging.upload(values, staging.size());
    convert(staging.get(), dtype::f32, t.buf.get(), type, n, nullptr);
    CUDA_CHECK(cudaStreamSynchronize(nullptr));  // staging is freed on return
  }
  bytes_ += t.buf.size();
  void* ptr = t.buf.get();
  tensors_.emplace(name, std::move(t));
  return ptr;
}

void* weight_store::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::out_of_range("weight_store: no tensor " + name);
  return it->second.buf.get();
}

dtype weight_store::type_of(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::out_of_range("weight_store: no tensor " + name);
  return it->second.type;
}

int64_t weight_store::numel(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw std::out_of_range("weight_store: no tensor " + name);
  return it->second.numel;
}

}  // namespace actorllm::cuda

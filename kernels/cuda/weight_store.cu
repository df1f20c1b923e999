#include <stdexcept>
#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/convert.cuh"
#include "kernels/cuda/weight_store.cuh"

namespace actorllm::cuda {

void* weight_store::upload(const std::string& name, const host_tensor& values, int64_t n,
                           bool keep_fp32) {
  if (values.empty()) throw std::invalid_argument("weight_store: no values for " + name);
  const dtype type = keep_fp32 ? dtype::f32 : storage_;
  if (auto it = tensors_.find(name); it != tensors_.end()) {
    bytes_ -= it->second.buf.size();
    tensors_.erase(it);
  }
  const size_t source_bytes = static_cast<size_t>(n) * dtype_size(values.type);
  std::vector<char> written;  // only where the loader writes the values now
  const void* host = values.data;
  if (!host) {
    written.resize(source_bytes);
    values.write(written.data());
    host = written.data();
  }
  tensor t{device_buffer(static_cast<size_t>(n) * dtype_size(type)), type, n};
  if (values.type == type) {
    t.buf.upload(host, source_bytes);
  } else {
    device_buffer staging(source_bytes);
    staging.upload(host, source_bytes);
    convert(staging.get(), values.type, t.buf.get(), type, n, nullptr);
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

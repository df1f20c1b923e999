#include <atomic>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/device.cuh"

namespace actorllm::cuda {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear it, so the next checked call does not report it
    return 0;
  }
  return count;
}

memory_info device_memory_info() {
  memory_info info;
  CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
  return info;
}

std::string device_description() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.multiProcessorCount) + " SMs, " +
         std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
}

int multiprocessor_count() {
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached] = {};  // 0: not asked yet
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (device >= 0 && device < kCached)
    if (const int known = cache[device].load(std::memory_order_relaxed); known > 0) return known;
  int sms = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  if (device >= 0 && device < kCached) cache[device].store(sms, std::memory_order_relaxed);
  return sms;
}

int compute_capability() {
  constexpr int kCached = 64;
  static std::atomic<int> cache[kCached] = {};  // 0: not asked yet
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  if (device >= 0 && device < kCached)
    if (const int known = cache[device].load(std::memory_order_relaxed); known > 0) return known;
  int major = 0, minor = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  const int capability = major * 10 + minor;
  if (device >= 0 && device < kCached) cache[device].store(capability, std::memory_order_relaxed);
  return capability;
}

device_buffer::device_buffer(size_t bytes) : bytes_(bytes) {
  if (bytes) CUDA_CHECK(cudaMalloc(&ptr_, bytes));
}

device_buffer::~device_buffer() {
  if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a sticky error surfaces elsewhere
}

void device_buffer::upload(const void* src, size_t bytes) {
  if (bytes > bytes_) throw std::out_of_range("device_buffer::upload past the end");
  if (bytes) CUDA_CHECK(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice));
}

void device_buffer::download(void* dst, size_t bytes) const {
  if (bytes > bytes_) throw std::out_of_range("device_buffer::download past the end");
  if (bytes) CUDA_CHECK(cudaMemcpy(dst, ptr_, bytes, cudaMemcpyDeviceToHost));
}

pinned_buffer::pinned_buffer(size_t bytes) : bytes_(bytes) {
  if (bytes) CUDA_CHECK(cudaMallocHost(&ptr_, bytes));
}

pinned_buffer::~pinned_buffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

device_stream::device_stream() {
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

device_stream::~device_stream() {
  if (stream_) cudaStreamDestroy(stream_);  // no throw from a destructor
}

device_event::device_event() {
  CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
}

device_event::~device_event() {
  if (event_) cudaEventDestroy(event_);
}

}  // namespace actorllm::cuda

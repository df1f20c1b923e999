#include <atomic>
#include <cstring>
#include <stdexcept>

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

namespace {

/// `ask()` for the current device, asked once per device and remembered (device ids below 64;
/// others are asked every time). `ask` returns a positive value.
template <typename Ask>
int remembered_per_device(std::atomic<int> (&cache)[64], Ask ask) {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const bool cached = device >= 0 && device < 64;
  if (cached)
    if (const int known = cache[device].load(std::memory_order_relaxed); known > 0) return known;
  const int value = ask(device);
  if (cached) cache[device].store(value, std::memory_order_relaxed);
  return value;
}

}  // namespace

int multiprocessor_count() {
  static std::atomic<int> cache[64] = {};  // 0: not asked yet
  return remembered_per_device(cache, [](int device) {
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
  });
}

int compute_capability() {
  static std::atomic<int> cache[64] = {};
  return remembered_per_device(cache, [](int device) {
    int major = 0, minor = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    return major * 10 + minor;
  });
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

void stage_host_arrays(const host_array* arrays, size_t count, pinned_buffer& staging,
                       device_buffer& device, cudaStream_t stream, const char** at) {
  // A step sends a handful of arrays: their offsets need no allocation.
  constexpr size_t max_arrays = 16;
  if (count > max_arrays) throw std::invalid_argument("stage_host_arrays: more than 16 arrays");
  size_t offsets[max_arrays];
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    offsets[i] = (total + 15) / 16 * 16;  // every array 16-byte aligned on the device
    total = offsets[i] + arrays[i].bytes;
  }
  if (staging.size() < total) staging = pinned_buffer(total);
  if (device.size() < total) device = device_buffer(total);
  auto* host = staging.as<char>();
  for (size_t i = 0; i < count; ++i)
    if (arrays[i].bytes > 0) std::memcpy(host + offsets[i], arrays[i].src, arrays[i].bytes);
  if (total > 0)
    CUDA_CHECK(cudaMemcpyAsync(device.get(), host, total, cudaMemcpyHostToDevice, stream));
  for (size_t i = 0; i < count; ++i) at[i] = device.as<char>() + offsets[i];
}

}  // namespace actorllm::cuda

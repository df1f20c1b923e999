#pragma once
/// Device discovery, memory info and small RAII buffers, streams and events.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace actorllm::cuda {

/// Number of usable CUDA devices; 0 on any error (no driver, no device, driver too old).
int cuda_device_count();

struct memory_info {
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

/// Free and total memory of the current device.
memory_info device_memory_info();

/// "NVIDIA H200 (sm_90, 132 SMs, 140 GiB)" for the current device.
std::string device_description();

/// Streaming multiprocessors of the current device, asked of the driver once per device and
/// remembered (kernel dispatch asks every step).
int multiprocessor_count();

/// The current device's compute capability as major * 10 + minor (90 for sm_90), asked of
/// the driver once per device and remembered.
int compute_capability();

/// Owns `bytes` of device memory (cudaMalloc); move-only.
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(size_t bytes);
  ~device_buffer();
  device_buffer(device_buffer&& other) noexcept { swap(other); }
  device_buffer& operator=(device_buffer&& other) noexcept {
    device_buffer(std::move(other)).swap(*this);
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return bytes_; }
  /// Reallocates to `bytes` where smaller (the old contents are dropped); else nothing, so
  /// that scratch grown to the largest step stays where it is.
  void grow(size_t bytes) {
    if (bytes_ < bytes) device_buffer(bytes).swap(*this);
  }

  /// Copies `bytes` from host `src` (synchronously).
  void upload(const void* src, size_t bytes);
  /// Copies `bytes` to host `dst` (synchronously).
  void download(void* dst, size_t bytes) const;

 private:
  void swap(device_buffer& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Owns `bytes` of page-locked host memory (cudaMallocHost), the far side of swaps.
class pinned_buffer {
 public:
  pinned_buffer() = default;
  explicit pinned_buffer(size_t bytes);
  ~pinned_buffer();
  pinned_buffer(pinned_buffer&& other) noexcept { swap(other); }
  pinned_buffer& operator=(pinned_buffer&& other) noexcept {
    pinned_buffer(std::move(other)).swap(*this);
    return *this;
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return bytes_; }

 private:
  void swap(pinned_buffer& other) noexcept {
    std::swap(ptr_, other.ptr_);
    std::swap(bytes_, other.bytes_);
  }
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Owns a stream that does not wait on the legacy default stream (cudaStreamNonBlocking), on
/// the device current at construction.
class device_stream {
 public:
  device_stream();
  ~device_stream();
  device_stream(const device_stream&) = delete;
  device_stream& operator=(const device_stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// Owns an event that only orders streams (cudaEventDisableTiming). Waiting on one never
/// recorded returns at once.
class device_event {
 public:
  device_event();
  ~device_event();
  device_event(device_event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  device_event& operator=(device_event&&) = delete;
  device_event(const device_event&) = delete;
  device_event& operator=(const device_event&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Owns an instantiated CUDA graph (cudaGraphExecDestroy on destruction); move-only.
class graph_exec {
 public:
  graph_exec() = default;
  explicit graph_exec(cudaGraphExec_t exec) : exec_(exec) {}
  graph_exec(graph_exec&& other) noexcept : exec_(std::exchange(other.exec_, nullptr)) {}
  graph_exec& operator=(graph_exec&& other) noexcept {
    std::swap(exec_, other.exec_);
    return *this;
  }
  ~graph_exec() {
    if (exec_) cudaGraphExecDestroy(exec_);
  }
  graph_exec(const graph_exec&) = delete;
  graph_exec& operator=(const graph_exec&) = delete;
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraphExec_t exec_ = nullptr;
};

/// One host array of a step to send to the device: `bytes` from `src` (null when 0 bytes).
struct host_array {
  const void* src = nullptr;
  size_t bytes = 0;
};

/// Sends `count` host arrays in one copy: packs them, each 16-byte aligned, into `staging`
/// (pinned, grown as needed), queues one asynchronous copy into `device` (grown as needed) on
/// `stream`, and writes each array's device address to `at[i]`. `staging` is reused by the
/// next call: the caller waits for the stream in between.
void stage_host_arrays(const host_array* arrays, size_t count, pinned_buffer& staging,
                       device_buffer& device, cudaStream_t stream, const char** at);

}  // namespace actorllm::cuda

#pragma once
/// Host memory for data the CPU forward streams every step: the packed weights. (The KV pools
/// stay on ordinary pages: on huge pages a 32-stream decode measured no faster, 344 - 381
/// against 358 - 415 tok/s.) Blocks are cache-line aligned (a packed panel row is one line, so no
/// load straddles two), and blocks of 4 MB and more are 2 MB aligned and offered to the kernel as
/// transparent huge pages: with 4 KB pages a stream over hundreds of megabytes walks the page
/// tables every 4 KB. Where huge pages are off, the advice changes nothing.
#include <cstddef>

namespace actorllm::cpu {

void* allocate_streamed(std::size_t bytes);
/// `bytes` must be what allocate_streamed was given.
void free_streamed(void* p, std::size_t bytes);

/// A std allocator over allocate_streamed, for vectors of streamed data.
template <class T>
struct streamed_allocator {
  using value_type = T;
  streamed_allocator() = default;
  template <class U>
  streamed_allocator(const streamed_allocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_streamed(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { free_streamed(p, n * sizeof(T)); }
  friend bool operator==(streamed_allocator, streamed_allocator) { return true; }
};

}  // namespace actorllm::cpu

#pragma once
/// Host memory for data the CPU forward streams every step: the packed weights. (The KV pools
/// stay on ordinary pages: on huge pages a 32-stream decode measured no faster, 344 - 381
/// against 358 - 415 tok/s.) Blocks are cache-line aligned (a packed panel row is one line, so no
/// load straddles two), and blocks of 4 MB and more are 2 MB aligned and offered to the kernel as
/// transparent huge pages: with 4 KB pages a stream over hundreds of megabytes walks the page
/// tables every 4 KB. Where huge pages are off, the advice changes nothing.
#include <cstddef>
#include <vector>

namespace actorllm::cpu {

void* allocate_streamed(std::size_t bytes);
/// `bytes` must be what allocate_streamed was given.
void free_streamed(void* p, std::size_t bytes);

/// Whole pages straight from the kernel (mmap), handed back by free_pages (munmap): the KV
/// pools, so that a replica that stops leaves the process's resident memory at once (a
/// malloc heap may keep freed memory). Pages read as zero and take no memory until written.
/// Throws std::bad_alloc.
void* allocate_pages(std::size_t bytes);
/// `bytes` must be what allocate_pages was given.
void free_pages(void* p, std::size_t bytes);
/// Bytes held by allocate_pages now, process-wide (the KV pools of every live worker).
std::size_t pages_in_use();

/// Frees with free_pages, for a std::unique_ptr over allocate_pages.
struct page_deleter {
  std::size_t bytes = 0;
  void operator()(void* p) const { free_pages(p, bytes); }
};

/// Whole pages for a large temporary of loading (a matrix's codes, one byte a weight, while it is
/// packed), not counted in pages_in_use. Freed, they leave the process at once; from the heap
/// they could stay resident between the panels packed meanwhile (a heap that grew past them
/// keeps its holes, and huge pages fill them again). Throws std::bad_alloc.
void* allocate_scratch(std::size_t bytes);
/// `bytes` must be what allocate_scratch was given.
void free_scratch(void* p, std::size_t bytes);

/// A std allocator over allocate_scratch.
template <class T>
struct scratch_allocator {
  using value_type = T;
  scratch_allocator() = default;
  template <class U>
  scratch_allocator(const scratch_allocator<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_scratch(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { free_scratch(p, n * sizeof(T)); }
  friend bool operator==(scratch_allocator, scratch_allocator) { return true; }
};

/// A temporary of loading on pages of its own.
template <class T>
using scratch_vector = std::vector<T, scratch_allocator<T>>;

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

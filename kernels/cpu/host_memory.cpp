#include "kernels/cpu/host_memory.hpp"

#include <sys/mman.h>

#include <atomic>
#include <new>

namespace actorllm::cpu {

namespace {

constexpr std::size_t huge_page = std::size_t(2) << 20;
constexpr std::size_t cache_line = 64;

std::atomic<std::size_t> page_bytes{0};

bool wants_huge_pages(std::size_t bytes) {
  return bytes >= 2 * huge_page;
}

std::align_val_t alignment_for(std::size_t bytes) {
  return std::align_val_t(wants_huge_pages(bytes) ? huge_page : cache_line);
}

}  // namespace

void* allocate_streamed(std::size_t bytes) {
  void* p = ::operator new(bytes, alignment_for(bytes));
  if (wants_huge_pages(bytes)) madvise(p, bytes / huge_page * huge_page, MADV_HUGEPAGE);
  return p;
}

void free_streamed(void* p, std::size_t bytes) {
  ::operator delete(p, alignment_for(bytes));
}

void* allocate_scratch(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void free_scratch(void* p, std::size_t bytes) {
  if (p) munmap(p, bytes);
}

void* allocate_pages(std::size_t bytes) {
  void* p = allocate_scratch(bytes);
  page_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return p;
}

void free_pages(void* p, std::size_t bytes) {
  if (!p) return;
  free_scratch(p, bytes);
  page_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

std::size_t pages_in_use() {
  return page_bytes.load(std::memory_order_relaxed);
}

}  // namespace actorllm::cpu

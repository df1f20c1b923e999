#include "kernels/cpu/host_memory.hpp"

#include <sys/mman.h>

#include <new>

namespace actorllm::cpu {

namespace {

constexpr std::size_t huge_page = std::size_t(2) << 20;
constexpr std::size_t cache_line = 64;

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

}  // namespace actorllm::cpu

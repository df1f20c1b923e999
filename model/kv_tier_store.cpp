#include "model/kv_tier_store.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace actorllm {

kv_tier_store::kv_tier_store(int32_t num_slots, int64_t slot_bytes, const std::string& folder)
    : num_slots_(num_slots),
      slot_bytes_(slot_bytes),
      sealed_hash_(num_slots, 0),
      sealed_(num_slots, 0) {
  if (num_slots <= 0 || slot_bytes <= 0) throw std::invalid_argument("kv_tier_store: empty store");
  mapped_bytes_ = static_cast<std::size_t>(num_slots) * static_cast<std::size_t>(slot_bytes);
  int fd = -1;
  if (!folder.empty()) {
    static std::atomic<int> next_id{0};
    path_ = folder + "/actorllm-kv-offload-" + std::to_string(::getpid()) + "-" +
            std::to_string(next_id++) + ".bin";
    fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(mapped_bytes_)) != 0) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd), ::unlink(path_.c_str());
      throw std::runtime_error("--kv-offload-dir: cannot make " + path_ + ": " + why);
    }
  }
  void* mapped = fd >= 0 ? ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                         : ::mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  const int mmap_errno = errno;
  if (fd >= 0) ::close(fd);  // the mapping keeps the file open
  if (mapped == MAP_FAILED) {
    if (!path_.empty()) ::unlink(path_.c_str());
    throw std::runtime_error("KV offload tier: cannot map " + std::to_string(mapped_bytes_) +
                             " bytes" + (path_.empty() ? "" : " of " + path_) + ": " +
                             std::strerror(mmap_errno));
  }
  bytes_ = static_cast<std::byte*>(mapped);
}

kv_tier_store::~kv_tier_store() {
  ::munmap(bytes_, mapped_bytes_);
  if (!path_.empty()) ::unlink(path_.c_str());
}

void kv_tier_store::check_slot(int32_t slot) const {
  if (slot < 0 || slot >= num_slots_)
    throw std::out_of_range("KV offload tier: slot " + std::to_string(slot) + " of " +
                            std::to_string(num_slots_));
}

std::span<std::byte> kv_tier_store::slot(int32_t slot) {
  check_slot(slot);
  return {bytes_ + static_cast<std::size_t>(slot) * slot_bytes_,
          static_cast<std::size_t>(slot_bytes_)};
}

std::span<const std::byte> kv_tier_store::slot(int32_t slot) const {
  check_slot(slot);
  return {bytes_ + static_cast<std::size_t>(slot) * slot_bytes_,
          static_cast<std::size_t>(slot_bytes_)};
}

void kv_tier_store::seal(int32_t slot) {
  sealed_hash_[slot] = hash_bytes(this->slot(slot));
  sealed_[slot] = 1;
}

bool kv_tier_store::intact(int32_t slot) const {
  return sealed_[slot] != 0 && hash_bytes(this->slot(slot)) == sealed_hash_[slot];
}

}  // namespace actorllm

#include "model/kv_tier_store.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace actorllm {

namespace {

constexpr uint64_t prime1 = 0x9e3779b185ebca87ULL;
constexpr uint64_t prime2 = 0xc2b2ae3d27d4eb4fULL;

uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

uint64_t round_of(uint64_t lane, uint64_t word) {
  return rotl(lane + word * prime2, 31) * prime1;
}

uint64_t load_word(const std::byte* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace

uint64_t hash_bytes(std::span<const std::byte> bytes) {
  uint64_t lanes[4] = {prime1 + prime2, prime2, 0, 0 - prime1};
  const std::byte* p = bytes.data();
  std::size_t left = bytes.size();
  for (; left >= 32; p += 32, left -= 32)
    for (int i = 0; i < 4; ++i) lanes[i] = round_of(lanes[i], load_word(p + 8 * i));
  uint64_t h = rotl(lanes[0], 1) + rotl(lanes[1], 7) + rotl(lanes[2], 12) + rotl(lanes[3], 18);
  h += bytes.size();
  for (; left >= 8; p += 8, left -= 8) h = rotl(h ^ round_of(0, load_word(p)), 27) * prime1;
  for (; left > 0; ++p, --left) h = rotl(h ^ (std::to_integer<uint64_t>(*p) * prime1), 11) * prime2;
  h ^= h >> 33;
  h *= prime2;
  h ^= h >> 29;
  return h;
}

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

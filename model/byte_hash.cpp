#include "model/byte_hash.hpp"

#include <cstring>

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

}  // namespace actorllm

// Request ids, random object ids and the clock of the answers.
#include "api/ids.hpp"

#include <chrono>
#include <random>

namespace actorllm::api {

namespace {

/// Appends the `num_digits` low hex digits of `bits`, lowest first.
void append_hex(std::string& id, uint64_t bits, int num_digits) {
  static constexpr char digits[] = "0123456789abcdef";
  for (int i = 0; i < num_digits; ++i, bits >>= 4) id.push_back(digits[bits & 15]);
}

}  // namespace

std::string random_id(std::string_view prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(prefix);
  for (int half = 0; half < 2; ++half) append_hex(id, rng(), 16);
  return id;
}

std::string unguessable_id(std::string_view prefix) {
  thread_local std::random_device entropy;  // 32 bits a call
  std::string id(prefix);
  for (int word = 0; word < 4; ++word) append_hex(id, entropy(), 8);
  return id;
}

std::string request_id_for(std::string_view header) {
  bool sane = !header.empty() && header.size() <= 128;
  for (char c : header) sane = sane && c > 32 && c < 127;
  return sane ? std::string(header) : random_id("");
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace actorllm::api

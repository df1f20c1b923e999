#include "tool_calls/call_id.hpp"

#include <string_view>

namespace actorllm::tool_calls {
namespace {

std::uint64_t effective_seed(std::uint64_t seed) {
  if (seed != 0) return seed;
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

}  // namespace

call_id_source::call_id_source(std::uint64_t seed) : engine_(effective_seed(seed)) {}

std::string call_id_source::next_openai_id() {
  return "call_" + random_alnum(24);
}

std::string call_id_source::next_mistral_id() {
  return random_alnum(9);
}

std::string call_id_source::random_alnum(std::size_t length) {
  static constexpr std::string_view alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::string id(length, ' ');
  for (char& c : id) c = alphabet[pick(engine_)];
  return id;
}

}  // namespace actorllm::tool_calls

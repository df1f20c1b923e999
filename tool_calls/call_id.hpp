#pragma once
/// Random tool-call ids: "call_" + 24 letters and digits (OpenAI's shape), or 9 letters and
/// digits for Mistral, whose chat template refuses any other id when the call comes back.
#include <cstdint>
#include <random>
#include <string>

namespace actorllm::tool_calls {

class call_id_source {
 public:
  /// seed 0 draws a seed from std::random_device.
  explicit call_id_source(std::uint64_t seed);
  std::string next_openai_id();
  std::string next_mistral_id();

 private:
  std::string random_alnum(std::size_t length);
  std::mt19937_64 engine_;
};

}  // namespace actorllm::tool_calls

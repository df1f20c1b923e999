#pragma once
/// How token texts are written in logprobs objects: their text, code point counts (offsets)
/// and bytes.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace actorllm::api {

/// A token's text; "token_id:N" when the engine gave none (vLLM's convention).
inline std::string token_text(const std::vector<std::string>& texts, std::size_t i, int32_t id) {
  return i < texts.size() ? texts[i] : "token_id:" + std::to_string(id);
}

/// Characters (code points) of UTF-8 text, as Python's len() counts vLLM's strings: every
/// byte that does not continue a character (an invalid byte counts as one).
inline int32_t num_chars(const std::string& s) {
  int32_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

/// The text's UTF-8 bytes as a list of integers (chat logprobs' "bytes").
inline nlohmann::json utf8_bytes(const std::string& s) {
  nlohmann::json bytes = nlohmann::json::array();
  for (unsigned char c : s) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace actorllm::api

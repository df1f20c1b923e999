#pragma once
/// The `decoder` section of a tokenizer.json: turns vocabulary strings back into text.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace actorllm {

class token_decoder {
 public:
  virtual ~token_decoder() = default;
  /// Rewrites the list of token strings in place (Hugging Face's Decoder::decode_chain).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

/// Builds the decoder that `spec` describes (Sequence, Replace, ByteFallback, Fuse, Strip,
/// ByteLevel, Metaspace). Returns nullptr for a JSON null; throws std::runtime_error naming
/// the type for anything else.
std::unique_ptr<token_decoder> make_token_decoder(const nlohmann::json& spec);

/// Runs `decoder` (or joins with spaces when it is null, as Hugging Face does) and returns the
/// text; the result is always valid UTF-8.
std::string decode_tokens(const token_decoder* decoder, std::vector<std::string> tokens);

}  // namespace actorllm

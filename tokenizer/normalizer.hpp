#pragma once
/// The `normalizer` section of a tokenizer.json: text rewriting applied to each piece of
/// input between added tokens, before pre-tokenization.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace actorllm {

class normalizer {
 public:
  virtual ~normalizer() = default;
  /// Rewrites `text` (valid UTF-8) in place.
  virtual void normalize(std::string& text) const = 0;
};

/// Builds the normalizer that `spec` describes (Sequence, Prepend, Replace, NFC, NFD, NFKC,
/// NFKD, Lowercase, Strip). Returns nullptr for a JSON null. Throws std::runtime_error
/// naming the type for anything else.
std::unique_ptr<normalizer> make_normalizer(const nlohmann::json& spec);

}  // namespace actorllm

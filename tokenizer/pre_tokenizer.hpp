#pragma once
/// The `pre_tokenizer` section of a tokenizer.json: cuts normalized text into the words that
/// the BPE model encodes one by one (and, for byte-level BPE, rewrites bytes as symbols).
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace actorllm {

class pre_tokenizer {
 public:
  virtual ~pre_tokenizer() = default;
  /// Replaces `pieces` by their pre-tokenized parts, in order. `first_segment` is true when
  /// the pieces come from the start of the input text (Metaspace's prepend_scheme "first").
  virtual void pre_tokenize(std::vector<std::string>& pieces, bool first_segment) const = 0;
};

/// Builds the pre-tokenizer that `spec` describes (Sequence, Split, ByteLevel, Metaspace,
/// Whitespace, WhitespaceSplit, Digits). Returns nullptr for a JSON null; throws
/// std::runtime_error naming the type for anything else.
std::unique_ptr<pre_tokenizer> make_pre_tokenizer(const nlohmann::json& spec);

}  // namespace actorllm

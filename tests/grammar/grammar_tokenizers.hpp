#pragma once
// The real tokenizers in ../shared, loaded once per test binary.
#include <map>
#include <memory>
#include <string>

#include "grammar/vocabulary.hpp"
#include "tests/support/test_data.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm::grammar::testing {

/// "llama2" (SentencePiece, byte fallback), "llama3" or "qwen3" (byte-level BPE).
inline const tokenizer& shared_tokenizer(const std::string& name) {
  static std::map<std::string, tokenizer> loaded;
  auto it = loaded.find(name);
  if (it == loaded.end())
    it =
        loaded.emplace(name, tokenizer::load(actorllm::testing::shared_dir() / "tokenizers" / name))
            .first;
  return it->second;
}

inline std::shared_ptr<const vocabulary> shared_vocabulary(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const vocabulary>> built;
  auto& v = built[name];
  if (!v) v = vocabulary::from_tokenizer(shared_tokenizer(name));
  return v;
}

}  // namespace actorllm::grammar::testing

#pragma once
/// stories260K's tokenizer, loaded once per test binary.
#include "tests/support/test_data.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm::testing {

inline const tokenizer& stories_tokenizer() {
  static const tokenizer tok = tokenizer::load(stories260k_dir());
  return tok;
}

}  // namespace actorllm::testing

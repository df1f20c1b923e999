#pragma once
// Internal: what a loaded tokenizer holds. Shared by tokenizer.cpp and tokenizer_load.cpp.
#include <memory>
#include <unordered_map>

#include "tokenizer/bpe.hpp"
#include "tokenizer/normalizer.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/token_decoder.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/tokenizer_added_tokens.hpp"

namespace actorllm {

struct tokenizer::state {
  std::unique_ptr<bpe_model> model;
  std::unique_ptr<normalizer> norm;
  std::unique_ptr<pre_tokenizer> pre;
  std::unique_ptr<token_decoder> decoder;
  added_token_matcher added;
  std::unordered_map<int32_t, size_t> added_index;  // id → index into added.tokens()
  std::vector<int32_t> prefix_ids;                  // added before the text by add_special_tokens
  std::vector<int32_t> suffix_ids;                  // added after it
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  std::vector<int32_t> eos_ids;
  std::string bos_token;
  std::string eos_token;
  std::string chat_template;
  size_t vocab_size = 0;
};

}  // namespace actorllm

#pragma once
/// What a remote worker must share with the server it joins, compared field by field when it
/// asks to join: the model's config.json, its weights, its tokenizer, and the KV block size
/// the server's scheduler plans with. Computed by actors/system/cluster_admission.
#include <cstdint>
#include <string>
#include <vector>

namespace actorllm {

struct model_identity {
  std::vector<std::string> config_keys;    ///< config.json's top-level fields, sorted
  std::vector<std::string> config_values;  ///< each one's value as compact JSON
  std::string weights;    ///< fingerprint of the safetensors files: headers, sizes, samples (hex)
  std::string tokenizer;  ///< hash of tokenizer.json (hex)
  int64_t vocab_size = 0;
  int32_t block_size = 0;  ///< tokens per KV block
};

}  // namespace actorllm

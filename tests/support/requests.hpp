#pragma once
/// Requests and configurations the engine tests share.
#include <string>
#include <vector>

#include "common/generate_request.hpp"
#include "config/engine_config.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm::testing {

/// stories260K on one CPU thread with fixed pools (no sizing from free memory).
inline engine_config stories_config(int64_t num_device_blocks, int64_t num_cpu_blocks) {
  engine_config c;
  c.model.model = stories260k_dir().string();
  c.cache.num_gpu_blocks_override = num_device_blocks;
  c.cache.num_cpu_blocks_override = num_cpu_blocks;
  c.parallel.cpu_threads = 1;
  c.parallel.device = "cpu";  // on every machine; the CUDA tests ask for cuda
  c.server.log_stats_interval = 0;
  return c;
}

/// Speculative decoding by n-gram lookup of min_n to max_n tokens, k drafts a step.
inline speculative_config ngram_speculation(int32_t k, int32_t min_n = 1, int32_t max_n = 3) {
  speculative_config c;
  c.method = speculative_method::ngram;
  c.num_speculative_tokens = k;
  c.prompt_lookup_min = min_n;
  c.prompt_lookup_max = max_n;
  return c;
}

/// Speculative decoding with the draft model in `dir`, k drafts a step.
inline speculative_config draft_speculation(const std::string& dir, int32_t k) {
  speculative_config c;
  c.method = speculative_method::draft_model;
  c.draft_model = dir;
  c.num_speculative_tokens = k;
  return c;
}

/// A one-token request for `model` ("" : the default) with the text prompt "hi": what the
/// tests of routing by model name send.
inline generate_request text_request(std::string model, std::string id) {
  generate_request r;
  r.request_id = std::move(id);
  r.model = std::move(model);
  r.kind = prompt_kind::text;
  r.text = "hi";
  r.params.max_tokens = 1;
  return r;
}

/// A greedy request for `ids` that ignores EOS, so its length is exactly max_tokens.
inline generate_request ids_request(std::string id, std::vector<int32_t> ids, int max_tokens) {
  generate_request r;
  r.request_id = std::move(id);
  r.kind = prompt_kind::token_ids;
  r.token_ids = std::move(ids);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

/// `count` prompts of varied lengths (BOS + up to `max_extra` tokens), with max_tokens varied too.
inline std::vector<generate_request> varied_requests(int count, int max_tokens, int max_extra,
                                                     const std::string& prefix) {
  std::vector<generate_request> rs;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> ids{1};
    for (int j = 0; j < 1 + (i * 13) % max_extra; ++j) ids.push_back(3 + (i * 37 + j * 11) % 500);
    rs.push_back(ids_request(prefix + std::to_string(i), ids, max_tokens - i % 5));
  }
  return rs;
}

}  // namespace actorllm::testing

#pragma once
/// Runs a batch of requests to the end on the actor-free engine and times its decode: the
/// measure the engine benchmarks share.
#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "actors/offline_engine/llm_engine.hpp"
#include "bench/bench_util.hpp"

namespace actorllm::bench {

struct run_result {
  double decode_tok_s = 0;  ///< tokens after each request's first, over their time
  double e2e_tok_s = 0;     ///< every generated token over the whole run (prefill included)
  int64_t generated = 0;
  int64_t steps = 0;
};

/// Adds every request at once and steps until all end. Decode tok/s counts only the tokens
/// generated after every request has its first token (the step that ends the prefills is
/// excluded), over the time they took. Throws when a request is refused or fails, or when
/// the requests did not get exactly their max_tokens (they are meant to ignore EOS).
inline run_result run_requests(llm_engine& engine, const std::vector<generate_request>& requests) {
  std::map<std::string, int32_t> generated;
  int64_t expected = 0;
  const double start = now_seconds();
  for (const auto& r : requests) {
    if (auto refused = engine.add_request(r))
      throw std::runtime_error("request refused: " + refused->error);
    generated[r.request_id] = 0;
    expected += int64_t{r.params.max_tokens} * r.params.n;
  }
  double decode_start = -1;
  int64_t at_decode_start = 0;
  auto total = [&] {
    int64_t t = 0;
    for (const auto& [id, n] : generated) t += n;
    return t;
  };
  run_result result;
  while (engine.has_work()) {
    ++result.steps;
    for (const auto& out : engine.step()) {
      if (out.finish == finish_reason::error)
        throw std::runtime_error("request failed: " + out.error);
      auto& n = generated[out.request_id];
      n = std::max(n, out.num_generated_tokens);
    }
    if (decode_start < 0 && std::all_of(generated.begin(), generated.end(),
                                        [](const auto& g) { return g.second > 0; })) {
      decode_start = now_seconds();
      at_decode_start = total();
    }
  }
  const double end = now_seconds();
  result.generated = total();
  if (result.generated != expected)
    throw std::runtime_error("generated " + std::to_string(result.generated) +
                             " tokens, expected " + std::to_string(expected));
  result.decode_tok_s = (result.generated - at_decode_start) / (end - decode_start);
  result.e2e_tok_s = result.generated / (end - start);
  return result;
}

/// A greedy request for `prompt` that ignores EOS, so that it makes exactly max_tokens.
inline generate_request greedy_request(std::string id, std::vector<int32_t> prompt,
                                       int max_tokens) {
  generate_request r;
  r.request_id = std::move(id);
  r.kind = prompt_kind::token_ids;
  r.token_ids = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = max_tokens;
  r.params.ignore_eos = true;
  return r;
}

/// `count` greedy requests, request i's prompt BOS and prompt_len - 1 ids of a vocabulary of
/// `vocab` spread by i; ids unique over the whole program, so that rounds never collide.
inline std::vector<generate_request> varied_greedy_requests(int count, int prompt_len,
                                                            int64_t vocab, int max_tokens) {
  static int64_t serial = 0;
  std::vector<generate_request> rs;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> prompt{1};
    for (int j = 1; j < prompt_len; ++j)
      prompt.push_back(static_cast<int32_t>(3 + (i * 7919 + j * 104729) % (vocab - 3)));
    rs.push_back(greedy_request(std::to_string(serial++), std::move(prompt), max_tokens));
  }
  return rs;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace actorllm::bench

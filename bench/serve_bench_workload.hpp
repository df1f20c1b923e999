#pragma once
/// The serving benchmark's workload: prompts from the random or the ShareGPT dataset, and the
/// gaps between request arrivals. Seeded, so two runs with one seed send the same requests.
/// Tokenization comes in as functions, so that this header needs no tokenizer library.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace actorllm::bench::serve {

/// One request to send: the prompt as token ids (for /v1/completions) or as text.
struct sample_request {
  std::vector<int32_t> prompt_ids;  // empty when the prompt is text
  std::string prompt_text;
  int prompt_len = 0;  // tokens
  int output_len = 0;  // max_tokens
};

using encode_fn = std::function<std::vector<int32_t>(std::string_view)>;
using decode_fn = std::function<std::string(const std::vector<int32_t>&)>;

/// The random dataset as in vLLM: lengths uniform in [len * (1 - r), len * (1 + r)].
struct random_options {
  int num_prompts = 1000;
  int input_len = 1024;
  int output_len = 128;
  double range_ratio = 0;  // in [0, 1)
  int vocab_size = 0;
  std::set<int32_t> excluded_ids;  // never sampled: BOS, EOS and other special tokens
  uint64_t seed = 0;
};

/// Random prompts of uniformly drawn token ids. With `decode`, prompts become text (for chat)
/// and `encode`, when given too, counts their tokens; otherwise they stay token ids.
inline std::vector<sample_request> random_requests(const random_options& o,
                                                   const decode_fn& decode = {},
                                                   const encode_fn& encode = {}) {
  if (o.range_ratio < 0 || o.range_ratio >= 1) {
    throw std::invalid_argument("--random-range-ratio must be in [0, 1)");
  }
  std::vector<int32_t> allowed;
  for (int32_t id = 0; id < o.vocab_size; ++id) {
    if (!o.excluded_ids.contains(id)) allowed.push_back(id);
  }
  if (allowed.empty()) throw std::invalid_argument("random dataset: no token ids to draw from");
  auto range = [&](int len) {
    return std::uniform_int_distribution<int>(
        std::max(1, static_cast<int>(len * (1 - o.range_ratio))),
        std::max(1, static_cast<int>(len * (1 + o.range_ratio))));
  };
  std::mt19937_64 rng(o.seed);
  auto input_lens = range(o.input_len), output_lens = range(o.output_len);
  std::uniform_int_distribution<size_t> pick(0, allowed.size() - 1);
  std::vector<sample_request> out(o.num_prompts);
  for (auto& r : out) {
    r.prompt_ids.resize(input_lens(rng));
    for (auto& id : r.prompt_ids) id = allowed[pick(rng)];
    r.prompt_len = static_cast<int>(r.prompt_ids.size());
    r.output_len = output_lens(rng);
    if (decode) {
      r.prompt_text = decode(r.prompt_ids);
      r.prompt_ids.clear();
      if (encode) r.prompt_len = static_cast<int>(encode(r.prompt_text).size());
    }
  }
  return out;
}

/// The ShareGPT dataset as vLLM samples it: the first human turn is the prompt, the reply's
/// token count the output length (unless fixed); conversations are shuffled with the seed and
/// skipped when too short (< 4 tokens) or too long.
struct sharegpt_options {
  int num_prompts = 1000;
  int fixed_output_len = 0;  // 0: the length of the reply in the file
  int max_prompt_len = 1024;
  int max_total_len = 2048;
  uint64_t seed = 0;
};

/// Samples `o.num_prompts` requests from `data` (a ShareGPT JSON array); throws
/// std::invalid_argument when the file holds too few usable conversations.
inline std::vector<sample_request> sharegpt_requests(const nlohmann::json& data,
                                                     const sharegpt_options& o,
                                                     const encode_fn& encode) {
  if (!data.is_array()) throw std::invalid_argument("ShareGPT file is not a JSON array");
  std::vector<const nlohmann::json*> conversations;
  for (const auto& entry : data) {
    const auto c = entry.find("conversations");
    if (c != entry.end() && c->is_array() && c->size() >= 2 && (*c)[0].contains("value") &&
        (*c)[1].contains("value") && (*c)[0]["value"].is_string() && (*c)[1]["value"].is_string()) {
      conversations.push_back(&*c);
    }
  }
  std::mt19937_64 rng(o.seed);
  std::shuffle(conversations.begin(), conversations.end(), rng);
  std::vector<sample_request> out;
  for (const auto* c : conversations) {
    if (static_cast<int>(out.size()) == o.num_prompts) break;
    sample_request r;
    r.prompt_text = (*c)[0]["value"].get<std::string>();
    r.prompt_len = static_cast<int>(encode(r.prompt_text).size());
    r.output_len = o.fixed_output_len > 0
                       ? o.fixed_output_len
                       : static_cast<int>(encode((*c)[1]["value"].get<std::string>()).size());
    const bool too_short = r.prompt_len < 4 || (o.fixed_output_len == 0 && r.output_len < 4);
    if (too_short || r.prompt_len > o.max_prompt_len ||
        r.prompt_len + r.output_len > o.max_total_len) {
      continue;
    }
    out.push_back(std::move(r));
  }
  if (static_cast<int>(out.size()) < o.num_prompts) {
    throw std::invalid_argument("ShareGPT file has only " + std::to_string(out.size()) +
                                " usable conversations, " + std::to_string(o.num_prompts) +
                                " asked for");
  }
  return out;
}

/// Seconds to wait before each of `n` requests. The first goes at once; at an infinite `rate`
/// all do. Otherwise gaps are gamma-distributed with shape `burstiness` and mean 1 / rate:
/// burstiness 1 is a Poisson process, lower is burstier, higher more regular.
inline std::vector<double> arrival_gaps(int n, double rate, double burstiness, uint64_t seed) {
  std::vector<double> gaps(n, 0.0);
  if (std::isinf(rate)) return gaps;
  if (rate <= 0 || burstiness <= 0) {
    throw std::invalid_argument("--request-rate and --burstiness must be positive");
  }
  std::mt19937_64 rng(seed);
  std::gamma_distribution<double> gamma(burstiness, 1.0 / (rate * burstiness));
  for (int i = 1; i < n; ++i) gaps[i] = gamma(rng);
  return gaps;
}

}  // namespace actorllm::bench::serve

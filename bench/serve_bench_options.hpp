#pragma once
/// Command-line options of serve_bench, named as in vLLM's benchmark_serving.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/serve_bench_stats.hpp"

namespace actorllm::bench::serve {

struct options {
  std::string base_url = "http://127.0.0.1:8000";
  std::string endpoint = "/v1/completions";
  std::string model;              // sent as "model"; a folder also gives the tokenizer
  std::string served_model_name;  // overrides the name sent
  std::string tokenizer;          // tokenizer.json or its folder; default: --model
  std::string dataset_name = "random";
  std::string dataset_path;
  int random_input_len = 1024, random_output_len = 128;
  double random_range_ratio = 0;
  int sharegpt_output_len = 0;  // 0: from the dataset
  int max_model_len = 2048;     // ShareGPT conversations longer than this are skipped
  int num_prompts = 1000;
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1;
  int max_concurrency = 0;  // 0: no cap
  bool ignore_eos = false;
  std::string extra_body;  // a JSON object merged into every request body
  bool keep_alive = true;  // reuse connections across requests, as vLLM's benchmark does
  uint64_t seed = 0;
  goodput_slo goodput;
  std::string result_json, label;
  int request_timeout_s = 600;
};

inline const char* usage_text() {
  return R"(usage: serve_bench --model NAME_OR_DIR [options]
Load generator for an OpenAI-compatible server (streaming), after vLLM's benchmark_serving.
  --base-url URL            http://HOST:PORT (default http://127.0.0.1:8000)
  --endpoint PATH           /v1/completions (default) or /v1/chat/completions
  --model M                 model name sent; if M is a folder, its last part is sent and its
                            tokenizer.json is used
  --served-model-name N     name to send instead
  --tokenizer PATH          tokenizer.json or its folder (default: --model)
  --dataset-name random|sharegpt, --dataset-path FILE (ShareGPT JSON)
  --random-input-len N (1024), --random-output-len N (128), --random-range-ratio R (0)
  --sharegpt-output-len N   fixed output length for ShareGPT prompts
  --max-model-len N         skip ShareGPT conversations longer than N tokens (2048)
  --num-prompts N (1000), --seed S (0)
  --request-rate R          requests/s, gamma arrivals (default inf: all at once)
  --burstiness B            gamma shape; 1 = Poisson (default 1)
  --max-concurrency N       cap on requests in flight
  --ignore-eos              send ignore_eos; responses must have exactly max_tokens tokens
  --extra-body JSON         fields merged into every request, e.g.
                            '{"response_format": {"type": "json_object"}}'
  --goodput ttft:MS tpot:MS e2el:MS
  --result-json FILE, --label NAME (stored in the JSON, for plots)
  --request-timeout S       per request (600)
  --no-keep-alive           a new connection per request (Connection: close) instead of
                            reusing idle ones
)";
}

/// Parses argv; throws std::invalid_argument naming the bad flag.
inline options parse_options(int argc, char** argv) {
  options o;
  std::string flag;  // the flag being read, for error messages
  // Whole-string numbers only; std::sto* alone would accept "8x" and throw a bare "stoi".
  auto number = [&](const std::string& v, auto parse) {
    size_t used = 0;
    try {
      const auto n = parse(v, &used);
      if (used == v.size()) return n;
    } catch (const std::logic_error&) {
    }
    throw std::invalid_argument(flag + ": '" + v + "' is not a number");
  };
  auto to_int = [&](const std::string& v) {
    return number(v, [](const std::string& s, size_t* used) { return std::stoi(s, used); });
  };
  auto to_double = [&](const std::string& v) {
    return number(v, [](const std::string& s, size_t* used) { return std::stod(s, used); });
  };
  using setter = std::function<void(const std::string&)>;
  const std::map<std::string, setter> valued = {
      {"--base-url", [&](const std::string& v) { o.base_url = v; }},
      {"--endpoint", [&](const std::string& v) { o.endpoint = v; }},
      {"--model", [&](const std::string& v) { o.model = v; }},
      {"--served-model-name", [&](const std::string& v) { o.served_model_name = v; }},
      {"--tokenizer", [&](const std::string& v) { o.tokenizer = v; }},
      {"--dataset-name", [&](const std::string& v) { o.dataset_name = v; }},
      {"--dataset-path", [&](const std::string& v) { o.dataset_path = v; }},
      {"--random-input-len", [&](const std::string& v) { o.random_input_len = to_int(v); }},
      {"--random-output-len", [&](const std::string& v) { o.random_output_len = to_int(v); }},
      {"--random-range-ratio", [&](const std::string& v) { o.random_range_ratio = to_double(v); }},
      {"--sharegpt-output-len", [&](const std::string& v) { o.sharegpt_output_len = to_int(v); }},
      {"--max-model-len", [&](const std::string& v) { o.max_model_len = to_int(v); }},
      {"--num-prompts", [&](const std::string& v) { o.num_prompts = to_int(v); }},
      {"--request-rate", [&](const std::string& v) { o.request_rate = to_double(v); }},
      {"--burstiness", [&](const std::string& v) { o.burstiness = to_double(v); }},
      {"--max-concurrency", [&](const std::string& v) { o.max_concurrency = to_int(v); }},
      {"--seed", [&](const std::string& v) { o.seed = static_cast<uint64_t>(to_int(v)); }},
      {"--result-json", [&](const std::string& v) { o.result_json = v; }},
      {"--label", [&](const std::string& v) { o.label = v; }},
      {"--extra-body", [&](const std::string& v) { o.extra_body = v; }},
      {"--request-timeout", [&](const std::string& v) { o.request_timeout_s = to_int(v); }},
  };
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    flag = args[i];
    std::optional<std::string> inline_value;  // --flag=value
    if (const auto eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      inline_value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    if (const auto it = valued.find(flag); it != valued.end()) {
      if (!inline_value && i + 1 >= args.size()) {
        throw std::invalid_argument(flag + " needs a value");
      }
      it->second(inline_value ? *inline_value : args[++i]);
    } else if (flag == "--ignore-eos") {
      o.ignore_eos = true;
    } else if (flag == "--no-keep-alive") {
      o.keep_alive = false;
    } else if (flag == "--goodput") {
      // Like vLLM's nargs="+": every following word up to the next flag.
      std::vector<std::string> items;
      if (inline_value) items.push_back(*inline_value);
      while (i + 1 < args.size() && !args[i + 1].starts_with("--")) items.push_back(args[++i]);
      if (items.empty()) throw std::invalid_argument("--goodput needs KEY:MS items");
      for (const auto& item : items) {
        if (auto error = parse_goodput_item(item, o.goodput); !error.empty()) {
          throw std::invalid_argument(error);
        }
      }
    } else {
      throw std::invalid_argument("unknown option '" + flag + "'");
    }
  }
  if (o.model.empty()) throw std::invalid_argument("--model is required");
  if (o.endpoint != "/v1/completions" && o.endpoint != "/v1/chat/completions") {
    throw std::invalid_argument("--endpoint must be /v1/completions or /v1/chat/completions");
  }
  if (o.dataset_name != "random" && o.dataset_name != "sharegpt") {
    throw std::invalid_argument("--dataset-name must be random or sharegpt");
  }
  if (o.dataset_name == "sharegpt" && o.dataset_path.empty()) {
    throw std::invalid_argument("--dataset-name sharegpt needs --dataset-path");
  }
  if (o.num_prompts < 1) throw std::invalid_argument("--num-prompts must be at least 1");
  if (o.random_input_len < 1 || o.random_output_len < 1) {
    throw std::invalid_argument("--random-input-len and --random-output-len must be >= 1");
  }
  return o;
}

}  // namespace actorllm::bench::serve

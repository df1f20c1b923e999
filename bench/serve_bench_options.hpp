#pragma once
/// Command-line options of serve_bench, named as in vLLM's benchmark_serving.
#include <cmath>
#include <cstdint>
#include <limits>
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
  --goodput ttft:MS tpot:MS e2el:MS
  --result-json FILE, --label NAME (stored in the JSON, for plots)
  --request-timeout S       per request (600)
)";
}

/// Parses argv; throws std::invalid_argument naming the bad flag.
inline options parse_options(int argc, char** argv) {
  options o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool has_inline = false;
    if (const auto eq = flag.find('='); flag.starts_with("--") && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_inline = true;
    }
    auto next = [&]() -> std::string {
      if (has_inline) return value;
      if (i + 1 >= args.size()) throw std::invalid_argument(flag + " needs a value");
      return args[++i];
    };
    auto to_int = [&](const std::string& v) {
      size_t used = 0;
      const int n = std::stoi(v, &used);
      if (used != v.size()) throw std::invalid_argument(flag + ": '" + v + "' is not a number");
      return n;
    };
    auto to_double = [&](const std::string& v) {
      size_t used = 0;
      const double d = std::stod(v, &used);
      if (used != v.size()) throw std::invalid_argument(flag + ": '" + v + "' is not a number");
      return d;
    };
    if (flag == "--base-url") o.base_url = next();
    else if (flag == "--endpoint") o.endpoint = next();
    else if (flag == "--model") o.model = next();
    else if (flag == "--served-model-name") o.served_model_name = next();
    else if (flag == "--tokenizer") o.tokenizer = next();
    else if (flag == "--dataset-name") o.dataset_name = next();
    else if (flag == "--dataset-path") o.dataset_path = next();
    else if (flag == "--random-input-len") o.random_input_len = to_int(next());
    else if (flag == "--random-output-len") o.random_output_len = to_int(next());
    else if (flag == "--random-range-ratio") o.random_range_ratio = to_double(next());
    else if (flag == "--sharegpt-output-len") o.sharegpt_output_len = to_int(next());
    else if (flag == "--max-model-len") o.max_model_len = to_int(next());
    else if (flag == "--num-prompts") o.num_prompts = to_int(next());
    else if (flag == "--request-rate") o.request_rate = to_double(next());
    else if (flag == "--burstiness") o.burstiness = to_double(next());
    else if (flag == "--max-concurrency") o.max_concurrency = to_int(next());
    else if (flag == "--ignore-eos") o.ignore_eos = true;
    else if (flag == "--seed") o.seed = static_cast<uint64_t>(std::stoull(next()));
    else if (flag == "--result-json") o.result_json = next();
    else if (flag == "--label") o.label = next();
    else if (flag == "--request-timeout") o.request_timeout_s = to_int(next());
    else if (flag == "--goodput") {
      // Like vLLM's nargs="+": every following word up to the next flag.
      std::vector<std::string> items;
      if (has_inline) items.push_back(value);
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

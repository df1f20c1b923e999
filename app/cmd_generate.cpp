// `actorllm generate`: offline generation through the actor-free spine (llm_engine).
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "actors/offline_engine/llm_engine.hpp"
#include "actors/system/worker_backend.hpp"
#include "app/command.hpp"
#include "config/engine_flags.hpp"

namespace actorllm::app {
namespace {

std::string parse_ids(std::string_view text, std::vector<int32_t>& out) {
  out.clear();
  std::string item;
  std::istringstream in{std::string(text)};
  while (std::getline(in, item, ',')) {
    int64_t id = 0;
    if (auto e = parse_number(item, id); !e.empty()) return e;
    out.push_back(static_cast<int32_t>(id));
  }
  return out.empty() ? "no token ids given" : "";
}

int run_generate(int argc, char** argv) {
  engine_config config;
  config.model.model = "../shared/models/stories260K";
  sampling_params params;
  params.max_tokens = 64;
  std::vector<generate_request> requests;
  std::string output = "text";
  flag_parser p(
      "actorllm generate [MODEL] [options]",
      "Generates text offline (no server): each --prompt or --prompt-ids is one request,\n"
      "all run together in continuous batches.");
  add_engine_flags(p, config);
  p.add("--prompt", "TEXT", "a prompt (repeatable)", [&](std::string_view v) {
    generate_request r;
    r.text = std::string(v);
    requests.push_back(std::move(r));
    return std::string();
  });
  p.add("--prompt-ids", "1,2,3", "a prompt as token ids (repeatable)", [&](std::string_view v) {
    generate_request r;
    r.kind = prompt_kind::token_ids;
    if (auto e = parse_ids(v, r.token_ids); !e.empty()) return e;
    requests.push_back(std::move(r));
    return std::string();
  });
  p.add_number("--max-tokens", "tokens to generate per prompt", params.max_tokens);
  p.add_number("--temperature", "0: greedy", params.temperature);
  p.add_number("--top-p", "nucleus sampling mass", params.top_p);
  p.add_number("--top-k", "-1: no limit", params.top_k);
  p.add_number("--min-p", "relative probability floor", params.min_p);
  p.add_number("--n", "samples per prompt", params.n);
  p.add("--request-seed", "N", "per-request sampling seed", [&](std::string_view v) {
    int64_t seed = 0;
    if (auto e = parse_number(v, seed); !e.empty()) return e;
    params.seed = static_cast<uint64_t>(seed);
    return std::string();
  });
  p.add_flag("--ignore-eos", "keep generating past the end-of-sequence token",
             [&] { params.ignore_eos = true; });
  p.add_choice<std::string>("--output", "text prints the stories; json one object per prompt",
                            output, {{"text", "text"}, {"json", "json"}});
  if (auto stop = parse_flags(p, argc, argv, "actorllm generate")) return *stop;
  if (auto errors = config.validate(); !errors.empty()) {
    std::fprintf(stderr, "actorllm generate: %s\n", errors.front().c_str());
    return exit_usage;
  }
  if (requests.empty()) {
    generate_request r;
    r.kind = prompt_kind::token_ids;
    r.token_ids = {};
    r.text = "Once upon a time";
    r.kind = prompt_kind::text;
    requests.push_back(std::move(r));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].request_id = "gen-" + std::to_string(i);
    requests[i].params = params;
  }

  llm_engine engine(engine_setup::load(config, select_backend(config)));
  const auto results = run_to_completion(engine, requests);
  nlohmann::json all = nlohmann::json::array();
  int status = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    for (const auto& choice : results[i]) {
      if (choice.finish == finish_reason::error) {
        std::fprintf(stderr, "actorllm generate: prompt %zu: %s\n", i, choice.error.c_str());
        status = 1;
        continue;
      }
      if (output == "json") {
        std::vector<int32_t> prompt_ids = requests[i].token_ids;
        if (requests[i].kind == prompt_kind::text)
          prompt_ids = engine.setup().tok.encode(requests[i].text, true);
        all.push_back({{"prompt_token_ids", prompt_ids},
                       {"output_token_ids", choice.token_ids},
                       {"text", choice.text},
                       {"finish_reason", to_string(choice.finish)}});
      } else {
        const std::string prompt = requests[i].kind == prompt_kind::text ? requests[i].text : "";
        std::printf("%s%s\n", prompt.c_str(), choice.text.c_str());
      }
    }
  }
  if (output == "json") std::printf("%s\n", (all.size() == 1 ? all[0] : all).dump().c_str());
  return status;
}

const command_registration generate_command("generate",
                                            {"generate text offline (no server)", run_generate});

}  // namespace
}  // namespace actorllm::app

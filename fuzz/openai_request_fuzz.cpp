// The OpenAI request parsers (api/openai_protocol.hpp) on arbitrary bodies, and for every
// body they accept, the call that renders the engine's deltas back (api/openai_call.hpp):
// each choice gets one delta made of the input's own bytes, then the response or the chunks
// must be valid JSON. The first byte picks the parser by its value mod 4 (so seeds start with a
// digit): 0 completions, 1 chat completions, 2 /tokenize, 3 /detokenize; the rest is the body.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai_call.hpp"
#include "api/openai_protocol.hpp"
#include "fuzz/fuzz_support.hpp"

namespace {

using namespace actorllm;
using namespace actorllm::api;

void check_json(const std::string& text) {
  FUZZ_CHECK(nlohmann::json::accept(text));
}

/// Feeds one delta per choice, finishing each, and checks every object that comes out.
void render(const openai_request& request, std::string_view text) {
  call_options options;
  options.kind = request.kind;
  options.id = "cmpl-fuzz";
  options.model = request.model.empty() ? "fuzz-model" : request.model;
  options.n = request.n;
  options.stream = request.stream;
  options.include_usage = request.include_usage;
  options.continuous_usage = request.include_usage && request.continuous_usage_stats;
  options.logprobs = !request.prompts.empty() && request.prompts.front().params.logprobs >= 0;
  std::vector<std::string> engine_ids;
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    engine_ids.push_back("e" + std::to_string(p));
  }
  openai_call call(options, engine_ids);
  std::vector<std::string> chunks;
  for (std::size_t p = 0; p < request.prompts.size(); ++p) {
    const sampling_params& params = request.prompts[p].params;
    for (int32_t c = 0; c < request.n && c < 64; ++c) {
      request_output out;
      out.request_id = engine_ids[p];
      out.index = c;
      out.text = std::string(text.substr(0, 32));
      out.token_ids = {7};
      out.num_prompt_tokens = 3;
      out.num_generated_tokens = 1;
      out.finish = c % 2 ? finish_reason::stop : finish_reason::length;
      if (params.logprobs >= 0) {
        out.token_texts = {out.text};
        token_logprob lp;
        lp.token_id = 7;
        lp.logprob = -0.25f;
        for (int32_t k = 0; k < params.logprobs && k < 8; ++k) {
          lp.top_ids.push_back(k);
          lp.top_logprobs.push_back(-1.0f - k);
          lp.top_texts.push_back(std::string(text.substr(k, 2)));
        }
        out.logprobs = {lp};
      }
      call.add(out, chunks);
    }
  }
  for (const auto& chunk : chunks) check_json(chunk);
  if (!call.done()) return;
  if (options.stream) {
    if (options.include_usage) check_json(call.usage_chunk());
  } else if (!call.failed()) {
    check_json(call.response());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
    case 1: {
      openai_request request;
      const api_kind kind = data[0] % 4 == 0 ? api_kind::completion : api_kind::chat;
      if (auto error = parse_openai_request(body, kind, request)) {
        check_json(error_json(*error));
        FUZZ_CHECK(error->status >= 400 && error->status < 600);
        return 0;
      }
      FUZZ_CHECK(!request.prompts.empty());
      FUZZ_CHECK(request.n >= 1);
      render(request, body);
      return 0;
    }
    case 2: {
      generate_request request;
      if (auto error = parse_tokenize_request(body, request)) check_json(error_json(*error));
      return 0;
    }
    default: {
      detokenize_request request;
      if (!parse_detokenize_request(body, request)) {
        for (int32_t t : request.tokens) FUZZ_CHECK(t >= 0);
        FUZZ_CHECK(request.model.size() <= body.size());  // a name read from the body
      }
      return 0;
    }
  }
}

#pragma once
/// Reading an OpenAI stream (SSE) into a request_result: splitting the body into `data:`
/// payloads, and timing the chunks the way vLLM's benchmark does (every chunk with choices is
/// one step: the first gives TTFT, the others ITL gaps, the last E2E).
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "bench/serve_bench_stats.hpp"

namespace actorllm::bench::serve {

/// Splits an SSE byte stream into the payloads of its `data:` lines. Bytes may arrive cut
/// anywhere; a line is handled once its newline has arrived. Other fields (event:, id:,
/// comments) are ignored.
class sse_splitter {
 public:
  /// Feeds `bytes`; calls `on_data(std::string_view payload)` for each complete data line.
  template <class F>
  void feed(std::string_view bytes, F&& on_data) {
    pending_.append(bytes);
    size_t begin = 0;
    for (size_t nl; (nl = pending_.find('\n', begin)) != std::string::npos; begin = nl + 1) {
      std::string_view line(pending_.data() + begin, nl - begin);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.starts_with("data:")) {
        line.remove_prefix(5);
        if (line.starts_with(' ')) line.remove_prefix(1);
        on_data(line);
      }
    }
    pending_.erase(0, begin);
  }

 private:
  std::string pending_;  // an incomplete last line
};

/// Folds the payloads of one completions or chat stream into timings and a token count.
class stream_accumulator {
 public:
  /// Handles one payload that arrived `t` seconds after the request started.
  void on_data(std::string_view payload, double t) {
    if (payload == "[DONE]") {
      done_ = true;
      return;
    }
    const auto chunk = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
    if (!chunk.is_object()) {
      error_ = "chunk is not a JSON object: " + std::string(payload.substr(0, 200));
      return;
    }
    if (const auto e = chunk.find("error"); e != chunk.end()) {
      error_ = "error in stream: " + e->dump();
      return;
    }
    if (const auto u = chunk.find("usage"); u != chunk.end() && u->is_object()) {
      if (const auto n = u->find("completion_tokens"); n != u->end() && n->is_number_integer()) {
        usage_tokens_ = n->get<int>();
      }
    }
    const auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array() || choices->empty()) return;
    if (num_chunks_ == 0)
      ttft_ = t;
    else
      itl_.push_back(t - last_);
    last_ = t;
    ++num_chunks_;
  }

  /// Writes the outcome into `r`: success needs a chunk with choices, [DONE] and no error;
  /// with `ignore_eos` the token count must equal r.expected_output_len. The token count is
  /// usage.completion_tokens when the server sent it, else the number of chunks.
  void finish(request_result& r, bool ignore_eos) const {
    r.output_tokens = usage_tokens_ >= 0 ? usage_tokens_ : num_chunks_;
    r.ttft = ttft_;
    r.latency = last_;
    r.itl = itl_;
    r.error = error_;
    if (r.error.empty() && num_chunks_ == 0) r.error = "no chunk with choices arrived";
    if (r.error.empty() && !done_) r.error = "stream ended without data: [DONE]";
    if (r.error.empty() && ignore_eos && r.output_tokens != r.expected_output_len) {
      r.error = "expected " + std::to_string(r.expected_output_len) + " tokens, got " +
                std::to_string(r.output_tokens);
    }
    r.success = r.error.empty();
  }

 private:
  int num_chunks_ = 0;
  int usage_tokens_ = -1;  // -1 until a usage object arrives
  double ttft_ = 0, last_ = 0;
  std::vector<double> itl_;
  bool done_ = false;
  std::string error_;
};

}  // namespace actorllm::bench::serve

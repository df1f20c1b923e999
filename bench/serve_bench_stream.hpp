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

/// What the load generator needs from one chunk, read with nlohmann's SAX interface: no DOM
/// is built, so a chunk costs a scan and no allocations (the client shares the server's cores,
/// and a lighter client disturbs the measurement less). Only the top level is interpreted:
/// whether "choices" holds an entry, usage.completion_tokens, and whether "error" is present.
struct chunk_summary {
  bool is_object = false;  // false also for malformed JSON
  bool has_error = false;
  bool has_choice = false;
  int usage_tokens = -1;  // -1: no usage object with an integer completion_tokens
};

class chunk_summary_reader final : public nlohmann::json_sax<nlohmann::json> {
 public:
  static chunk_summary read(std::string_view payload) {
    chunk_summary_reader reader;
    const bool ok = nlohmann::json::sax_parse(payload, &reader);
    if (!ok) reader.summary_.is_object = false;
    return reader.summary_;
  }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t n) override { return count(n); }
  bool number_unsigned(number_unsigned_t n) override { return count(static_cast<int64_t>(n)); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    if (depth_ == 0) summary_.is_object = true;
    value();
    ++depth_;
    return true;
  }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override {
    value();
    if (depth_ == 1 && top_key_ == top::choices) choices_is_array_ = true;
    ++depth_;
    return true;
  }
  bool end_array() override { return --depth_, true; }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      top_key_ = k == "choices" ? top::choices : k == "usage" ? top::usage : top::other;
      choices_is_array_ = false;
      if (k == "error") summary_.has_error = true;
    } else if (depth_ == 2) {
      in_completion_tokens_ = top_key_ == top::usage && k == "completion_tokens";
    }
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  enum class top { other, choices, usage };

  /// Called as any value starts, at the depth it sits in.
  bool value() {
    if (depth_ == 2 && top_key_ == top::choices && choices_is_array_) summary_.has_choice = true;
    return true;
  }
  bool count(int64_t n) {
    if (depth_ == 2 && top_key_ == top::usage && in_completion_tokens_)
      summary_.usage_tokens = static_cast<int>(n);
    return value();
  }

  chunk_summary summary_;
  int depth_ = 0;
  top top_key_ = top::other;
  bool choices_is_array_ = false;  // the value of the current top-level key is an array
  bool in_completion_tokens_ = false;
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
    const chunk_summary chunk = chunk_summary_reader::read(payload);
    if (!chunk.is_object) {
      error_ = "chunk is not a JSON object: " + std::string(payload.substr(0, 200));
      return;
    }
    if (chunk.has_error) {  // rare: worth a full parse for the message
      error_ = "error in stream: " + nlohmann::json::parse(payload)["error"].dump();
      return;
    }
    if (chunk.usage_tokens >= 0) usage_tokens_ = chunk.usage_tokens;
    if (!chunk.has_choice) return;
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

#pragma once
/// Per-request measurements of the serving benchmark and their summary, computed as vLLM's
/// benchmark_serving does: TTFT, TPOT = (E2E - TTFT) / (output tokens - 1), ITL (gaps between
/// streamed chunks), E2E; throughputs over the whole run; goodput against SLOs.
/// Plain C++ and JSON, so that the unit tests need neither a network nor a tokenizer.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace actorllm::bench::serve {

/// What one streamed request measured. Times are seconds since the request was started
/// (before the connection opened, as vLLM starts its clock before the POST).
struct request_result {
  bool success = false;
  std::string error;            // why it failed; empty on success
  int prompt_len = 0;           // tokens of the prompt, from the dataset
  int expected_output_len = 0;  // max_tokens asked for
  int output_tokens = 0;        // usage.completion_tokens, else the number of chunks
  double ttft = 0;              // arrival of the first chunk with choices
  double latency = 0;           // E2E: arrival of the last chunk with choices
  std::vector<double> itl;      // gaps between consecutive chunks with choices
};

/// Service-level objectives for goodput, in milliseconds; an absent one is not checked.
struct goodput_slo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};

/// Parses vLLM's `--goodput` items ("ttft:500", "tpot:50", "e2el:2000") into `slo`.
/// Returns an error message for an unknown key or a value that is not a non-negative number.
inline std::string parse_goodput_item(const std::string& item, goodput_slo& slo) {
  const auto colon = item.find(':');
  if (colon == std::string::npos) return "goodput item '" + item + "' is not KEY:MS";
  const std::string key = item.substr(0, colon);
  double ms = -1;
  std::istringstream in(item.substr(colon + 1));
  if (!(in >> ms) || !in.eof() || ms < 0) return "goodput value in '" + item + "' is not ms >= 0";
  if (key == "ttft")
    slo.ttft_ms = ms;
  else if (key == "tpot")
    slo.tpot_ms = ms;
  else if (key == "e2el")
    slo.e2el_ms = ms;
  else
    return "goodput key '" + key + "' is not one of ttft, tpot, e2el";
  return {};
}

/// The q-th percentile (0..100) of `values`, interpolated linearly between the closest ranks
/// like numpy.percentile; 0 for no values (vLLM reports 0 there too).
inline double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (rank - static_cast<double>(lo));
}

/// Mean, median, population standard deviation and percentiles of one latency, in ms.
struct latency_stats {
  double mean = 0, median = 0, std = 0, p90 = 0, p99 = 0;
};

/// Statistics of `seconds`, converted to milliseconds.
inline latency_stats summarize_ms(const std::vector<double>& seconds) {
  latency_stats s;
  if (seconds.empty()) return s;
  double sum = 0;
  for (double v : seconds) sum += v;
  s.mean = sum / static_cast<double>(seconds.size()) * 1e3;
  double var = 0;
  for (double v : seconds) var += (v * 1e3 - s.mean) * (v * 1e3 - s.mean);
  s.std = std::sqrt(var / static_cast<double>(seconds.size()));
  s.median = percentile(seconds, 50) * 1e3;
  s.p90 = percentile(seconds, 90) * 1e3;
  s.p99 = percentile(seconds, 99) * 1e3;
  return s;
}

/// TPOT of a completed request in seconds: 0 when it produced at most one token.
inline double tpot_of(const request_result& r) {
  return r.output_tokens > 1 ? (r.latency - r.ttft) / (r.output_tokens - 1) : 0.0;
}

/// The whole run. Only completed requests count towards tokens and latencies.
struct summary {
  int completed = 0, failed = 0, good_completed = 0;
  double duration = 0;  // seconds from the first send to the last response
  int64_t total_input = 0, total_output = 0;
  double request_throughput = 0, request_goodput = 0, output_throughput = 0,
         total_token_throughput = 0;
  latency_stats ttft, tpot, itl, e2el;
};

/// Summarizes `results` of a run that took `duration` seconds; a request is good when it
/// completed and meets every objective in `slo`.
inline summary summarize(const std::vector<request_result>& results, double duration,
                         const goodput_slo& slo) {
  summary s;
  s.duration = duration;
  std::vector<double> ttfts, tpots, itls, e2els;
  for (const auto& r : results) {
    if (!r.success) {
      ++s.failed;
      continue;
    }
    ++s.completed;
    s.total_input += r.prompt_len;
    s.total_output += r.output_tokens;
    ttfts.push_back(r.ttft);
    tpots.push_back(tpot_of(r));
    e2els.push_back(r.latency);
    itls.insert(itls.end(), r.itl.begin(), r.itl.end());
    const bool good = (!slo.ttft_ms || r.ttft * 1e3 <= *slo.ttft_ms) &&
                      (!slo.tpot_ms || tpot_of(r) * 1e3 <= *slo.tpot_ms) &&
                      (!slo.e2el_ms || r.latency * 1e3 <= *slo.e2el_ms);
    if (good) ++s.good_completed;
  }
  if (duration > 0) {
    s.request_throughput = s.completed / duration;
    s.request_goodput = s.good_completed / duration;
    s.output_throughput = static_cast<double>(s.total_output) / duration;
    s.total_token_throughput = static_cast<double>(s.total_input + s.total_output) / duration;
  }
  s.ttft = summarize_ms(ttfts);
  s.tpot = summarize_ms(tpots);
  s.itl = summarize_ms(itls);
  s.e2el = summarize_ms(e2els);
  return s;
}

/// The summary under vLLM's result-JSON keys (mean_ttft_ms, p99_itl_ms, ...).
inline nlohmann::json to_json(const summary& s) {
  nlohmann::json j = {
      {"completed", s.completed},
      {"failed", s.failed},
      {"duration", s.duration},
      {"total_input_tokens", s.total_input},
      {"total_output_tokens", s.total_output},
      {"request_throughput", s.request_throughput},
      {"request_goodput", s.request_goodput},
      {"good_completed", s.good_completed},
      {"output_throughput", s.output_throughput},
      {"total_token_throughput", s.total_token_throughput},
  };
  const std::map<std::string, const latency_stats*> metrics = {
      {"ttft", &s.ttft}, {"tpot", &s.tpot}, {"itl", &s.itl}, {"e2el", &s.e2el}};
  for (const auto& [name, m] : metrics) {
    j["mean_" + name + "_ms"] = m->mean;
    j["median_" + name + "_ms"] = m->median;
    j["std_" + name + "_ms"] = m->std;
    j["p90_" + name + "_ms"] = m->p90;
    j["p99_" + name + "_ms"] = m->p99;
  }
  return j;
}

}  // namespace actorllm::bench::serve

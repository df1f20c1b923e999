#pragma once
/// What clients of an engine_system see, for tests that watch many streams at once: each
/// request's tokens per choice and its final delta, and a series of the /metrics text.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "actors/system/engine_client.hpp"

namespace actorllm::testing {

/// The value of the series `name{...replica="R"...}` (and `extra` among its labels), or -1.
inline double gauge(const std::string& metrics, const std::string& name, int replica,
                    const std::string& extra = "") {
  std::istringstream lines(metrics);
  const std::string label = "replica=\"" + std::to_string(replica) + "\"";
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("actorllm:" + name + "{", 0) != 0) continue;
    if (line.find(label) == std::string::npos) continue;
    if (!extra.empty() && line.find(extra) == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

/// Streams of several requests, as a client sees them.
struct streams {
  std::mutex m;
  std::map<std::string, std::map<int32_t, std::vector<int32_t>>> tokens;  // id -> choice -> ids
  std::map<std::string, std::map<int32_t, request_output>> last;          // the final deltas
  std::atomic<int> num_open{0};

  std::map<std::string, int32_t> num_choices;

  void submit(engine_client& client, const generate_request& r) {
    num_open += std::max(1, r.params.n);
    {
      std::lock_guard lock(m);
      num_choices[r.request_id] = std::max(1, r.params.n);
    }
    client.submit(r, [this, id = r.request_id](request_output out) {
      std::lock_guard lock(m);
      auto& t = tokens[id][out.index];
      t.insert(t.end(), out.token_ids.begin(), out.token_ids.end());
      if (out.finish == finish_reason::error) {  // ends every choice of the request
        for (int32_t i = 0; i < num_choices[id]; ++i)
          if (!last[id].count(i)) last[id][i] = out, --num_open;
      } else if (out.finish != finish_reason::none) {
        last[id][out.index] = out;
        --num_open;
      }
    });
  }
  /// The fewest tokens any choice of any request has streamed (0 before every one started).
  size_t min_tokens() {
    std::lock_guard lock(m);
    size_t least = SIZE_MAX;
    for (auto& [id, n] : num_choices)
      for (int32_t i = 0; i < n; ++i) least = std::min(least, tokens[id][i].size());
    return num_choices.empty() ? 0 : least;
  }
  bool wait_done(std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (num_open > 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return num_open <= 0;
  }
};

}  // namespace actorllm::testing

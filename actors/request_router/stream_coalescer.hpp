#pragma once
/// Gathers a request's deltas until `interval` new tokens have accumulated (vLLM's and SGLang's
/// --stream-interval), so that when many clients stream, each message to the gateway, JSON
/// chunk and socket write carries several tokens instead of one. The first delta of a choice
/// (time to first token) and its last (the finish reason) go out at once; with interval 1
/// every delta goes out as it comes.
#include <cstdint>
#include <optional>
#include <vector>

#include "common/generate_request.hpp"

namespace actorllm {

class stream_coalescer {
 public:
  explicit stream_coalescer(int32_t interval) : interval_(interval) {}

  /// Takes one delta of choice delta.index; returns what to send now (the held deltas merged
  /// with this one, in order), or nothing while the choice's tokens are held back.
  std::optional<request_output> add(request_output delta);

 private:
  struct choice_state {
    std::optional<request_output> held;  ///< merged deltas not sent yet
    int32_t held_tokens = 0;
    bool started = false;  ///< its first delta has gone out
  };

  int32_t interval_;
  std::vector<choice_state> choices_;
};

}  // namespace actorllm

#pragma once
/// Waiting in tests for what another thread or actor does.
#include <chrono>
#include <thread>

namespace actorllm::testing {

/// Polls `done` every 5 ms until it holds (true) or `limit` has passed (false). The limit only
/// bounds a failing test: a passing one returns as soon as the condition holds.
template <class Predicate>
bool eventually(Predicate done, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace actorllm::testing

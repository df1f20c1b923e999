#pragma once
/// The live HTTP sessions of one server, so that a stopping server can end each in-flight
/// answer properly (a stream gets an error event and [DONE], an idle connection is closed)
/// instead of cutting it mid-body, and wait a bounded time for those last writes.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace actorllm::net {

class session_registry {
 public:
  /// Registers a session by the function that tells it the server is stopping (it must only
  /// post to the session's strand). Returns the key to remove it with.
  uint64_t add(std::function<void()> on_stop) {
    std::lock_guard lock(mutex_);
    stoppers_.emplace(next_, std::move(on_stop));
    return next_++;
  }

  void remove(uint64_t key) {
    std::lock_guard lock(mutex_);
    stoppers_.erase(key);
    if (stoppers_.empty()) empty_.notify_all();
  }

  /// Tells every registered session that the server is stopping.
  void stop_all() {
    std::vector<std::function<void()>> stoppers;
    {
      std::lock_guard lock(mutex_);
      for (const auto& [key, stop] : stoppers_) stoppers.push_back(stop);
    }
    for (auto& stop : stoppers) stop();
  }

  /// Waits until every session has ended, or `timeout`; true when all ended.
  bool wait_empty(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return empty_.wait_for(lock, timeout, [this] { return stoppers_.empty(); });
  }

 private:
  std::mutex mutex_;
  std::condition_variable empty_;
  std::unordered_map<uint64_t, std::function<void()>> stoppers_;
  uint64_t next_ = 0;
};

}  // namespace actorllm::net

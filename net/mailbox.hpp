#pragma once
/// Hand-off from engine threads to a session's strand. Engine callbacks may outlive the
/// session and even the server, so they hold only a mailbox and a gate, never the session.
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace actorllm::net {

/// Open while the server's I/O context exists. Work handed in from outside the server runs
/// under the shared lock, so close() waits for it and nothing is posted to a dead context.
class post_gate {
 public:
  /// Runs `fn` now if the gate is open; returns whether it ran.
  template <class F>
  bool run_if_open(F&& fn) {
    std::shared_lock lock(mutex_);
    if (!open_) return false;
    std::forward<F>(fn)();
    return true;
  }
  void close() {
    std::unique_lock lock(mutex_);
    open_ = false;
  }

 private:
  std::shared_mutex mutex_;
  bool open_ = true;
};

/// A queue filled from any thread and emptied by its owner. `wake` runs once per batch (on
/// the push that finds the box idle), so a burst of deltas costs one post and one write.
template <class T>
class mailbox {
 public:
  explicit mailbox(std::function<void()> wake) : wake_(std::move(wake)) {}

  void push(T item) {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
      wake = !wake_pending_;
      wake_pending_ = true;
    }
    if (wake) wake_();
  }

  /// Everything queued so far; the next push wakes the owner again.
  std::vector<T> take() {
    std::lock_guard lock(mutex_);
    wake_pending_ = false;
    return std::exchange(items_, {});
  }

 private:
  std::function<void()> wake_;
  std::mutex mutex_;
  std::vector<T> items_;
  bool wake_pending_ = false;
};

}  // namespace actorllm::net

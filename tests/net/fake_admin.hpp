#pragma once
/// An admin_port for the network tests: two replicas to start with (0 on cuda:0 serving, 1 on
/// cpu serving), added ones start at id 2. It answers from a thread of its own, as the engine
/// does, and records every call ("add 2 cuda:1", "drain 1", "stop 0") for the tests to check.
/// Unknown ids are 404; draining one that is not serving, or stopping a dead one, is 409.
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/admin_port.hpp"

namespace actorllm::testing {

class fake_admin : public admin_port {
 public:
  fake_admin() {
    replicas_.push_back({0, "cuda:0", 2, "serving", 3, 1, 0.25});
    replicas_.push_back({1, "cpu", 1, "serving", 0, 0, 0.0});
  }

  ~fake_admin() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

  void replicas(std::function<void(std::vector<replica_view>)> done) override {
    std::lock_guard lock(mutex_);
    calls_.push_back("list");
    answer([done, list = replicas_] { done(list); });
  }

  void add_replicas(int32_t count, std::string device,
                    std::function<void(admin_outcome)> done) override {
    std::lock_guard lock(mutex_);
    calls_.push_back("add " + std::to_string(count) + " " + device);
    admin_outcome outcome{202, {}, {}};
    for (int32_t i = 0; i < count; ++i) {
      const auto id = static_cast<int32_t>(replicas_.size());
      replicas_.push_back({id, device.empty() ? "cpu" : device, 1, "starting", 0, 0, 0.0});
      outcome.ids.push_back(id);
    }
    answer([done, outcome] { done(outcome); });
  }

  void drain_replica(int32_t id, std::function<void(admin_outcome)> done) override {
    change(id, "drain", "serving", "draining", std::move(done));
  }

  void stop_replica(int32_t id, std::function<void(admin_outcome)> done) override {
    change(id, "stop", "", "dead", std::move(done));
  }

  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  /// Moves replica `id` to state `to`; `from` empty: from any state but `to`.
  void change(int32_t id, const std::string& verb, const std::string& from, const std::string& to,
              std::function<void(admin_outcome)> done) {
    std::lock_guard lock(mutex_);
    calls_.push_back(verb + " " + std::to_string(id));
    admin_outcome outcome{202, {}, {}};
    if (id < 0 || id >= static_cast<int32_t>(replicas_.size())) {
      outcome = {404, "no replica " + std::to_string(id), {}};
    } else if (from.empty() ? replicas_[id].state == to : replicas_[id].state != from) {
      outcome = {409, "replica " + std::to_string(id) + " is " + replicas_[id].state, {}};
    } else {
      replicas_[id].state = to;
    }
    answer([done, outcome] { done(outcome); });
  }

  /// Runs `fn` on a fresh thread (the caller holds mutex_).
  void answer(std::function<void()> fn) { threads_.emplace_back(std::move(fn)); }

  mutable std::mutex mutex_;
  std::vector<replica_view> replicas_;
  std::vector<std::string> calls_;
  std::vector<std::thread> threads_;
};

}  // namespace actorllm::testing

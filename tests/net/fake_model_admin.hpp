#pragma once
/// A model_admin_port for the network and command tests: "qwen" loaded (2 requests in flight),
/// "llama" unloaded and "old" failed, to start with. It answers from a thread of its own, as
/// the engines do, and records every call ("list", "load qwen /m {}", "unload qwen") for the
/// tests to check. A load of an unknown name needs a path (else 400) and adds the model; a
/// load of one loaded, loading or draining is 409; an unload of an unknown name is 404, of one
/// not loaded 409.
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/model_admin_port.hpp"

namespace actorllm::testing {

class fake_model_admin : public model_admin_port {
 public:
  fake_model_admin() {
    models_.push_back(
        {"qwen", "/models/qwen3", "loaded", "", int64_t{3} << 29, int64_t{1} << 28, 2, 0.0});
    models_.push_back({"llama", "/models/llama", "unloaded", "", 4096, 0, 0, 0.0});
    models_.push_back({"old", "/models/old", "failed", "config.json: no such file", 0, 0, 0, 0.0});
  }

  ~fake_model_admin() override {
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& t : threads) t.join();
  }

  void models(std::function<void(std::vector<model_view>)> done) override {
    std::lock_guard lock(mutex_);
    calls_.push_back("list");
    answer([done, list = models_] { done(list); });
  }

  void load_model(load_model_request request, std::function<void(admin_outcome)> done) override {
    std::lock_guard lock(mutex_);
    calls_.push_back("load " + request.name + " " + request.path + " " + request.flags_json);
    admin_outcome outcome{202, {}, {}};
    model_view* model = find(request.name);
    if (!model && request.path.empty()) {
      outcome = {400, "model '" + request.name + "' is not served here: give its path", {}};
    } else if (!model) {
      models_.push_back({request.name, request.path, "loading", "", 0, 0, 0, 0.0});
    } else if (model->state != "unloaded" && model->state != "failed") {
      outcome = {409, "model '" + request.name + "' is " + model->state, {}};
    } else {
      model->state = "loading";
      model->error.clear();
    }
    answer([done, outcome] { done(outcome); });
  }

  void unload_model(std::string name, std::function<void(admin_outcome)> done) override {
    std::lock_guard lock(mutex_);
    calls_.push_back("unload " + name);
    admin_outcome outcome{202, {}, {}};
    model_view* model = find(name);
    if (!model)
      outcome = {404, "no model '" + name + "'", {}};
    else if (model->state != "loaded")
      outcome = {409, "model '" + name + "' is " + model->state, {}};
    else
      model->state = "draining";
    answer([done, outcome] { done(outcome); });
  }

  std::vector<std::string> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  /// The model named `name`, or null (the caller holds mutex_).
  model_view* find(const std::string& name) {
    for (auto& m : models_)
      if (m.name == name) return &m;
    return nullptr;
  }

  /// Runs `fn` on a fresh thread (the caller holds mutex_).
  void answer(std::function<void()> fn) { threads_.emplace_back(std::move(fn)); }

  mutable std::mutex mutex_;
  std::vector<model_view> models_;
  std::vector<std::string> calls_;
  std::vector<std::thread> threads_;
};

}  // namespace actorllm::testing

#include "api/model_usage.hpp"

#include <algorithm>
#include <set>

namespace actorllm::api {

void model_usage::on_idle(std::function<void(const std::string&)> callback) {
  std::lock_guard lock(mutex_);
  on_idle_ = std::move(callback);
}

std::function<void(request_output)> model_usage::begin(
    const std::string& id, const std::string& model, int32_t n,
    std::function<void(request_output)> on_output) {
  {
    std::lock_guard lock(mutex_);
    if (running_.emplace(id, model).second) {
      auto& m = models_[model];
      ++m.in_flight;
      m.last_used = clock::now();
    }
  }
  // The choices that have ended; once all have (or one failed) the request has.
  struct progress {
    std::mutex mutex;
    std::set<int32_t> finished;
    bool ended = false;
  };
  auto seen = std::make_shared<progress>();
  const auto choices = static_cast<std::size_t>(std::max(1, n));
  return [self = shared_from_this(), id, choices, seen,
          on_output = std::move(on_output)](request_output out) {
    bool ends = false;
    if (out.finish != finish_reason::none) {
      std::lock_guard lock(seen->mutex);
      seen->finished.insert(out.index);
      if (!seen->ended && (out.finish == finish_reason::error || seen->finished.size() >= choices))
        ends = seen->ended = true;
    }
    on_output(std::move(out));
    if (ends) self->end(id);
  };
}

bool model_usage::end(const std::string& id) {
  std::string idle_model;
  std::function<void(const std::string&)> callback;
  {
    std::lock_guard lock(mutex_);
    const auto it = running_.find(id);
    if (it == running_.end()) return false;
    auto& m = models_[it->second];
    m.in_flight = std::max(0, m.in_flight - 1);
    m.last_used = clock::now();
    if (m.in_flight == 0) idle_model = it->second, callback = on_idle_;
    running_.erase(it);
  }
  if (callback) callback(idle_model);
  return true;
}

std::optional<std::string> model_usage::model_of(const std::string& id) const {
  std::lock_guard lock(mutex_);
  const auto it = running_.find(id);
  if (it == running_.end()) return std::nullopt;
  return it->second;
}

int32_t model_usage::in_flight(const std::string& model) const {
  std::lock_guard lock(mutex_);
  const auto it = models_.find(model);
  return it == models_.end() ? 0 : it->second.in_flight;
}

double model_usage::idle_seconds(const std::string& model, clock::time_point now) const {
  std::lock_guard lock(mutex_);
  const auto it = models_.find(model);
  if (it == models_.end()) return 0;
  if (it->second.in_flight > 0) return 0;
  return std::chrono::duration<double>(now - it->second.last_used).count();
}

void model_usage::touch(const std::string& model) {
  std::lock_guard lock(mutex_);
  models_[model].last_used = clock::now();
}

}  // namespace actorllm::api

// Background Responses calls: each one's deltas folded under its own lock, its states stored.
#include "api/background_responses.hpp"

#include <utility>
#include <vector>

#include "api/admission.hpp"
#include "api/response_store.hpp"

namespace actorllm::api {

using nlohmann::json;

/// One running call. Deltas that arrive before the call is attached (the engine may answer
/// before start_call returns) wait in `early_`.
class background_responses::job {
 public:
  job(engine_port& engine, std::shared_ptr<response_store> store, json input_items,
      std::weak_ptr<background_responses> owner)
      : engine_(engine),
        store_(std::move(store)),
        input_items_(std::move(input_items)),
        owner_(std::move(owner)) {}

  void attach(std::unique_ptr<openai_call> call) {
    std::string finished;
    {
      std::lock_guard lock(mutex_);
      call_ = std::move(call);
      for (const auto& out : early_)
        if (!ended_ && feed_locked(out)) finished = call_->options().id;
      early_.clear();
    }
    if (!finished.empty()) forget(finished);
  }

  void on_output(request_output out) {
    std::string finished;
    {
      std::lock_guard lock(mutex_);
      if (ended_) return;
      if (!call_) return early_.push_back(std::move(out));
      if (feed_locked(out)) finished = call_->options().id;
    }
    if (!finished.empty()) forget(finished);
  }

  /// Ends the call with `status` (and `error`, when not empty) unless it has ended: stores
  /// what was generated so far and aborts its engine request.
  std::optional<json> end(const std::string& status, const std::string& error) {
    std::vector<std::string> engine_ids;
    json object;
    {
      std::lock_guard lock(mutex_);
      if (ended_ || !call_) return std::nullopt;
      ended_ = true;
      object = call_->partial_response_object(status);
      if (!error.empty()) object["error"] = {{"code", "server_error"}, {"message", error}};
      store_->put({object, input_items_});
      engine_ids = call_->engine_ids();
    }
    for (const auto& id : engine_ids) engine_.abort(id);  // its KV blocks come back
    return object;
  }

  bool ended() const {
    std::lock_guard lock(mutex_);
    return ended_;
  }

 private:
  /// Feeds one delta; stores the call as in_progress at its first, and its final object at
  /// its last. Returns whether the call has ended.
  bool feed_locked(const request_output& out) {
    std::vector<std::string> chunks;  // not streamed: stays empty
    call_->add(out, chunks);
    if (call_->done()) {
      ended_ = true;
      store_->put({final_object(), input_items_});
      return true;
    }
    if (!running_) {
      running_ = true;
      store_->put({call_->pending_response_object("in_progress"), input_items_});
    }
    return false;
  }

  json final_object() const {
    if (!call_->failed()) return call_->response_object();
    const api_error& error = *call_->error();
    json object = call_->pending_response_object("failed");
    object["error"] = {{"code", error.code.empty() ? "server_error" : error.code},
                       {"message", error.message}};
    return object;
  }

  void forget(const std::string& id) const {
    if (auto owner = owner_.lock()) owner->forget(id);
  }

  engine_port& engine_;
  std::shared_ptr<response_store> store_;
  const json input_items_;
  std::weak_ptr<background_responses> owner_;
  mutable std::mutex mutex_;
  std::unique_ptr<openai_call> call_;
  std::vector<request_output> early_;
  bool running_ = false;  // stored as in_progress
  bool ended_ = false;    // finished, failed or cancelled: later deltas are dropped
};

background_responses::background_responses(std::shared_ptr<response_store> store)
    : store_(std::move(store)) {}

std::variant<json, api_error> background_responses::start(server_context& context,
                                                          openai_request request,
                                                          const model_info& model) {
  request.stream = false;
  const json input_items = request.responses.input_items;
  auto running = std::make_shared<job>(context.engine, store_, input_items, weak_from_this());
  auto call = start_call(context, std::move(request), model, {},
                         [running](request_output out) { running->on_output(std::move(out)); });
  const std::string id = call->options().id;
  const json queued = call->pending_response_object("queued");
  if (!store_->put({queued, input_items})) {
    abort_call(context, *call);
    return bad_request(
        "this response cannot be kept (see --responses-store-max-items and "
        "--responses-store-max-bytes), so it cannot run in the background",
        "background");
  }
  running->attach(std::move(call));
  std::lock_guard lock(mutex_);
  // A call that ended within attach() has been forgotten already; one that ends from now on
  // finds itself here when it forgets.
  if (!running->ended()) running_[id] = running;
  return queued;
}

std::optional<json> background_responses::cancel(const std::string& id) {
  std::shared_ptr<job> running;
  {
    std::lock_guard lock(mutex_);
    auto it = running_.find(id);
    if (it == running_.end()) return std::nullopt;
    running = it->second;
  }
  auto object = running->end("cancelled", {});
  forget(id);
  return object;
}

void background_responses::abort_all(const std::string& reason) {
  std::unordered_map<std::string, std::shared_ptr<job>> all;
  {
    std::lock_guard lock(mutex_);
    all.swap(running_);
  }
  for (auto& [id, running] : all) running->end("failed", reason);
}

void background_responses::forget(const std::string& id) {
  std::lock_guard lock(mutex_);
  running_.erase(id);
}

std::size_t background_responses::num_running() const {
  std::lock_guard lock(mutex_);
  return running_.size();
}

}  // namespace actorllm::api

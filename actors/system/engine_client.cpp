#include "actors/system/engine_client.hpp"

#include <condition_variable>

#include "actors/http_gateway/http_gateway_actor.hpp"
#include "actors/system/actor_thread_release.hpp"
#include "common/output_merge.hpp"

namespace actorllm {

engine_client::engine_client(caf::actor_system& system, router_actor router, model_info info,
                             engine_monitoring* monitoring, std::shared_ptr<lora_registry> loras,
                             bool lora_runtime_updates)
    : system_(system),
      router_(router),
      info_(std::move(info)),
      monitoring_(monitoring),
      loras_(std::move(loras)),
      lora_runtime_updates_(lora_runtime_updates) {
  const actor_thread_release release;
  delivery_->client = this;
  gateway_ = system_.spawn<caf::detached>(
      http_gateway, router_,
      [to = delivery_](std::vector<request_output>& outs) {
        std::lock_guard lock(to->mutex);
        if (to->client) to->client->deliver(outs);
      },
      monitoring_ ? monitoring_->probe_for("http_gateway") : mailbox_probe{});
}

engine_client::~engine_client() {
  {
    // The gateway may be delivering outputs on its thread right now: it finishes first, and
    // delivers nothing after.
    std::lock_guard lock(delivery_->mutex);
    delivery_->client = nullptr;
  }
  caf::anon_send_exit(gateway_, caf::exit_reason::user_shutdown);
}

model_info engine_client::model() const {
  model_info info = info_;
  if (loras_)
    for (const auto& a : loras_->list()) info.adapters.push_back({a.name, a.path});
  return info;
}

lora_update_result engine_client::load_lora_adapter(const lora_update_request& r) {
  if (!loras_ || !lora_runtime_updates_) return engine_port::load_lora_adapter(r);
  // info_ holds the model's own names; the adapters are the registry's.
  if (info_.answers_to(r.name)) return {"'" + r.name + "' is the base model's name", 400};
  try {
    loras_->load(r.name, r.path);
  } catch (const std::exception& e) {
    return {e.what(), 400};
  }
  return {};
}

lora_update_result engine_client::unload_lora_adapter(const std::string& name) {
  if (!loras_ || !lora_runtime_updates_) return engine_port::unload_lora_adapter(name);
  if (!loras_->unload(name)) return {"no LoRA adapter is loaded as '" + name + "'", 404};
  return {};
}

void engine_client::submit(generate_request request, output_callback on_output) {
  {
    std::lock_guard lock(mutex_);
    pending_[request.request_id] = {std::move(on_output), std::max(1, request.params.n), false};
  }
  ++num_waiting_;
  caf::anon_send(gateway_, generate_atom::value, std::move(request));
}

void engine_client::abort(const std::string& request_id) {
  caf::anon_send(gateway_, abort_atom::value, request_id);
}

void engine_client::deliver(std::vector<request_output>& outputs) {
  for (auto& out : outputs) {
    output_callback callback;
    {
      std::lock_guard lock(mutex_);
      auto it = pending_.find(out.request_id);
      if (it == pending_.end()) continue;
      if (!it->second.started) {
        it->second.started = true;
        --num_waiting_;
      }
      callback = it->second.callback;
      // An error ends the whole request; otherwise each choice ends on its own.
      if (out.finish == finish_reason::error ||
          (out.finish != finish_reason::none && --it->second.num_open_choices <= 0))
        pending_.erase(it);
    }
    if (callback) callback(std::move(out));
  }
}

engine_health engine_client::health() const {
  if (!healthy_.load()) return {false, "the engine is not running"};
  if (!monitoring_) return {};
  // Serving while any replica serves (the router sends every request there); the replicas
  // that do not are named either way.
  std::string problems = monitoring_->health_problems();
  if (monitoring_->num_serving_replicas() > 0) return {true, std::move(problems)};
  return {false, problems.empty() ? "no replica serves the model (each was drained or stopped)"
                                  : "no replica serves the model: " + problems};
}

std::size_t engine_client::num_in_flight() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

void engine_client::tokenize(generate_request request, std::function<void(tokenize_result)> done) {
  const actor_thread_release release;  // net/'s I/O threads spawn the asking actor
  const int32_t max_len = info_.max_model_len;
  // The router goes in as a spawn argument: CAF 0.17 binds a null argument tuple when a
  // function actor takes none (undefined behaviour that UBSan reports).
  system_.spawn(
      [=](caf::event_based_actor* self, router_actor router) {
        self->request(router, std::chrono::seconds(30), tokenize_atom::value, request)
            .then(
                [=](tokenize_reply& r) {
                  tokenize_result out;
                  out.tokens = std::move(r.tokens);
                  out.max_model_len = max_len;
                  out.error_status = r.error.empty() ? 0 : r.status;
                  out.error = std::move(r.error);
                  done(std::move(out));
                },
                [=](caf::error& e) {
                  tokenize_result out;
                  out.error = "engine unavailable: " + to_string(e);
                  out.error_status = 503;
                  done(std::move(out));
                });
      },
      router_);
}

void engine_client::detokenize(detokenize_request request,
                               std::function<void(detokenize_result)> done) {
  const actor_thread_release release;  // net/'s I/O threads spawn the asking actor
  system_.spawn(
      [tokens = std::move(request.tokens), done](caf::event_based_actor* self,
                                                 router_actor router) {
        self->request(router, std::chrono::seconds(30), detok_atom::value, tokens)
            .then(
                [=](std::string& text) {
                  done({std::move(text), {}, 0});
                },
                [=](caf::error& e) {
                  // The router's refusal of an id outside the vocabulary is the client's mistake.
                  if (e == caf::sec::invalid_argument && e.context().match_elements<std::string>())
                    return done({{}, e.context().get_as<std::string>(0), 400});
                  done({{}, "engine unavailable: " + to_string(e), 503});
                });
      },
      router_);
}

std::vector<std::vector<request_output>> engine_client::generate(
    const std::vector<generate_request>& requests) {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::vector<request_output>> merged(requests.size());
  size_t num_open = 0;
  std::vector<int32_t> remaining;  // open choices per request
  for (const auto& r : requests) {
    remaining.push_back(std::max(1, r.params.n));
    num_open += remaining.back();
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    submit(requests[i], [&, i](request_output out) {
      std::lock_guard lock(m);
      auto& choices = merged[i];
      merge_output(choices, out);
      if (out.finish == finish_reason::error) {
        num_open -= remaining[i];  // an error ends every choice
        remaining[i] = 0;
        for (auto& other : choices) other.finish = finish_reason::error;
      } else if (out.finish != finish_reason::none && remaining[i] > 0) {
        --remaining[i];
        --num_open;
      }
      if (num_open == 0) cv.notify_all();  // one wake-up at the end, not one per delta
    });
  }
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return num_open == 0; });
  return merged;
}

}  // namespace actorllm

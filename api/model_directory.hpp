#pragma once
/// The models of one server and the engine serving each: what a request's `model` picks, and
/// what /v1/models lists. It is an engine_port itself, so that net/ and the API reach every
/// model through the one door they already use: a request goes to the engine of the model it
/// names (the default model, the first added, when it names none), and a model that is not
/// loaded is refused with its state instead of reaching any engine.
///
/// A request for a model that is listed but not loaded waits for it (await_model) where the
/// server loads models on demand: the directory asks its demand loader to load it, and calls
/// the waiters back once it serves, failed, or the load timeout passed. Requests in flight are
/// counted per model (model_usage): what draining waits for and what eviction reads.
///
/// Thread-safe: the serve command adds models and changes their states while net/ threads
/// look them up. Plain C++: it knows engines only as engine_port.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "api/model_usage.hpp"
#include "common/engine_port.hpp"

namespace actorllm::api {

/// Why a request for a model that is listed but not loaded is refused (a 503), in one line
/// naming the model and its state ("... failed to load: <why>").
std::string model_refusal(const model_listing& model);

class model_directory final : public engine_port {
 public:
  /// At most this many models: bounds /v1/models, the lookups and what flags may start.
  static constexpr std::size_t max_models = 64;

  /// Adds model `name` (its weights in `root`) in state `state` (loading, unloaded). Returns
  /// why it cannot be added (empty: added): the name is empty, taken, or one model too many.
  std::string add(std::string name, std::string root, model_state state = model_state::loading);
  /// The model serves through `engine` (loaded). Calls run outside the directory's lock, each
  /// holding the engine, so a model may leave this state (set_failed, set_unloaded) while a
  /// call to it runs. False: no model of that name.
  bool set_loaded(std::string_view name, std::shared_ptr<engine_port> engine);
  /// The model failed to load (or its engine stopped): `why` in one line. False: unknown name.
  bool set_failed(std::string_view name, std::string why);
  /// The model is no longer served; its engine may go. False: unknown name.
  bool set_unloaded(std::string_view name);
  /// The model's weights load (requests for it wait). False: unknown name.
  bool set_loading(std::string_view name);
  /// What a request for a draining model meets.
  enum class drain_kind {
    refuse,  ///< a 503 with Retry-After: the model is being taken away (the admin API)
    reload,  ///< it waits, and the model loads again once unloaded (eviction, --keep-alive)
  };
  /// The model takes no new request, while those in flight finish on its engine; new ones are
  /// refused or wait for a reload, as `kind` says. False: unknown name, or it is not loaded.
  bool set_draining(std::string_view name, drain_kind kind = drain_kind::refuse);
  /// The state of model `name` (by served name alone), or nullopt.
  std::optional<model_state> state_of(std::string_view name) const;

  /// Loads models on demand: a request for an unloaded model marks it loading and calls
  /// `load(name)` (outside the lock; it must not block), and waits at most `timeout`.
  void set_demand_loader(std::function<void(const std::string&)> load,
                         std::chrono::milliseconds timeout);
  /// Calls back the waiters whose load timeout has passed (they are then refused as loading).
  void expire_waiters(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  /// The requests in flight on each model.
  model_usage& usage() { return *usage_; }

  /// At most this many requests wait for one model to load; more are refused at once.
  static constexpr std::size_t max_waiters_per_model = 4096;

  // engine_port
  void submit(generate_request request, output_callback on_output) override;
  void abort(const std::string& request_id) override;
  /// At once unless the model is loading, unloaded with a demand loader set (see above), or
  /// draining to be reloaded (it waits for the unload, then for the load).
  void await_model(std::string_view requested, std::function<void()> ready) override;
  void tokenize(generate_request request, std::function<void(tokenize_result)> done) override;
  /// The named model's tokenizer (no name: the default model's), waiting for a load as
  /// tokenize() does.
  void detokenize(detokenize_request request, std::function<void(detokenize_result)> done) override;
  /// While any model's engine is alive, or a model can still load on demand.
  bool healthy() const override;
  /// ok while any model serves; the reason names each model that does not, and why.
  engine_health health() const override;
  model_info model() const override;
  std::optional<model_listing> find_model(std::string_view requested) const override;
  std::vector<model_listing> models() const override;
  std::size_t num_models() const override;
  /// Loads into the model r.base_model names (empty: the default); unloads from the model that
  /// holds the adapter.
  lora_update_result load_lora_adapter(const lora_update_request& r) override;
  lora_update_result unload_lora_adapter(const std::string& name) override;
  /// The first loaded engine's: the engines of one directory share one metrics registry, each
  /// model's series told apart by their model_name label.
  std::string metrics_text() override;
  /// The default model's stats object with "models": one entry per model (name, state,
  /// error, and the stats of each loaded one).
  std::string engine_stats_json() override;
  void on_http_request(std::string_view path, int status) override;
  /// Summed over the loaded models.
  std::size_t num_waiting() const override;

 private:
  struct waiter {
    std::function<void()> ready;
    std::chrono::steady_clock::time_point deadline;
  };
  struct entry {
    std::string name;
    std::string root;
    model_state state = model_state::loading;
    std::string error;
    std::shared_ptr<engine_port> engine;  // set while loaded or draining
    std::vector<waiter> waiters;          // requests waiting for it to load
    /// Evicted (drain_kind::reload) and not yet loaded again: requests for it are admitted
    /// with `last_info` and wait for the reload.
    bool reloads = false;
    model_info last_info;
  };
  /// Sets `name`'s state under the lock and calls its waiters back outside it.
  bool change(std::string_view name, model_state state, std::string error,
              std::shared_ptr<engine_port> engine);
  /// Whether a request for `e` waits (await_model) instead of being answered now. Under mutex_.
  bool waits_for(const entry& e) const;
  /// Hands the request to its model's engine, or refuses it. A request that meets its model
  /// being reloaded (admitted a moment before an eviction) waits for the reload once, when
  /// `may_wait`, held in parked_ where abort() can still reach it.
  void route(generate_request request, output_callback on_output, bool may_wait);
  /// Calls `use` with the engine of `model` (empty: the default) while it serves; a model
  /// loading on demand or being reloaded is waited for once, when `may_wait`. Otherwise
  /// `refuse` gets the reason and its HTTP status: 404 for a name nothing answers to, 503 for a
  /// model that does not serve now.
  void with_engine(std::string model, bool may_wait, std::function<void(engine_port&)> use,
                   std::function<void(std::string, int32_t)> refuse);
  /// Whether models load on demand and any listed one could. Under mutex_.
  bool can_load_on_demand() const;
  /// The entry `requested` names: by served name first, then by what a loaded engine answers
  /// to (aliases, adapters); empty `requested`: the default. Null: none. Under mutex_.
  const entry* find(std::string_view requested) const;
  entry* find(std::string_view requested);
  template <class Entries>
  static auto* find_in(Entries& entries, std::string_view requested);
  entry* find_by_name(std::string_view name);
  /// A copy of the entry `requested` names (its engine held), or nullopt.
  std::optional<entry> lookup(std::string_view requested) const;
  /// The engines of the loaded models, the default's first.
  std::vector<std::shared_ptr<engine_port>> loaded_engines() const;
  static model_listing listing_of(const entry& e);

  mutable std::shared_mutex mutex_;
  std::vector<entry> entries_;  // in the order added; the first is the default model
  std::function<void(const std::string&)> demand_loader_;
  std::chrono::milliseconds load_timeout_{0};
  std::shared_ptr<model_usage> usage_ = std::make_shared<model_usage>();
  std::mutex parked_mutex_;  // after mutex_ where both are held
  /// Ids of requests waiting in route(). Each is a waiter of its model too, so the set is
  /// bounded by max_waiters_per_model per model (one await_model turns away leaves at once).
  std::unordered_set<std::string> parked_;
};

}  // namespace actorllm::api

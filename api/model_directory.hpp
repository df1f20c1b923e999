#pragma once
/// The models of one server and the engine serving each: what a request's `model` picks, and
/// what /v1/models lists. It is an engine_port itself, so that net/ and the API reach every
/// model through the one door they already use: a request goes to the engine of the model it
/// names (the default model, the first added, when it names none), and a model that is not
/// loaded is refused with its state instead of reaching any engine.
///
/// Thread-safe: the serve command adds models and changes their states while net/ threads
/// look them up. Plain C++: it knows engines only as engine_port.
#include <cstddef>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

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

  // engine_port
  void submit(generate_request request, output_callback on_output) override;
  void abort(const std::string& request_id) override;
  void tokenize(generate_request request, std::function<void(tokenize_result)> done) override;
  /// The default model's tokenizer (a /detokenize body names no model).
  void detokenize(std::vector<int32_t> tokens,
                  std::function<void(detokenize_result)> done) override;
  /// While any model's engine is alive.
  bool healthy() const override;
  /// ok while any model serves; the reason names each model that does not, and why.
  engine_health health() const override;
  model_info model() const override;
  std::optional<model_listing> find_model(std::string_view requested) const override;
  std::vector<model_listing> models() const override;
  std::size_t num_models() const override;
  /// Loads into the default model; unloads from the model that holds the adapter.
  lora_update_result load_lora_adapter(const std::string& name, const std::string& path) override;
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
  struct entry {
    std::string name;
    std::string root;
    model_state state = model_state::loading;
    std::string error;
    std::shared_ptr<engine_port> engine;  // set while loaded
  };
  /// The entry `requested` names: by served name first, then by what a loaded engine answers
  /// to (aliases, adapters); empty `requested`: the default. Null: none. Under mutex_.
  const entry* find(std::string_view requested) const;
  entry* find_by_name(std::string_view name);
  /// A copy of the entry `requested` names (its engine held), or nullopt.
  std::optional<entry> lookup(std::string_view requested) const;
  /// The engines of the loaded models, the default's first.
  std::vector<std::shared_ptr<engine_port>> loaded_engines() const;
  static model_listing listing_of(const entry& e);

  mutable std::shared_mutex mutex_;
  std::vector<entry> entries_;  // in the order added; the first is the default model
};

}  // namespace actorllm::api

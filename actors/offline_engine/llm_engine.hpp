#pragma once
/// The engine without actors: the readable spine of the system. One step is
///
///   plan = scheduler.schedule();  result = runner.execute(plan);  outputs =
///   scheduler.update(result);
///
/// followed by the router's post-processing (detokenization, stop strings). The actor system
/// runs exactly these cores, spread over the router, scheduler, cache_engine and worker actors.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/engine_setup/engine_setup.hpp"
#include "actors/request_router/output_processor.hpp"

namespace actorllm {

class llm_engine {
 public:
  explicit llm_engine(engine_setup setup);

  /// Queues a request. Returns a final output with finish_reason::error (and the HTTP status)
  /// when the request is refused.
  std::optional<request_output> add_request(const generate_request& request);
  /// Runs one step; returns the client deltas it produced.
  std::vector<request_output> step();
  bool has_work() const { return scheduler_.has_work(); }
  /// Aborts a request; returns its final outputs.
  std::vector<request_output> abort(const std::string& request_id);

  const engine_setup& setup() const { return setup_; }
  scheduler_stats stats() const { return scheduler_.stats(); }
  scheduler& core_scheduler() { return scheduler_; }
  /// The model runner's own time on all steps so far (the rest is the engine's overhead).
  double worker_busy_seconds() const { return worker_busy_seconds_; }

 private:
  std::vector<request_output> post_process(std::vector<request_output> raw);

  engine_setup setup_;
  prompt_builder prompts_;
  scheduler scheduler_;
  model_runner runner_;
  std::map<std::string, output_processor> processors_;
  /// The LoRA adapter of each request that has one, held until the request ends (as the router
  /// holds it): unloaded meanwhile, it stays for the request.
  std::map<std::string, std::shared_ptr<const lora_adapter>> adapters_;
  double worker_busy_seconds_ = 0;
};

/// Runs requests to completion and returns, per request, all its outputs merged per choice
/// (text and token ids concatenated, the last finish reason). For `generate` and tests.
std::vector<std::vector<request_output>> run_to_completion(
    llm_engine& engine, const std::vector<generate_request>& requests);

}  // namespace actorllm

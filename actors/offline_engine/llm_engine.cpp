#include "actors/offline_engine/llm_engine.hpp"

#include <stdexcept>

#include "actors/gpu_worker/draft_model_proposer.hpp"
#include "common/output_merge.hpp"

namespace actorllm {

llm_engine::llm_engine(engine_setup setup)
    : setup_(std::move(setup)),
      prompts_(setup_.make_prompt_builder()),
      scheduler_(setup_.scheduler),
      runner_(setup_.model, setup_.runner, setup_.make_backend()) {
  // One model_runner holds one shard: the spine has no peers to sum partial activations with.
  if (setup_.shards.size() > 1)
    throw std::runtime_error(
        "the actor-free engine runs without tensor parallelism (--tensor-parallel-size 1)");
  attach_draft_model(runner_, *setup_.backend, setup_.runner, setup_.model->config().vocab_size);
}

std::optional<request_output> llm_engine::add_request(const generate_request& request) {
  const prepared_prompt prompt = prompts_.prepare(request);
  if (!prompt.ok())
    return error_output(request.request_id, prompt.error, prompt.status, prompt.error_param);
  sampling_params params = request.params;
  params.lora_id = prompt.adapter ? prompt.adapter->id : 0;
  if (auto error = scheduler_.add_request(request.request_id, prompt.token_ids, params)) {
    const int32_t status = error->kind == admission_error::code::queue_full ? 503 : 400;
    return error_output(request.request_id, error->message, status);
  }
  processors_.insert_or_assign(request.request_id,
                               output_processor(setup_.tok, request, prompt.token_ids));
  if (prompt.adapter) adapters_[request.request_id] = prompt.adapter;
  return std::nullopt;
}

std::vector<request_output> llm_engine::post_process(std::vector<request_output> raw) {
  std::vector<request_output> deltas;
  std::vector<std::string> to_abort;
  for (auto& out : raw) {
    auto it = processors_.find(out.request_id);
    if (it == processors_.end()) continue;
    if (auto delta = it->second.process(std::move(out))) deltas.push_back(std::move(*delta));
    if (it->second.all_choices_finished()) to_abort.push_back(it->first);
  }
  for (const auto& id : to_abort) {
    scheduler_.abort(id);  // frees the blocks; the choices already ended (stop or done)
    processors_.erase(id);
    adapters_.erase(id);
  }
  return deltas;
}

std::vector<request_output> llm_engine::step() {
  const step_plan plan = scheduler_.schedule();
  const step_result result = runner_.execute(plan);
  worker_busy_seconds_ += result.worker_seconds;
  return post_process(scheduler_.update(result));
}

std::vector<request_output> llm_engine::abort(const std::string& request_id) {
  return post_process(scheduler_.abort(request_id));
}

std::vector<std::vector<request_output>> run_to_completion(
    llm_engine& engine, const std::vector<generate_request>& requests) {
  std::map<std::string, size_t> slot;
  std::vector<std::vector<request_output>> merged(requests.size());
  auto merge = [&](const request_output& out) {
    merge_output(merged[slot.at(out.request_id)], out);
  };
  for (size_t i = 0; i < requests.size(); ++i) {
    slot[requests[i].request_id] = i;
    if (auto refused = engine.add_request(requests[i])) merge(std::move(*refused));
  }
  while (engine.has_work())
    for (auto& out : engine.step()) merge(std::move(out));
  return merged;
}

}  // namespace actorllm

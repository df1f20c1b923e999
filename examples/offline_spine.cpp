// The engine without actors, written out: one step is schedule -> execute -> update, then the
// router's post-processing. This is what the actor system distributes over its actors.
//
//   build/examples/example_offline_spine [MODEL]      (default ../shared/models/stories260K)
#include <cstdio>
#include <map>

#include "actors/engine_setup/engine_setup.hpp"
#include "actors/request_router/output_processor.hpp"

using namespace actorllm;

int main(int argc, char** argv) {
  engine_config config;
  config.model.model = argc > 1 ? argv[1] : "../shared/models/stories260K";
  const engine_setup setup = engine_setup::load(config);

  prompt_builder prompts = setup.make_prompt_builder();  // the router's core
  scheduler sched(setup.scheduler);                // the scheduler's core (with the block manager)
  model_runner runner(setup.model, setup.runner);  // the worker's core
  std::map<std::string, output_processor> post;    // the router's per-request state

  for (const char* text : {"Once upon a time", "The little dog", "Lily and Ben"}) {
    generate_request r;
    r.request_id = text;
    r.text = text;
    r.params.temperature = 0;
    r.params.max_tokens = 40;
    const prepared_prompt p = prompts.prepare(r);
    sched.add_request(r.request_id, p.token_ids, r.params);
    post.emplace(r.request_id, output_processor(setup.tok, r, p.token_ids));
  }

  std::map<std::string, std::string> texts;
  while (sched.has_work()) {
    const step_plan plan = sched.schedule();          // what to compute, within the token budget
    const step_result result = runner.execute(plan);  // one forward pass over the batch, sampling
    for (auto& out : sched.update(result))            // new tokens, finished requests
      if (auto delta = post.at(out.request_id).process(out)) texts[out.request_id] += delta->text;
  }
  for (const auto& [prompt, text] : texts) std::printf("%s%s\n\n", prompt.c_str(), text.c_str());
}

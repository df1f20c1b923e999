// A worker that stays alive but never answers a step (a frozen peer) does not hang its
// replica: the scheduler's watchdog ends the step after step_timeout and treats the workers as
// failed. Step requests carry no timeout of their own (each would sit in CAF 0.17's clock until
// it fired); one watchdog message at a time bounds them instead.
#include <gtest/gtest.h>

#include <caf/all.hpp>

#include "actors/cache_engine/cache_engine_actor.hpp"
#include "actors/scheduler/scheduler_actor.hpp"
#include "actors/system/engine_system.hpp"

namespace actorllm {
namespace {

// Each actor function takes an argument: CAF 0.17 binds a null argument tuple for a function
// that takes none (UBSan reports it).

/// Answers info, takes step plans and never answers them.
worker_actor::behavior_type silent_worker(worker_actor::pointer self, int32_t /*rank*/) {
  return {
      [self](step_atom, step_plan&) { return self->make_response_promise<step_result>(); },
      [](info_atom) { return worker_info{}; },
      [](sample_atom) {},
  };
}

replica_sink_actor::behavior_type ignoring_sink(replica_sink_actor::pointer, int32_t /*replica*/) {
  return {[](outputs_atom, std::vector<request_output>&) {},
          [](kv_events_atom, kv_cache_events&) {}};
}

TEST(scheduler_watchdog, a_worker_that_never_answers_a_step_fails_the_replica_after_the_timeout) {
  engine_actor_config config;
  caf::actor_system system{config};
  scheduler_options options;
  options.block_size = 4;
  options.num_device_blocks = 16;
  options.max_model_len = 64;
  scheduler_shell_options shell;
  shell.step_timeout = std::chrono::milliseconds(200);
  auto cache = system.spawn(cache_engine, std::function<void(const cache_report&, size_t)>(),
                            mailbox_probe{});
  auto scheduler = system.spawn(
      scheduler_shell, options, std::vector<worker_actor>{system.spawn(silent_worker, 0)}, cache,
      system.spawn(ignoring_sink, 0), worker_factory{}, scheduler_hooks{}, shell);
  caf::scoped_actor self{system};
  self->monitor(scheduler);
  sampling_params params;
  params.max_tokens = 4;
  const auto start = std::chrono::steady_clock::now();
  self->request(scheduler, std::chrono::seconds(5), add_atom::value,
                engine_request{"r", {1, 2, 3}, params, {}, {}, {}})
      .receive([](admission_reply& r) { EXPECT_TRUE(r.error.empty()) << r.error; },
               [](caf::error& e) { ADD_FAILURE() << to_string(e); });
  std::string reason;
  self->receive([&](caf::down_msg& down) { reason = to_string(down.reason); },
                caf::after(std::chrono::seconds(10)) >> [] {});
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_NE(reason.find("a step got no answer"), std::string::npos) << "reason: " << reason;
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  anon_send_exit(cache, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace actorllm

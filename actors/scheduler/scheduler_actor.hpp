#pragma once
/// The scheduler shell of one engine replica. add_request wakes it; each `tick` runs one step:
/// plan (the core), send the plan to every worker of the replica, and on their result update
/// the core, emit the outputs to the router in one message, report the step's cache facts to
/// the cache_engine, and send itself the next tick while work remains. An idle scheduler gets
/// no messages at all.
///
/// With asynchronous scheduling the tick after a plan goes out plans the following step at
/// once (scheduler::schedule_ahead), so a worker finds its next plan in its mailbox when it
/// replies: the hops between the actors no longer stand between two forward passes.
///
/// Supervision: the workers are monitored. When one dies (or fails a step), the core forgets
/// the workers' state (every request recomputes), a fresh worker is spawned from the factory,
/// and the loop goes on; with no factory (a remote worker), or when respawning fails, the
/// scheduler quits with the error, and the router, which monitors it, moves its requests to
/// another replica (or ends them with an error where none is left). No request hangs and no
/// block leaks.
///
/// `retire` (the router, stopping the replica at once) silences it before its actors stop: it
/// answers, then runs and emits nothing more, so that everything it emitted reaches the router
/// before the answer and no request it held ends both here and where it moves.
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/mailbox_probe.hpp"
#include "actors/scheduler/scheduler.hpp"

namespace actorllm {

/// Spawns a replacement worker for rank `rank`; returns an invalid handle when it cannot.
using worker_factory = std::function<worker_actor(caf::actor_system& system, int32_t rank)>;

/// What the shell reports as it goes (metrics, logs). Each may be empty. Called on the
/// scheduler's own thread, so one replica's observer needs no locking.
struct scheduler_hooks {
  /// A request was accepted: its id, its choices, and whether its output is constrained.
  std::function<void(const std::string& request_id, int32_t n, bool constrained)> on_added;
  /// A step's workers spent `seconds` computing structured-output masks.
  std::function<void(double seconds)> on_masks;
  /// An accepted request's images: how many, and the prompt positions they fill.
  std::function<void(int32_t num_images, int64_t num_image_tokens)> on_images;
  /// A step's workers ran `num_images` images through the vision tower in `seconds`.
  std::function<void(int32_t num_images, double seconds)> on_encoder;
  std::function<void(const step_plan&)> on_scheduled;
  std::function<void(const std::vector<request_output>&)> on_outputs;
  /// After each step: the core's stats, the step's wall time and the mailbox depth.
  std::function<void(const scheduler_stats&, double step_seconds, size_t mailbox_depth)> on_step;
  /// After a change outside a step (a request added or aborted).
  std::function<void(const scheduler_stats&)> on_stats;
  std::function<void(const scheduler_event&)> on_event;
  /// A worker went down (false) or a fresh one came up (true).
  std::function<void(int32_t rank, bool up)> on_worker;
  /// The scheduler's mailbox depth, sampled every half second (and after each step, on_step).
  std::function<void(size_t mailbox_depth)> on_mailbox;
};

struct scheduler_shell_options {
  int32_t replica = 0;
  bool async_scheduling = false;  ///< keep a second plan queued behind the step in flight
  /// A step may be long on a big model, but never endless: a worker in another process that
  /// froze must not hang the replica (a request to a live but silent peer never fails by
  /// itself). Past this the workers count as failed.
  std::chrono::milliseconds step_timeout{std::chrono::minutes(5)};
};

struct scheduler_actor_state {
  // Not an aggregate: CAF would try to build the state from the actor pointer (C++20
  // parenthesized aggregate init).
  scheduler_actor_state() = default;

  std::unique_ptr<scheduler> core;
  std::vector<worker_actor> workers;
  cache_engine_actor cache;
  replica_sink_actor sink;
  worker_factory respawn;
  scheduler_hooks hooks;
  mailbox_probe probe;
  int32_t replica = 0;
  size_t max_steps_in_flight = 1;  ///< 2 with asynchronous scheduling
  bool tick_pending = false;
  bool retired = false;         ///< stopped at once: nothing more runs or is emitted
  bool watchdog_armed = false;  ///< a watchdog message is on its way
  /// Idle workers are asked for their info now and then (a step in flight is its own proof of
  /// life): one that does not answer within step_timeout fails as a stuck step does. Not
  /// before they first answer, with no bound: a worker may be loading its weights until then.
  bool workers_answered = false;
  bool heartbeat_pending = false;
  std::chrono::milliseconds step_timeout{};
  uint64_t num_steps = 0;
  /// A plan sent to the workers: when, and the blocks it swaps and copies (its cache report).
  struct planned_step {
    std::chrono::steady_clock::time_point sent;
    int32_t num_swapped_in = 0, num_swapped_out = 0, num_copied = 0;
  };
  std::deque<planned_step> in_flight;  ///< oldest first
  double last_step_seconds = 0;
  double worker_busy_seconds = 0;  ///< sum of rank 0's worker_seconds
  int32_t num_worker_restarts = 0;
  std::chrono::steady_clock::time_point last_step_finished;
  static inline const char* name = "scheduler";
};

scheduler_actor::behavior_type scheduler_shell(
    scheduler_actor::stateful_pointer<scheduler_actor_state> self, scheduler_options options,
    std::vector<worker_actor> workers, cache_engine_actor cache, replica_sink_actor sink,
    worker_factory respawn, scheduler_hooks hooks, scheduler_shell_options shell);

}  // namespace actorllm

#include "actors/scheduler/scheduler_actor.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace actorllm {

namespace {

using scheduler_self = scheduler_actor::stateful_pointer<scheduler_actor_state>;

/// How often the watchdog looks at the oldest step in flight, at most: one delayed message
/// per period, where a timeout on each step request would keep one entry per step in CAF
/// 0.17's clock until it fired (about 144 bytes per step, for five minutes).
constexpr auto max_watchdog_period = std::chrono::seconds(10);

/// Worker replacements a replica attempts before it ends its requests with an error.
constexpr int32_t max_worker_restarts = 8;

struct shell_extras {
  uint64_t epoch = 0;  // bumped when the workers are replaced; older replies are ignored
};

void wake(scheduler_self self);

void emit(scheduler_self self, std::vector<request_output> outs) {
  if (outs.empty() || self->state.retired) return;
  if (self->state.hooks.on_outputs) self->state.hooks.on_outputs(outs);
  // Not awaited: the router detokenizes these while the next step runs. Even when the math
  // threads take every core this pays: the router's burst preempts one of them for tens of
  // microseconds and the thread team's caller takes over that share, while waiting for the
  // router cost two cross-thread hops per step (stories260K served at 32 streams: +10 - 14 %
  // without the wait; 15M and 110M: no change).
  self->send(self->state.sink, outputs_atom::value, std::move(outs));
}

void log_events(scheduler_self self) {
  for (const auto& event : self->state.core->take_events()) {
    if (self->state.hooks.on_event)
      self->state.hooks.on_event(event);
    else
      std::fprintf(stderr, "replica %d: %s\n", self->state.replica, to_string(event).c_str());
  }
}

/// How often the watchdog and the heartbeat look.
std::chrono::milliseconds watch_period(const scheduler_actor_state& st) {
  const auto period = std::min<std::chrono::milliseconds>(st.step_timeout / 4, max_watchdog_period);
  return std::max(period, std::chrono::milliseconds(1));
}

/// Arms the watchdog while steps are in flight.
void arm_watchdog(scheduler_self self) {
  auto& st = self->state;
  if (st.watchdog_armed || st.in_flight.empty()) return;
  st.watchdog_armed = true;
  self->delayed_send(self, watch_period(st), watchdog_atom::value);
}

void wake(scheduler_self self) {
  auto& st = self->state;
  if (st.retired || st.tick_pending || st.in_flight.size() >= st.max_steps_in_flight ||
      !st.core->has_work())
    return;
  st.tick_pending = true;
  self->send(self, tick_atom::value);
}

}  // namespace

scheduler_actor::behavior_type scheduler_shell(scheduler_self self, scheduler_options options,
                                               std::vector<worker_actor> workers,
                                               cache_engine_actor cache, replica_sink_actor sink,
                                               worker_factory respawn, scheduler_hooks hooks,
                                               scheduler_shell_options shell) {
  auto& st = self->state;
  st.core = std::make_unique<scheduler>(options);
  st.workers = std::move(workers);
  st.cache = std::move(cache);
  st.sink = std::move(sink);
  st.respawn = std::move(respawn);
  st.hooks = std::move(hooks);
  st.probe.report = st.hooks.on_mailbox;
  st.probe.start(self);
  st.replica = shell.replica;
  st.max_steps_in_flight = shell.async_scheduling ? 2 : 1;
  st.step_timeout = shell.step_timeout;
  for (const auto& w : st.workers) self->monitor(w);
  auto extras = std::make_shared<shell_extras>();
  self->delayed_send(self, watch_period(st), heartbeat_atom::value);

  // Replaces every worker's state: the core recomputes all requests on fresh workers.
  auto on_worker_failure = [self, extras](const std::string& why) {
    auto& st = self->state;
    ++extras->epoch;
    st.in_flight.clear();
    st.workers_answered = st.heartbeat_pending = false;  // the fresh workers load first
    st.core->reset_workers();
    ++st.num_worker_restarts;
    // Every rank is replaced (a lost rank leaves its peers' group unusable).
    for (int32_t rank = 0; st.hooks.on_worker && rank < static_cast<int32_t>(st.workers.size());
         ++rank)
      st.hooks.on_worker(rank, false);
    // A worker that keeps dying (a device that cannot even start one) is not retried forever.
    bool ok = static_cast<bool>(st.respawn) && st.num_worker_restarts <= max_worker_restarts;
    std::fprintf(stderr, "replica %d: worker lost (%s); %s\n", st.replica, why.c_str(),
                 ok ? "requeueing every request for recompute"
                    : "no replacement: the router moves its requests to other replicas");
    for (int32_t rank = 0; ok && rank < static_cast<int32_t>(st.workers.size()); ++rank) {
      self->demonitor(st.workers[rank].address());
      auto fresh = st.respawn(self->system(), rank);
      if (!fresh) {
        ok = false;
        break;
      }
      self->monitor(fresh);
      // Up once it answers: a worker builds its backend (weights, KV pools) before that.
      const uint64_t epoch = extras->epoch;
      self->request(fresh, std::chrono::minutes(5), info_atom::value)
          .then(
              [self, extras, epoch, rank](const worker_info&) {
                if (extras->epoch == epoch && self->state.hooks.on_worker)
                  self->state.hooks.on_worker(rank, true);
              },
              [](caf::error&) {});  // its down message starts the next restart
      st.workers[rank] = std::move(fresh);
    }
    if (!ok) {
      // The replica is lost (a remote worker cannot be respawned from here). Its requests
      // are not ended here: the router sees this scheduler go down and recomputes them on
      // another replica, from what their clients have already been sent.
      self->quit(caf::make_error(caf::sec::runtime_error, "the engine's worker failed: " + why));
      return;
    }
    wake(self);
  };

  auto finish_step = [self](const step_result& result) {
    auto& st = self->state;
    if (st.retired) return;  // its requests went on elsewhere from what was emitted before
    const auto step = st.in_flight.front();
    st.in_flight.pop_front();
    // A plan sent ahead waited behind the step before it: its own time starts when that ended.
    const auto now = std::chrono::steady_clock::now();
    st.last_step_seconds =
        std::chrono::duration<double>(now - std::max(step.sent, st.last_step_finished)).count();
    st.last_step_finished = now;
    ++st.num_steps;
    st.worker_busy_seconds += result.worker_seconds;
    if (result.mask_seconds > 0 && st.hooks.on_masks) st.hooks.on_masks(result.mask_seconds);
    if (result.num_encoded_images > 0 && st.hooks.on_encoder)
      st.hooks.on_encoder(result.num_encoded_images, result.encoder_seconds);
    emit(self, st.core->update(result));
    if (auto events = st.core->take_cache_events(); !events.empty())
      self->send(st.sink, kv_events_atom::value, std::move(events));
    const auto stats = st.core->stats();
    cache_report report{result.step,
                        stats.device,
                        stats.cpu,
                        stats.prefix_cache_queries,
                        stats.prefix_cache_hits,
                        step.num_swapped_in,
                        step.num_swapped_out,
                        step.num_copied};
    self->send(st.cache, cache_atom::value, std::move(report));
    if (st.hooks.on_step) st.hooks.on_step(stats, st.last_step_seconds, self->mailbox().size());
    log_events(self);
    wake(self);
  };

  self->set_down_handler([self, on_worker_failure](caf::down_msg& msg) {
    // A shutdown takes the workers down on purpose: nothing to recover.
    if (msg.reason == caf::exit_reason::user_shutdown) return self->quit(msg.reason);
    for (const auto& w : self->state.workers)
      if (w.address() == msg.source) return on_worker_failure(to_string(msg.reason));
  });

  self->state.core->record_cache_events();  // the router's cache-aware routing reads them
  // The pools' gauges read their real sizes from the start, not 0 until the first step.
  if (self->state.hooks.on_stats) self->state.hooks.on_stats(self->state.core->stats());

  return {
      [self](add_atom, engine_request& req) -> admission_reply {
        // A request moved here from a lost replica goes on from the tokens it had there.
        std::vector<resumed_choice> resumed;
        for (size_t i = 0; i < req.resumed_indices.size() && i < req.resumed_tokens.size(); ++i)
          resumed.push_back({req.resumed_indices[i], std::move(req.resumed_tokens[i])});
        const int32_t n =
            resumed.empty() ? std::max(1, req.params.n) : static_cast<int32_t>(resumed.size());
        int64_t num_image_tokens = 0;
        for (const prompt_image& image : req.images) num_image_tokens += image.num_tokens;
        const auto num_images = static_cast<int32_t>(req.images.size());
        auto refused =
            self->state.core->resume_request(req.request_id, std::move(req.prompt_token_ids),
                                             req.params, std::move(resumed), std::move(req.images));
        if (refused) {
          const int32_t status = refused->kind == admission_error::code::queue_full ? 503 : 400;
          return {refused->message, status};
        }
        auto& hooks = self->state.hooks;
        if (hooks.on_added) hooks.on_added(req.request_id, n, req.params.structured.active());
        if (num_images > 0 && hooks.on_images) hooks.on_images(num_images, num_image_tokens);
        if (hooks.on_stats) hooks.on_stats(self->state.core->stats());
        wake(self);
        return {};
      },
      [self](abort_atom, const std::string& id) {
        emit(self, self->state.core->abort(id));
        if (self->state.hooks.on_stats) self->state.hooks.on_stats(self->state.core->stats());
        wake(self);
      },
      [self](stopped_atom, const std::string& id) {
        emit(self, self->state.core->abort(id, finish_reason::stop));
        if (self->state.hooks.on_stats) self->state.hooks.on_stats(self->state.core->stats());
        wake(self);
      },
      [self, extras, finish_step, on_worker_failure](tick_atom) {
        auto& st = self->state;
        st.tick_pending = false;
        if (st.in_flight.size() >= st.max_steps_in_flight || !st.core->has_work()) return;
        step_plan plan;
        if (st.in_flight.empty()) {
          plan = st.core->schedule();
        } else if (auto ahead = st.core->schedule_ahead()) {
          plan = std::move(*ahead);
        } else {
          return;  // the next step needs the result in flight; its arrival ticks again
        }
        if (st.hooks.on_scheduled) st.hooks.on_scheduled(plan);
        log_events(self);
        st.in_flight.push_back({std::chrono::steady_clock::now(),
                                static_cast<int32_t>(plan.blocks_to_swap_in.size()),
                                static_cast<int32_t>(plan.blocks_to_swap_out.size()),
                                static_cast<int32_t>(plan.blocks_to_copy.size())});
        // Only a plain schedule() returns a plan with nothing for the workers.
        if (!plan.needs_workers()) {
          step_result nothing;
          nothing.step = plan.step;
          return finish_step(std::move(nothing));
        }
        // Every worker of the replica gets the plan; rank 0's result is the step's result.
        auto num_pending = std::make_shared<size_t>(st.workers.size());
        auto result = std::make_shared<step_result>();
        const uint64_t epoch = extras->epoch;
        for (size_t rank = 0; rank < st.workers.size(); ++rank) {
          // No timeout on the request itself: the watchdog bounds the step.
          self->request(st.workers[rank], caf::infinite, step_atom::value, plan)
              .then(
                  [=](step_result& r) {
                    if (extras->epoch != epoch) return;  // from workers replaced since
                    if (rank == 0) *result = std::move(r);
                    if (--*num_pending == 0) finish_step(*result);
                  },
                  [=](caf::error& e) {
                    if (extras->epoch != epoch) return;
                    // A worker that ended bounces the plan; its down message follows and says
                    // why (a worker that left cleanly is not a failure).
                    if (e == caf::sec::request_receiver_down) return;
                    on_worker_failure(to_string(e));
                  });
        }
        arm_watchdog(self);
        wake(self);  // plans the next step ahead, where that is on
      },
      [self, on_worker_failure](watchdog_atom) {
        auto& st = self->state;
        st.watchdog_armed = false;
        if (st.in_flight.empty()) return;
        const auto waited = std::chrono::steady_clock::now() - st.in_flight.front().sent;
        if (waited > st.step_timeout)
          return on_worker_failure(
              "a step got no answer in " +
              std::to_string(
                  std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
              " ms");
        arm_watchdog(self);
      },
      [self, extras, on_worker_failure](heartbeat_atom) {
        auto& st = self->state;
        self->delayed_send(self, watch_period(st), heartbeat_atom::value);
        if (!st.in_flight.empty() || st.heartbeat_pending) return;
        st.heartbeat_pending = true;
        const uint64_t epoch = extras->epoch;
        auto num_pending = std::make_shared<size_t>(st.workers.size());
        const auto ask = [&](const worker_actor& worker, auto timeout) {
          self->request(worker, timeout, info_atom::value)
              .then(
                  [self, extras, epoch, num_pending](const worker_info&) {
                    if (extras->epoch != epoch || --*num_pending > 0) return;
                    self->state.heartbeat_pending = false;
                    self->state.workers_answered = true;
                  },
                  [self, extras, epoch, on_worker_failure](caf::error& e) {
                    if (extras->epoch != epoch) return;
                    self->state.heartbeat_pending = false;
                    // A worker that ended says so in its down message.
                    if (e == caf::sec::request_timeout)
                      on_worker_failure("an idle worker answered no heartbeat in " +
                                        std::to_string(self->state.step_timeout.count()) + " ms");
                  });
        };
        for (const auto& worker : st.workers) {
          if (st.workers_answered)
            ask(worker, st.step_timeout);
          else
            ask(worker, caf::infinite);
        }
      },
      [self](sample_atom) { self->state.probe.sample(self); },
      [self](retire_atom) {
        self->state.retired = true;
        return true;
      },
      [self](stats_atom) {
        auto& st = self->state;
        return replica_stats{st.replica,
                             st.core->stats(),
                             st.num_steps,
                             st.last_step_seconds,
                             st.worker_busy_seconds,
                             st.num_worker_restarts,
                             true};
      },
  };
}

}  // namespace actorllm

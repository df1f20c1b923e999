#pragma once
/// The router shell: validates and tokenizes requests (prompt_builder), picks a replica
/// (replica_set), and turns each replica's outputs into client deltas (output_processor:
/// detokenization, stop strings, echo), one message per client per batch of outputs. A stop
/// string that ends a request sends `abort` to its scheduler so its blocks are freed at once.
/// Replicas are monitored: when one dies (a remote worker was lost, say), its requests move
/// to another replica, which recomputes their prompt and the tokens their clients already
/// have and goes on from there, so each client sees one stream with no token lost or
/// repeated; only with no replica left do they end with an error. With a stream interval
/// above 1, a choice's deltas are gathered until that many tokens are ready
/// (stream_coalescer).
///
/// Replicas come and go while serving: `replica` adds one, `drain` lets one finish what it
/// has (then on_replica_retired stops it), `retire` stops one at once, its requests moved as
/// if it had been lost once its scheduler answers that it emits nothing more. Outputs are
/// taken only from the replica a request is on now, so a lost replica's last step cannot add
/// to a request that moved on.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/actor_types.hpp"
#include "actors/mailbox_probe.hpp"
#include "actors/request_router/output_processor.hpp"
#include "actors/request_router/prefix_router.hpp"
#include "actors/request_router/prompt_builder.hpp"
#include "actors/request_router/replica_set.hpp"
#include "actors/request_router/stream_coalescer.hpp"

namespace actorllm {

/// Builds a replica around a worker that joined from another process; returns its scheduler.
/// `replica` is a new index, or that of a lost remote replica whose place the worker takes.
using remote_replica_factory = std::function<scheduler_actor(
    caf::actor_system&, worker_actor worker, const worker_info& info, int32_t replica)>;

struct router_request {
  output_processor processor;
  stream_coalescer coalescer;
  output_sink_actor client;
  int32_t replica = 0;
  int64_t charged_tokens = 0;
  int32_t num_choices = 1;
  int32_t num_finished_by_engine = 0;
  // What another replica needs to go on with the request if this one is lost.
  std::vector<int32_t> prompt_token_ids;
  sampling_params params;
  std::vector<std::vector<int32_t>> generated;  ///< per choice: the tokens received so far
  std::vector<bool> finished;                   ///< per choice: the engine ended it
  uint64_t attempt = 0;   ///< bumped at each hand-over to a scheduler; older replies are moot
  int32_t num_moves = 0;  ///< replicas lost under this request
  bool abort_requested = false;  ///< the client let go: a move takes the abort along
  /// The LoRA adapter the request runs with (params.lora_id), held until it ends: an adapter
  /// unloaded meanwhile stays in memory for it.
  std::shared_ptr<const lora_adapter> adapter = nullptr;
  /// The prompt's images (a vision-language model), for its scheduler and any it moves to.
  std::vector<prompt_image> images = {};
};

/// What the router reports as it goes (metrics, health). Each may be empty.
struct router_hooks {
  /// The router's mailbox depth, after each batch of outputs and every half second.
  std::function<void(size_t mailbox_depth)> on_mailbox;
  /// A replica's scheduler ended: `reason` says why; `retired` when on purpose (its worker
  /// left cleanly), not by a failure.
  std::function<void(int32_t replica, const std::string& reason, bool retired)> on_replica_down;
  /// A replica holds no request and takes no more (drained, or stopped and its requests
  /// moved): its actors may stop now and free its memory.
  std::function<void(int32_t replica)> on_replica_retired;
  /// A request was routed: why its replica was chosen, and how many of its full prompt blocks
  /// that replica held.
  std::function<void(route_reason reason, int32_t cached_blocks, int32_t prompt_blocks)> on_route;
};

struct router_state {
  // Not an aggregate: CAF would try to build the state from the actor pointer (C++20
  // parenthesized aggregate init).
  router_state() = default;

  std::shared_ptr<prompt_builder> prompts;
  replica_set replicas;
  std::vector<scheduler_actor> schedulers;
  std::vector<bool> down;    ///< per replica: its scheduler ended
  std::vector<bool> remote;  ///< per replica: built around a worker of another process
  std::map<std::string, router_request> requests;
  /// Requests a helper prepares off this actor (loads their images, compiles their new
  /// grammar), by id: admitted when it answers, dropped with it when aborted meanwhile.
  std::map<std::string, caf::actor> compiling;
  remote_replica_factory make_remote_replica;
  router_hooks hooks;
  mailbox_probe probe;
  int32_t stream_interval = 1;  ///< tokens per streamed delta
  routing_options routing;
  prefix_index prefixes;   ///< which prompt blocks each replica holds (its KV events)
  session_table sessions;  ///< cache_aware: where each conversation's last turn went
  uint64_t routing_turn = 0;
  static inline const char* name = "request_router";
};

router_actor::behavior_type request_router(router_actor::stateful_pointer<router_state> self,
                                           std::shared_ptr<prompt_builder> prompts,
                                           std::vector<scheduler_actor> schedulers,
                                           remote_replica_factory make_remote_replica,
                                           router_hooks hooks, int32_t stream_interval,
                                           routing_options routing = {});

}  // namespace actorllm

#pragma once
/// The typed interfaces of the actors: who may send what to whom, checked by the compiler.
/// Message payloads are declared in actors/messages.hpp.
#include <caf/all.hpp>

#include "actors/messages.hpp"

namespace actorllm {

/// Receives request_output deltas: the router (from schedulers) and the gateway (from the router).
using output_sink_actor =
    caf::typed_actor<caf::reacts_to<outputs_atom, std::vector<request_output>>>;

/// Receives a replica's outputs and KV events (the router). Schedulers do not wait for it:
/// the router detokenizes one step's outputs while the next step runs.
using replica_sink_actor =
    caf::typed_actor<caf::reacts_to<outputs_atom, std::vector<request_output>>,
                     caf::reacts_to<kv_events_atom, kv_cache_events>>;

/// One per device: executes step plans on its KV cache and weights.
using worker_actor =
    caf::typed_actor<caf::replies_to<step_atom, step_plan>::with<step_result>,
                     caf::replies_to<info_atom>::with<worker_info>, caf::reacts_to<sample_atom>>;

/// One per replica: the cache ledger; the scheduler reports each step's block facts to it.
using cache_engine_actor =
    caf::typed_actor<caf::reacts_to<cache_atom, cache_report>,
                     caf::replies_to<stats_atom>::with<cache_report>, caf::reacts_to<sample_atom>>;

/// One per replica: owns the queues and drives the step loop with `tick` messages to itself.
using scheduler_actor =
    caf::typed_actor<caf::replies_to<add_atom, engine_request>::with<admission_reply>,
                     caf::reacts_to<abort_atom, std::string>,
                     caf::reacts_to<stopped_atom, std::string>, caf::reacts_to<tick_atom>,
                     caf::reacts_to<watchdog_atom>, caf::reacts_to<heartbeat_atom>,
                     caf::reacts_to<sample_atom>, caf::replies_to<stats_atom>::with<replica_stats>,
                     caf::replies_to<retire_atom>::with<bool>>;

/// One per server: validates, tokenizes, routes to replicas and post-processes their outputs.
using router_actor =
    caf::typed_actor<caf::reacts_to<generate_atom, generate_request, output_sink_actor>,
                     caf::reacts_to<abort_atom, std::string>,
                     caf::reacts_to<outputs_atom, std::vector<request_output>>,
                     caf::reacts_to<kv_events_atom, kv_cache_events>,
                     caf::replies_to<tokenize_atom, generate_request>::with<tokenize_reply>,
                     caf::replies_to<detok_atom, std::vector<int32_t>>::with<std::string>,
                     caf::replies_to<reserve_atom>::with<int32_t>,
                     caf::replies_to<replica_atom, int32_t, scheduler_actor>::with<bool>,
                     caf::replies_to<drain_atom, int32_t>::with<bool>,
                     caf::replies_to<retire_atom, int32_t>::with<bool>,
                     caf::replies_to<join_atom, worker_actor, worker_info>::with<int32_t>,
                     caf::replies_to<stats_atom>::with<std::vector<replica_stats>>,
                     caf::reacts_to<sample_atom>>;

/// One per server with --cluster-port: the only actor published to other processes. It
/// admits a worker that proves the shared secret and serves the same model, and hands it to
/// the router, which builds a replica around it.
using cluster_actor =
    caf::typed_actor<caf::replies_to<join_atom, join_request, worker_actor>::with<join_reply>>;

/// One per server: the network layer's door into the actors (see net/engine_port.hpp).
using gateway_actor = caf::typed_actor<
    caf::reacts_to<generate_atom, generate_request>, caf::reacts_to<abort_atom, std::string>,
    caf::reacts_to<outputs_atom, std::vector<request_output>>, caf::reacts_to<sample_atom>>;

/// Registers every message type with the actor system (the same in every process of a
/// cluster, or remote connections fail their interface check).
void register_message_types(caf::actor_system_config& config);

}  // namespace actorllm

#pragma once
/// Every message that crosses an actor boundary, in one place: the atoms, the structs that
/// are not already defined by a core, and one inspect() per type so that CAF can copy,
/// print and serialize them (the last for workers and replicas in other processes).
#include <caf/all.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "common/engine_stats.hpp"
#include "common/generate_request.hpp"
#include "common/kv_events.hpp"
#include "common/model_identity.hpp"
#include "common/sampling_params.hpp"
#include "common/step_plan.hpp"

namespace actorllm {

// --- atoms (at most 10 characters) ---------------------------------------------------------
using tick_atom = caf::atom_constant<caf::atom("tick")>;  ///< scheduler: run one step
/// scheduler: check that the oldest step in flight has not been waiting too long
using watchdog_atom = caf::atom_constant<caf::atom("watchdog")>;
using heartbeat_atom =
    caf::atom_constant<caf::atom("heartbeat")>;                   ///< scheduler: ping idle workers
using step_atom = caf::atom_constant<caf::atom("step")>;          ///< worker: execute a plan
using add_atom = caf::atom_constant<caf::atom("add")>;            ///< scheduler: queue a request
using abort_atom = caf::atom_constant<caf::atom("abort")>;        ///< any: stop a request
using compile_atom = caf::atom_constant<caf::atom("compile")>;    ///< a helper: compile a grammar
using generate_atom = caf::atom_constant<caf::atom("generate")>;  ///< router/gateway: new request
using outputs_atom = caf::atom_constant<caf::atom("outputs")>;    ///< deltas downstream
using stats_atom = caf::atom_constant<caf::atom("stats")>;        ///< ask for a stats snapshot
using cache_atom = caf::atom_constant<caf::atom("cache")>;  ///< scheduler -> cache_engine report
using tokenize_atom = caf::atom_constant<caf::atom("tokenize")>;
using detok_atom = caf::atom_constant<caf::atom("detokenize")>;
using reserve_atom = caf::atom_constant<caf::atom("reserve")>;  ///< router: number a new replica
using replica_atom = caf::atom_constant<caf::atom("replica")>;  ///< router: a replica serves
using drain_atom = caf::atom_constant<caf::atom("drain")>;      ///< router: stop using a replica
using sample_atom = caf::atom_constant<caf::atom("sample")>;    ///< any: report the mailbox
using retire_atom = caf::atom_constant<caf::atom("retire")>;    ///< router, scheduler: stop now
using join_atom = caf::atom_constant<caf::atom("join")>;        ///< remote worker joins a head
using info_atom = caf::atom_constant<caf::atom("info")>;        ///< worker: describe yourself
/// scheduler: let go of a request the router ended by a stop string (counted as a stop)
using stopped_atom = caf::atom_constant<caf::atom("stopped")>;
/// scheduler -> router: the prefix blocks its device pool gained and lost (kv_events.hpp)
using kv_events_atom = caf::atom_constant<caf::atom("kvevents")>;

// --- structs owned by the actor layer ------------------------------------------------------

/// A tokenized request on its way from the router to a scheduler.
struct engine_request {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;
  sampling_params params;
  /// A request moved from a replica that was lost: its unfinished choices (index) and the
  /// tokens each had generated there; the scheduler resumes them (scheduler::resume_request).
  /// Empty for a new request, or one moved before its first token.
  std::vector<int32_t> resumed_indices;
  std::vector<std::vector<int32_t>> resumed_tokens;
  /// The prompt's images; prompt_token_ids holds their key tokens (common/prompt_image.hpp).
  std::vector<prompt_image> images;
};

/// The scheduler's answer to add_request: empty error means queued.
struct admission_reply {
  std::string error;
  int32_t status = 0;  ///< HTTP status for the error (400, 503)
};

/// What a worker holds; the scheduler sizes its block manager from it.
struct worker_info {
  std::string name;
  int32_t num_device_blocks = 0;
  int32_t num_cpu_blocks = 0;
  int32_t block_size = 16;
  std::string device;  ///< "cpu" or "cuda:N"
};

/// One step's cache facts, sent by the scheduler to its cache_engine once per step.
struct cache_report {
  uint64_t step = 0;
  pool_stats device;
  pool_stats cpu;
  int64_t prefix_cache_queries = 0;
  int64_t prefix_cache_hits = 0;
  int32_t num_swapped_in = 0;  ///< blocks this step
  int32_t num_swapped_out = 0;
  int32_t num_copied = 0;
};

/// A replica's state for the router and for /metrics.
struct replica_stats {
  int32_t replica = 0;
  scheduler_stats scheduler;
  uint64_t num_steps = 0;
  double last_step_seconds = 0;
  double worker_busy_seconds = 0;  ///< rank 0's own time on all steps so far
  int32_t num_worker_restarts = 0;
  bool alive = true;
  /// The router's word: starting, serving, draining or dead (replica_set's states).
  std::string state = "serving";
};

/// A worker of another process asking to join a server (the worker's handle travels beside it).
struct join_request {
  std::string secret;  ///< the cluster's shared secret (empty: none given)
  model_identity model;
  worker_info info;
};

/// The server's answer: the replica the worker now serves, or why it was refused.
struct join_reply {
  bool accepted = false;
  int32_t replica = -1;
  std::string error;  ///< one line naming what did not match
};

/// What a router's helper prepared off the router's thread: a request's images, loaded in
/// order, and its grammar compiled; or the refusal (error non-empty) with its parameter and
/// HTTP status.
struct prepared_inputs {
  std::vector<prompt_image> images;
  std::string error;
  std::string error_param;
  int32_t status = 400;
};

struct tokenize_reply {
  std::vector<int32_t> tokens;
  std::string error;
  int32_t status = 0;
};

// --- inspect() ------------------------------------------------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, structured_output& x) {
  auto kind = static_cast<uint8_t>(x.kind);
  return f(caf::meta::type_name("structured_output"), kind, x.source, x.choices,
           x.compact_whitespace, x.after_reasoning, x.field,
           caf::meta::load_callback([&]() -> caf::error {
             if (kind > static_cast<uint8_t>(output_constraint::grammar))
               return caf::make_error(caf::sec::invalid_argument, "unknown output constraint");
             x.kind = static_cast<output_constraint>(kind);
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, beam_search_params& x) {
  return f(caf::meta::type_name("beam_search_params"), x.enabled, x.length_penalty,
           x.early_stopping);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
  bool has_seed = x.seed.has_value();
  uint64_t seed = x.seed.value_or(0);
  auto pooling = static_cast<uint8_t>(x.pooling);
  return f(caf::meta::type_name("sampling_params"), x.n, x.temperature, x.top_p, x.top_k, x.min_p,
           x.presence_penalty, x.frequency_penalty, x.repetition_penalty, x.logit_bias, has_seed,
           seed, x.max_tokens, x.min_tokens, x.ignore_eos, x.stop_token_ids, x.stop, x.logprobs,
           x.prompt_logprobs, x.skip_special_tokens, x.priority, x.include_stop_str_in_output,
           x.truncate_prompt_tokens, x.structured, pooling, x.normalize, x.lora_id, x.beam,
           caf::meta::load_callback([&]() -> caf::error {
             x.seed = has_seed ? std::optional<uint64_t>(seed) : std::nullopt;
             if (pooling > static_cast<uint8_t>(pooling_type::mean))
               return caf::make_error(caf::sec::invalid_argument, "unknown pooling");
             x.pooling = static_cast<pooling_type>(pooling);
             return caf::none;
           }));
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generate_request& x) {
  return f(caf::meta::type_name("generate_request"), x.request_id, x.kind, x.text, x.token_ids,
           x.chat_json, x.add_generation_prompt, x.add_special_tokens, x.echo,
           x.echo_without_generation, x.params, x.model, x.session, x.image_urls);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_logprob& x) {
  return f(caf::meta::type_name("token_logprob"), x.token_id, x.logprob, x.rank, x.top_ids,
           x.top_logprobs, x.top_texts);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_output& x) {
  return f(caf::meta::type_name("request_output"), x.request_id, x.index, x.text, x.token_ids,
           x.token_texts, x.logprobs, x.prompt_logprobs, x.prompt_token_texts, x.finish,
           x.stop_reason, x.stop_token, x.num_prompt_tokens, x.num_generated_tokens,
           x.num_cached_tokens, x.error, x.error_status, x.error_param, x.embedding,
           x.cumulative_logprob);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_cache_events& x) {
  return f(caf::meta::type_name("kv_cache_events"), x.stored, x.evicted);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, block_copy& x) {
  return f(caf::meta::type_name("block_copy"), x.src, x.dst);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prompt_image& x) {
  return f(caf::meta::type_name("prompt_image"), x.key, x.offset, x.num_tokens, x.token_id,
           x.channels, x.height, x.width, x.pixels);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prepared_inputs& x) {
  return f(caf::meta::type_name("prepared_inputs"), x.images, x.error, x.error_param, x.status);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, new_sequence& x) {
  return f(caf::meta::type_name("new_sequence"), x.request_id, x.seq, x.index, x.num_prompt_tokens,
           x.params, x.images);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduled_sequence& x) {
  return f(caf::meta::type_name("scheduled_sequence"), x.seq, x.num_computed_tokens,
           x.num_scheduled_tokens, x.num_samples, x.new_token_ids, x.new_block_ids, x.replace_table,
           x.draft_token_ids, x.num_lookahead);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_plan& x) {
  return f(caf::meta::type_name("step_plan"), x.step, x.new_seqs, x.seqs, x.blocks_to_swap_out,
           x.blocks_to_swap_in, x.blocks_to_copy, x.blocks_to_store, x.blocks_to_load,
           x.finished_seq_ids, x.num_scheduled_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sequence_sample& x) {
  return f(caf::meta::type_name("sequence_sample"), x.seq, x.token_ids, x.logprobs,
           x.draft_token_ids, x.embedding, x.prompt_logprobs, x.prompt_logprobs_from,
           x.beam_candidates);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_result& x) {
  return f(caf::meta::type_name("step_result"), x.step, x.seqs, x.worker_seconds, x.mask_seconds,
           x.failed_loads, x.num_encoded_images, x.encoder_seconds);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, engine_request& x) {
  return f(caf::meta::type_name("engine_request"), x.request_id, x.prompt_token_ids, x.params,
           x.resumed_indices, x.resumed_tokens, x.images);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, admission_reply& x) {
  return f(caf::meta::type_name("admission_reply"), x.error, x.status);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_info& x) {
  return f(caf::meta::type_name("worker_info"), x.name, x.num_device_blocks, x.num_cpu_blocks,
           x.block_size, x.device);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, pool_stats& x) {
  return f(caf::meta::type_name("pool_stats"), x.num_blocks, x.num_used, x.num_free, x.num_cached);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cache_report& x) {
  return f(caf::meta::type_name("cache_report"), x.step, x.device, x.cpu, x.prefix_cache_queries,
           x.prefix_cache_hits, x.num_swapped_in, x.num_swapped_out, x.num_copied);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_stats& x) {
  return f(caf::meta::type_name("scheduler_stats"), x.num_waiting, x.num_running, x.num_swapped,
           x.num_preemptions, x.num_scheduled_tokens, x.num_scheduled_seqs, x.prefix_cache_queries,
           x.prefix_cache_hits, x.tier_cache_queries, x.tier_cache_hits, x.tier, x.device, x.cpu,
           x.speculation);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_tier_stats& x) {
  return f(caf::meta::type_name("kv_tier_stats"), x.num_slots, x.num_used, x.num_stored,
           x.num_evicted, x.num_loaded, x.num_failed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, speculation_stats& x) {
  return f(caf::meta::type_name("speculation_stats"), x.num_drafts, x.num_draft_tokens,
           x.num_accepted_tokens, x.accepted_per_position);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replica_stats& x) {
  return f(caf::meta::type_name("replica_stats"), x.replica, x.scheduler, x.num_steps,
           x.last_step_seconds, x.worker_busy_seconds, x.num_worker_restarts, x.alive, x.state);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_identity& x) {
  return f(caf::meta::type_name("model_identity"), x.config_keys, x.config_values, x.weights,
           x.tokenizer, x.vocab_size, x.block_size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_request& x) {
  return f(caf::meta::type_name("join_request"), x.secret, x.model, x.info);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_reply& x) {
  return f(caf::meta::type_name("join_reply"), x.accepted, x.replica, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tokenize_reply& x) {
  return f(caf::meta::type_name("tokenize_reply"), x.tokens, x.error, x.status);
}

}  // namespace actorllm

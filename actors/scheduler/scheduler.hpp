#pragma once
/// The continuous-batching scheduler (the scheduler actor's core). It owns the waiting,
/// running and swapped queues and the block manager; each step is
///
///   step_plan plan = s.schedule();          // what to compute, within the token budget
///   step_result result = workers(plan);     // forward + sampling
///   auto outputs = s.update(result);        // new tokens, finished requests
///
/// With asynchronous scheduling the next step is planned while one is in flight
/// (schedule_ahead()), so that the workers find their next plan waiting when they finish; the
/// results are then applied in order, one update() per plan. abort() and add_request() may
/// come at any time.
/// There are no prefill and decode modes: each sequence has num_computed_tokens and
/// num_tokens, and the budget (max_num_batched_tokens, max_num_seqs) chunks long prompts.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/scheduler/block_manager.hpp"
#include "actors/scheduler/request.hpp"
#include "actors/scheduler/scheduling_policy.hpp"
#include "common/engine_stats.hpp"
#include "common/generate_request.hpp"
#include "common/step_plan.hpp"
#include "config/engine_config.hpp"

namespace actorllm {

struct scheduler_options;
/// The block manager's pools and caching as `options` size them (at start, and again when
/// the workers are replaced).
block_manager_config block_config_of(const scheduler_options& options);

struct scheduler_options {
  scheduler_config scheduler;
  int32_t block_size = 16;
  int32_t num_device_blocks = 0;  ///< measured by the workers (or the override)
  int32_t num_cpu_blocks = 0;     ///< swap space
  int32_t num_tier_blocks = 0;    ///< the second KV tier (block_manager_config)
  bool enable_prefix_caching = true;
  int32_t sliding_window = 0;  ///< block_manager_config::sliding_window
  int32_t max_model_len = 0;   ///< prompt + output tokens at most
  std::vector<int32_t> eos_token_ids;
  /// Device blocks kept free when admitting, so that running sequences can grow a while
  /// before someone must be preempted (vLLM's watermark). Not applied to a lone request.
  double watermark = 0.01;
  /// Speculative decoding: sequences ask the workers for drafts and verify them. The method
  /// and its lookup bounds are the workers' business; the scheduler budgets the drafts.
  speculative_config speculative;
  /// Multi-LoRA: distinct adapters among the running requests at most (0: no limit).
  int32_t max_loras = 0;
  /// The model attends both ways within an image (Gemma 3): a step computes an image's
  /// positions all at once, so a prefill chunk never ends inside one.
  bool whole_images = false;
};

/// Why add_request refused a request: a user's mistake or a full queue, never a crash.
struct admission_error {
  enum class code {
    duplicate_request_id,
    invalid_params,  ///< n < 1, max_tokens == 0 or < -1, a priority under fcfs
    empty_prompt,
    prompt_too_long,   ///< no room for one generated token within max_model_len
    exceeds_kv_cache,  ///< the prompt alone needs more blocks than the device pool has
    queue_full,        ///< max_waiting_requests reached: try again later (HTTP 503)
  };
  code kind;
  std::string message;  ///< one clear line for the client
};

/// One choice of a request resumed from a replica that was lost: its index in [0, n) and the
/// tokens it had generated there (those its client has already been sent).
struct resumed_choice {
  int32_t index = 0;
  std::vector<int32_t> token_ids;
};

/// Something worth a log line, drained with take_events().
struct scheduler_event {
  enum class kind {
    preempted_by_recompute,  ///< blocks freed; the request will recompute its tokens
    preempted_by_swap,       ///< blocks moved to the CPU pool
    out_of_kv_cache,         ///< alone on the device and still unable to grow: finished (length)
  };
  kind what;
  std::string request_id;
  uint64_t step = 0;
  bool swap_space_full = false;  ///< a recompute chosen because the CPU pool was full
};
std::string to_string(const scheduler_event& event);

class scheduler {
 public:
  explicit scheduler(const scheduler_options& options);
  ~scheduler();

  /// Queues a request, or says why not. The prompt's tokens are the sequence's first tokens;
  /// `images` fill positions of it, which hold their key tokens (common/prompt_image.hpp).
  std::optional<admission_error> add_request(std::string request_id,
                                             std::vector<int32_t> prompt_token_ids,
                                             const sampling_params& params,
                                             std::vector<prompt_image> images = {});
  /// Queues a request that another replica was running when it was lost: `choices` are its
  /// unfinished choices with the tokens they had (empty: none was sampled yet, as
  /// add_request). Each choice's sequence starts as a preempted one does, its prompt and
  /// tokens to recompute, so that its outputs go on where the lost replica stopped, under the
  /// same penalties, limits and stop checks. Refused as add_request refuses, and when the
  /// longest choice no longer fits the device pool. In scheduler_recovery.cpp.
  std::optional<admission_error> resume_request(std::string request_id,
                                                std::vector<int32_t> prompt_token_ids,
                                                const sampling_params& params,
                                                std::vector<resumed_choice> choices,
                                                std::vector<prompt_image> images = {});
  /// Whether schedule() has anything to do (queued requests or finished ids to report).
  bool has_work() const;

  /// Plans one step. No step may be in flight (every plan's result was update()d before).
  step_plan schedule();
  /// Plans the step after the one in flight, before its result is known (vLLM's asynchronous
  /// scheduling). A sequence whose next token that step is drawing computes the token next:
  /// the workers feed in their own sample. nullopt when there is nothing to plan ahead, or when
  /// the next step needs the result first: a running request that cannot grow without a
  /// preemption (then every schedule_ahead() is nullopt until the next schedule()). Requests
  /// about to fork into n samples, or to end by length at the token in flight, wait a step.
  std::optional<step_plan> schedule_ahead();
  /// Plans whose results have not been update()d yet: 0, 1, or 2 with one planned ahead.
  int32_t num_steps_in_flight() const { return static_cast<int32_t>(in_flight_.size()); }
  /// Applies the sampled tokens of the oldest plan in flight; returns one output per sequence
  /// that got a token or finished, for the caller to emit.
  std::vector<request_output> update(const step_result& result);
  /// Finishes a request from any queue and frees its blocks at once; returns the final
  /// outputs (`reason`, one per unfinished choice of the n), none when the id is unknown or
  /// already finished. The reason is finish_reason::stop when the router ended the request
  /// by a stop string, so that it counts as stopped, not aborted.
  std::vector<request_output> abort(const std::string& request_id,
                                    finish_reason reason = finish_reason::abort);

  /// The workers lost their state (a worker died; a fresh one replaces it): the step in flight
  /// is abandoned, every unfinished request goes back to waiting to recompute its tokens, the
  /// block pools (and the prefix cache, whose contents died too) start empty, and every
  /// sequence will be introduced to the workers again. In scheduler_recovery.cpp.
  void reset_workers();

  std::vector<scheduler_event> take_events();
  scheduler_stats stats() const;
  /// The device pool's KV events since the last call (for cache-aware routing); none are kept
  /// until record_cache_events().
  void record_cache_events() { blocks_.record_cache_events(); }
  kv_cache_events take_cache_events() { return blocks_.take_cache_events(); }
  const block_manager& blocks() const { return blocks_; }
  /// Aborts when queues, sequences and block tables disagree (tests call it every step).
  void check_invariants() const;

 private:
  struct budget {
    int32_t num_tokens;
    int32_t num_seqs;
    bool left() const { return num_tokens > 0 && num_seqs > 0; }
  };
  struct chunk {
    int32_t seq_index;       // in request::seqs
    int32_t num_tokens;      // slots after this step (its drafts' too)
    int32_t num_scheduled;   // tokens computed this step, drafts not counted
    int32_t num_drafts = 0;  // drafts verified this step, after the scheduled token
  };

  /// A step planned and not yet update()d: its number and its sampling sequences, in plan
  /// order (the order of their samples in its result).
  struct step_in_flight {
    uint64_t step = 0;
    std::vector<seq_id> sampling;
    /// Some sequence verifies drafts or asks for them: the next step waits for this one's
    /// result (its positions and drafts depend on it), so nothing is planned ahead.
    bool speculative = false;
  };
  // schedule() and schedule_ahead(), in scheduler.cpp
  step_plan plan_step();
  bool ends_at_pending_sample(const request& r, const sequence& s) const;
  /// The prefix-cache salt of r's sequences: KV computed under one LoRA adapter is never a
  /// hit for another (or for the base model).
  static uint64_t cache_salt(const request& r) { return static_cast<uint32_t>(r.params.lora_id); }
  /// Whether r may run beside the running requests without passing max_loras adapters.
  bool adapter_fits(const request& r) const;
  /// The request's chunks for this step into chunks_ and slots_; with `with_drafts`, decoding
  /// sequences verify their drafts too (grow() tries without them before it preempts).
  void build_chunks(request& r, const budget& b, bool with_drafts = true);
  /// build_chunks, then whether its slots fit (keeping num_reserved blocks): the drafts are
  /// dropped rather than have them cost a preemption or an admission.
  bool build_fitting_chunks(request& r, const budget& b, int32_t num_reserved = 0);
  /// Drafts `s` may verify this step, with `num_tokens_left` of the budget after its token.
  int32_t num_drafts_to_verify(const request& r, const sequence& s, int32_t num_tokens_left) const;
  /// The tokens of a chunk of `num_tokens` from `start` that end neither inside an image of
  /// `r` (options_.whole_images): cut back to the image's start, or 0 where the chunk starts
  /// at or in the image it cannot finish.
  static int32_t before_split_image(const request& r, int32_t start, int32_t num_tokens);
  /// Proposals to ask for at the end of this step (0: the sequence does not speculate now).
  /// Counts a step of the sequence's pause (speculation_pacer) when it has one.
  int32_t num_lookahead(const request& r, sequence& s) const;
  void commit(request& r, budget& b, step_plan& plan);
  bool schedule_running(budget& b, step_plan& plan);
  void preempt(request& victim, step_plan& plan);
  void finish_out_of_cache(request& r);
  void schedule_swapped(budget& b, step_plan& plan);
  void schedule_waiting(budget& b, step_plan& plan);
  void enter_running(request& r);
  void leave_queue(request& r);
  void insert_sorted(std::deque<request*>& queue, request& r) const;
  int32_t num_watermark_blocks() const;

  // update(), abort() and the rest, in scheduler_update.cpp
  // Beam search, in scheduler_beams.cpp.
  /// Keeps a beam's candidates; false when it is not a beam of a beam search.
  bool keep_beam_candidates(request& r, sequence& s, const sequence_sample& sample);
  /// Once every beam of `r` has its candidates: the next beams (forks share their blocks,
  /// dropped beams give theirs back), and the answer when the search is over.
  void advance_beams(request& r, std::vector<request_output>& outputs);
  /// The answer: the best params.n beams, complete or running, as the request's outputs.
  void finish_beams(request& r, std::vector<request_output>& outputs);
  /// Gathers a chunk's prompt logprobs into its request (until the first token is sampled).
  void keep_prompt_logprobs(const sequence_sample& sample);
  void apply_samples(request& r, int32_t seq_index, const sequence_sample& sample,
                     std::vector<request_output>& outputs);
  void apply_token(request& r, sequence& s, int32_t token, const token_logprob* logprob,
                   std::vector<request_output>& outputs);
  /// A verification's tokens (accepted drafts and one more), in scheduler_update.cpp.
  void apply_verified(request& r, sequence& s, const sequence_sample& sample,
                      std::vector<request_output>& outputs);
  /// Keeps the workers' proposals for `s`'s next step.
  void keep_proposals(const request& r, sequence& s, const sequence_sample& sample);
  bool check_stop(const request& r, sequence& s) const;
  void finish_seq(request& r, sequence& s, finish_reason reason);
  request_output output_of(const request& r, const sequence& s) const;
  void add_unforked_outputs(const request& r, std::vector<request_output>& outputs) const;
  void forget(request& r);

  scheduler_options options_;
  std::unique_ptr<queue_policy> policy_;
  block_manager blocks_;
  std::unordered_map<std::string, std::unique_ptr<request>> requests_;
  std::unordered_map<seq_id, std::pair<request*, int32_t>> seqs_;  // -> (request, index)
  std::deque<request*> waiting_;
  std::deque<request*> running_;
  std::deque<request*> swapped_;
  std::vector<seq_id> finished_since_plan_;
  std::vector<request_output> pending_outputs_;  // finished inside schedule()
  std::vector<scheduler_event> events_;
  std::deque<step_in_flight> in_flight_;  // oldest first
  bool planning_ahead_ = false;           // inside schedule_ahead()
  bool needs_plain_schedule_ = false;     // a preemption waits for the results in flight
  uint64_t num_steps_ = 0;
  uint64_t num_arrivals_ = 0;
  seq_id next_seq_id_ = 0;
  int32_t num_running_seqs_ = 0;  // live sequences of running requests
  int64_t num_preemptions_ = 0;
  int32_t last_num_scheduled_tokens_ = 0;
  int32_t last_num_scheduled_seqs_ = 0;
  speculation_stats speculation_;
  // Scratch reused across steps so that a step allocates little.
  std::vector<chunk> chunks_;
  std::vector<slot_request> slots_;
};

}  // namespace actorllm

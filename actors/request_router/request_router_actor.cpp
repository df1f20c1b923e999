#include "actors/request_router/request_router_actor.hpp"

#include <cstdio>
#include <unordered_map>

#include "common/output_merge.hpp"

namespace actorllm {

namespace {

using router_self = router_actor::stateful_pointer<router_state>;

/// Replicas a request may lose before it ends with an error (a request that brings down every
/// worker it meets must not take the whole cluster with it).
constexpr int32_t max_moves = 3;

void send_one(router_self self, const output_sink_actor& client, request_output out) {
  self->send(client, outputs_atom::value, std::vector<request_output>{std::move(out)});
}

/// Stops a replica that holds nothing and takes nothing new, once.
void retire_if_drained(router_self self, int32_t index) {
  auto& st = self->state;
  if (!st.replicas.take_drained(index)) return;
  st.prefixes.forget(index);
  st.sessions.forget_replica(index);
  std::fprintf(stderr, "router: replica %d is drained; stopping it\n", index);
  if (st.hooks.on_replica_retired) st.hooks.on_replica_retired(index);
}

void forget(router_self self, std::map<std::string, router_request>::iterator it) {
  const int32_t replica = it->second.replica;
  self->state.replicas.release(replica, it->second.charged_tokens);
  self->state.requests.erase(it);
  retire_if_drained(self, replica);
}

int32_t add_replica(router_self self, scheduler_actor scheduler, bool remote = false) {
  auto& st = self->state;
  const int32_t index = st.replicas.add();
  self->monitor(scheduler);
  st.schedulers.push_back(std::move(scheduler));
  st.down.push_back(false);
  st.remote.push_back(remote);
  return index;
}

/// An exit reason as one readable line: the message a scheduler ended with, else CAF's text.
std::string describe(const caf::error& reason) {
  if (reason.context().match_elements<std::string>())
    return reason.context().get_as<std::string>(0);
  return to_string(reason);
}

/// Tokens a request may still occupy: its prompt and max_tokens per choice (-1: the context).
int64_t tokens_owed(const router_state& st, const router_request& r) {
  const auto prompt_len = static_cast<int64_t>(r.prompt_token_ids.size());
  const int64_t max_out =
      r.params.max_tokens > 0 ? r.params.max_tokens : st.prompts->max_model_len() - prompt_len;
  return prompt_len + max_out * r.num_choices;
}

void replica_lost(router_self self, int32_t index, const std::string& why,
                  const caf::error* exit_reason);

/// Hands request `id` to its replica's scheduler: as new, or, after a replica was lost, with
/// the tokens each unfinished choice already has (the scheduler recomputes them and goes on).
void dispatch(router_self self, const std::string& id) {
  auto& st = self->state;
  auto& r = st.requests.at(id);
  engine_request req{id, r.prompt_token_ids, r.params, {}, {}, r.images};
  bool sampled = false;
  for (const auto& g : r.generated) sampled |= !g.empty();
  for (int32_t i = 0; sampled && i < r.num_choices; ++i) {
    if (r.finished[i]) continue;
    req.resumed_indices.push_back(i);
    req.resumed_tokens.push_back(r.generated[i]);
  }
  const uint64_t attempt = ++r.attempt;
  const int32_t replica = r.replica;
  self->request(st.schedulers[replica], caf::infinite, add_atom::value, std::move(req))
      .then(
          [self, id, attempt](admission_reply& reply) {
            if (reply.error.empty()) return;
            auto it = self->state.requests.find(id);
            if (it == self->state.requests.end() || it->second.attempt != attempt) return;
            send_one(self, it->second.client, error_output(id, reply.error, reply.status));
            forget(self, it);
          },
          [self, id, attempt, replica](caf::error& e) {
            auto it = self->state.requests.find(id);
            if (it == self->state.requests.end() || it->second.attempt != attempt) return;
            // The scheduler ended before it took the request (its down message may still be
            // on its way): the replica is lost either way.
            replica_lost(self, replica, to_string(e), nullptr);
          });
}

/// Moves a request off a lost replica, or ends it with an error when no other replica can
/// take it.
void move_request(router_self self, std::map<std::string, router_request>::iterator it,
                  const std::string& why) {
  auto& st = self->state;
  auto& r = it->second;
  const int32_t from = r.replica;
  st.replicas.release(from, r.charged_tokens);
  r.charged_tokens = 0;
  retire_if_drained(self, from);
  const auto target = st.replicas.pick();
  if (!target || ++r.num_moves > max_moves) {
    const std::string message = "the engine replica serving this request failed (" + why + ")" +
                                (target ? ", as did " + std::to_string(max_moves) + " others"
                                        : ", and no other replica is available");
    send_one(self, r.client, error_output(it->first, message, target ? 500 : 503));
    st.requests.erase(it);
    return;
  }
  r.replica = *target;
  r.charged_tokens = tokens_owed(st, r);
  st.replicas.charge(r.replica, r.charged_tokens);
  dispatch(self, it->first);
  // An abort the old replica got too late to answer goes along: the new one ends it at once.
  if (r.abort_requested) self->send(st.schedulers[r.replica], abort_atom::value, it->first);
}

/// A replica's scheduler ended: no new requests go there, and its requests move on. Its down
/// message (`exit_reason`) is what the hooks hear of; a request bounced by the ended scheduler
/// may tell first.
void replica_lost(router_self self, int32_t index, const std::string& why,
                  const caf::error* exit_reason) {
  auto& st = self->state;
  st.replicas.mark_dead(index);
  st.prefixes.forget(index);  // its cached prefixes are gone with it
  st.sessions.forget_replica(index);
  if (exit_reason && !st.down[index]) {
    st.down[index] = true;
    // A worker that stopped cleanly (SIGTERM) left on purpose: its replica retires.
    const bool retired = *exit_reason == caf::exit_reason::user_shutdown;
    if (st.hooks.on_replica_down) st.hooks.on_replica_down(index, why, retired);
  }
  std::vector<std::string> ids;
  for (const auto& [id, r] : st.requests)
    if (r.replica == index) ids.push_back(id);
  std::fprintf(stderr,
               "router: replica %d is down (%s); moving its %zu requests to other replicas\n",
               index, why.c_str(), ids.size());
  for (const auto& id : ids)
    if (auto it = st.requests.find(id); it != st.requests.end()) move_request(self, it, why);
}

/// Prepares a request and hands it to a replica (a refusal goes straight back to the client).
void admit(router_self self, const generate_request& req, const output_sink_actor& client,
           std::vector<prompt_image> images = {}) {
  auto& st = self->state;
  prepared_prompt prompt = st.prompts->prepare(req, std::move(images));
  if (!prompt.ok())
    return send_one(self, client,
                    error_output(req.request_id, prompt.error, prompt.status, prompt.error_param));
  // The replicas key their prefix caches by adapter (scheduler::cache_salt): so do the hashes.
  const uint64_t salt = static_cast<uint32_t>(prompt.adapter ? prompt.adapter->id : 0);
  const std::vector<uint64_t> hashes =
      st.routing.policy == routing_policy::cache_aware
          ? prompt_block_hashes(prompt.token_ids, st.routing.block_size, salt)
          : std::vector<uint64_t>{};
  // A conversation stays where its last turn ran while that replica serves.
  const bool sticky = !req.session.empty() && st.routing.policy == routing_policy::cache_aware;
  std::optional<route_choice> choice;
  if (const auto last = sticky ? st.sessions.find(req.session) : std::nullopt;
      last && st.replicas.contains(*last) && st.replicas.state(*last) == replica_state::serving)
    choice =
        route_choice{*last, route_reason::session, st.prefixes.num_cached_blocks(*last, hashes)};
  if (!choice)
    choice = choose_replica(st.replicas, st.prefixes, hashes, st.routing, st.routing_turn);
  if (choice && sticky) st.sessions.remember(req.session, choice->replica);
  if (!choice)
    return send_one(self, client,
                    error_output(req.request_id, "no engine replica is available", 503));
  if (st.hooks.on_route)
    st.hooks.on_route(choice->reason, choice->num_cached_blocks,
                      static_cast<int32_t>(hashes.size()));
  const std::optional<int32_t> replica = choice->replica;
  const int32_t n = std::max(1, req.params.n);
  // The client's view of the prompt (echo, prompt logprobs) has the model's placeholder at
  // the images' positions, not their key tokens.
  std::vector<int32_t> shown = prompt.token_ids;
  for (const prompt_image& image : prompt.images)
    std::fill(shown.begin() + image.offset, shown.begin() + image.end(), image.token_id);
  router_request r{output_processor(st.prompts->tok(), req, shown),
                   stream_coalescer(st.stream_interval),
                   client,
                   *replica,
                   0,
                   n,
                   0,
                   std::move(prompt.token_ids),
                   req.params,
                   std::vector<std::vector<int32_t>>(n),
                   std::vector<bool>(n, false)};
  r.adapter = std::move(prompt.adapter);
  r.images = std::move(prompt.images);
  r.params.lora_id = r.adapter ? r.adapter->id : 0;
  r.charged_tokens = tokens_owed(st, r);
  st.replicas.charge(*replica, r.charged_tokens);
  st.requests.emplace(req.request_id, std::move(r));
  dispatch(self, req.request_id);
}

/// A helper actor that prepares one request on a thread of its own: loads its images (fetch,
/// decode, preprocess) and compiles its grammar when new (the grammar is then in the
/// compiler's cache), and answers with the images or the refusal.
caf::behavior input_helper(std::shared_ptr<prompt_builder> prompts, generate_request req) {
  return {[prompts = std::move(prompts), req = std::move(req)](compile_atom) -> prepared_inputs {
    prepared_inputs out;
    for (size_t i = 0; i < req.image_urls.size(); ++i) {
      loaded_image loaded = prompts->images()->load(req.image_urls[i], i);
      if (!loaded.ok()) return {{}, std::move(loaded.error), "messages", loaded.status};
      out.images.push_back(std::move(loaded.image));
    }
    if (prompts->needs_compile(req.params.structured)) {
      prepared_prompt refusal = prompts->check_structured_output(req.params.structured);
      if (!refusal.ok()) return {{}, std::move(refusal.error), std::move(refusal.error_param), 400};
    }
    return out;
  }};
}

/// A request with images, or whose grammar is new: loading and compiling may take seconds (a
/// fetch's timeout, the grammar budget), so they run on a detached helper while this actor
/// goes on routing every other request and stream; the request is admitted (or refused) when
/// the helper answers, unless it was aborted meanwhile.
void prepare_then_admit(router_self self, const generate_request& req,
                        const output_sink_actor& client) {
  auto& st = self->state;
  auto helper = self->spawn<caf::detached>(input_helper, st.prompts, req);
  st.compiling.emplace(req.request_id, helper);
  const auto finish = [self, helper, id = req.request_id] {
    self->send_exit(helper, caf::exit_reason::user_shutdown);
    return self->state.compiling.erase(id) == 1;  // false: aborted meanwhile
  };
  self->request(helper, caf::infinite, compile_atom::value)
      .then(
          [self, finish, req, client](prepared_inputs& inputs) {
            if (!finish()) return;
            if (inputs.error.empty()) return admit(self, req, client, std::move(inputs.images));
            send_one(self, client,
                     error_output(req.request_id, inputs.error, inputs.status, inputs.error_param));
          },
          [self, finish, id = req.request_id, client](caf::error& e) {
            if (finish())
              send_one(self, client,
                       error_output(id, "preparing the request failed: " + describe(e), 500));
          });
}

}  // namespace

router_actor::behavior_type request_router(router_self self,
                                           std::shared_ptr<prompt_builder> prompts,
                                           std::vector<scheduler_actor> schedulers,
                                           remote_replica_factory make_remote_replica,
                                           router_hooks hooks, int32_t stream_interval,
                                           routing_options routing) {
  self->state.prompts = std::move(prompts);
  self->state.stream_interval = stream_interval;
  self->state.routing = routing;
  self->state.hooks = std::move(hooks);
  self->state.probe.report = self->state.hooks.on_mailbox;
  self->state.probe.start(self);
  self->state.make_remote_replica = std::move(make_remote_replica);
  for (auto& s : schedulers) add_replica(self, std::move(s));

  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (int32_t i = 0; i < static_cast<int32_t>(st.schedulers.size()); ++i)
      if (st.schedulers[i].address() == msg.source)
        replica_lost(self, i, describe(msg.reason), &msg.reason);
  });

  return {
      [self](generate_atom, const generate_request& req, const output_sink_actor& client) {
        auto& st = self->state;
        if (st.requests.count(req.request_id) || st.compiling.count(req.request_id))
          return send_one(self, client, error_output(req.request_id, "duplicate request id", 400));
        if (auto refused = st.prompts->check_takes_images(req); !refused.ok())
          return send_one(
              self, client,
              error_output(req.request_id, refused.error, refused.status, refused.error_param));
        if (!req.image_urls.empty() || st.prompts->needs_compile(req.params.structured))
          return prepare_then_admit(self, req, client);
        admit(self, req, client);
      },
      [self](abort_atom, const std::string& id) {
        auto& st = self->state;
        if (auto c = st.compiling.find(id); c != st.compiling.end()) {
          // Not admitted yet: nothing to free; the compile's answer finds no request.
          self->send_exit(c->second, caf::exit_reason::user_shutdown);
          st.compiling.erase(c);
          return;
        }
        auto it = st.requests.find(id);
        if (it == st.requests.end()) return;
        it->second.abort_requested = true;
        self->send(st.schedulers[it->second.replica], abort_atom::value, id);
      },
      [self](outputs_atom, std::vector<request_output>& raw) {
        auto& st = self->state;
        // One message per client for the whole batch: many streams, few mailbox entries.
        std::unordered_map<caf::actor_addr,
                           std::pair<output_sink_actor, std::vector<request_output>>>
            per_client;
        const auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
        for (auto& out : raw) {
          auto it = st.requests.find(out.request_id);
          if (it == st.requests.end()) continue;
          auto& r = it->second;
          // A replica stopped under the request may still send its last step: the request
          // has moved on, and what it is owed comes from its new replica.
          if (sender != st.schedulers[r.replica].address()) continue;
          if (out.index >= 0 && out.index < r.num_choices) {
            auto& g = r.generated[out.index];
            g.insert(g.end(), out.token_ids.begin(), out.token_ids.end());
            if (out.finish != finish_reason::none) r.finished[out.index] = true;
          }
          if (out.finish != finish_reason::none) ++r.num_finished_by_engine;
          auto delta = r.processor.process(std::move(out));
          if (delta) delta = r.coalescer.add(std::move(*delta));
          if (delta) {
            auto& slot = per_client[r.client.address()];
            slot.first = r.client;
            slot.second.push_back(std::move(*delta));
          }
          if (r.processor.all_choices_finished()) {
            // A stop string ended the last choice first: the engine must let go now, and
            // count the request as stopped (the metrics' finished_reason), not aborted.
            if (r.num_finished_by_engine < r.num_choices)
              self->send(st.schedulers[r.replica], stopped_atom::value, it->first);
            forget(self, it);
          }
        }
        for (auto& [addr, slot] : per_client)
          self->send(slot.first, outputs_atom::value, std::move(slot.second));
        if (st.hooks.on_mailbox) st.hooks.on_mailbox(self->mailbox().size());
      },
      [self](kv_events_atom, const kv_cache_events& events) {
        auto& st = self->state;
        const auto sender = caf::actor_cast<caf::actor_addr>(self->current_sender());
        for (int32_t i = 0; i < static_cast<int32_t>(st.schedulers.size()); ++i)
          if (st.schedulers[i].address() == sender && !st.down[i]) st.prefixes.apply(i, events);
      },
      [self](tokenize_atom, const generate_request& req) -> tokenize_reply {
        prepared_prompt p = self->state.prompts->prepare(req);
        if (!p.ok() && p.token_ids.empty() && p.error_param != "prompt")
          return {{}, p.error, p.status};
        return {std::move(p.token_ids), {}, 200};
      },
      [self](detok_atom, const std::vector<int32_t>& ids) -> caf::result<std::string> {
        const tokenizer& tok = self->state.prompts->tok();
        for (int32_t id : ids)
          if (id < 0 || static_cast<size_t>(id) >= tok.vocab_size())
            return caf::make_error(caf::sec::invalid_argument,
                                   "token id " + std::to_string(id) +
                                       " is outside the vocabulary (size " +
                                       std::to_string(tok.vocab_size()) + ")");
        return tok.decode(ids, false);
      },
      [self](reserve_atom) -> int32_t {
        auto& st = self->state;
        const int32_t index = st.replicas.reserve();
        st.schedulers.emplace_back();  // none yet: nothing is routed to a starting replica
        st.down.push_back(false);
        st.remote.push_back(false);
        return index;
      },
      [self](replica_atom, int32_t index, scheduler_actor scheduler) -> bool {
        auto& st = self->state;
        if (!st.replicas.contains(index) || st.replicas.state(index) != replica_state::starting)
          return false;
        self->monitor(scheduler);
        st.schedulers[index] = std::move(scheduler);
        return st.replicas.start_serving(index);
      },
      [self](drain_atom, int32_t index) -> bool {
        if (!self->state.replicas.drain(index)) return false;
        std::fprintf(stderr, "router: draining replica %d (%d requests left)\n", index,
                     self->state.replicas.num_requests(index));
        retire_if_drained(self, index);
        return true;
      },
      [self](retire_atom, int32_t index) -> bool {
        auto& st = self->state;
        if (!st.replicas.contains(index) || st.replicas.state(index) == replica_state::dead)
          return false;
        // As a lost replica: its requests move on from the tokens they have. It is marked
        // dead first, so nothing new goes there and none moves back onto it. They move once
        // its scheduler has answered that it stopped: what it emitted before comes first, so
        // a request it finished meanwhile ends there, and is counted, once, and not again on
        // the replica it would have moved to.
        st.replicas.mark_dead(index);
        const auto stop = [self, index] {
          replica_lost(self, index, "stopped by the operator", nullptr);
          if (self->state.hooks.on_replica_retired) self->state.hooks.on_replica_retired(index);
        };
        if (!st.schedulers[index]) {  // starting: nothing runs there yet
          stop();
          return true;
        }
        self->request(st.schedulers[index], std::chrono::seconds(10), retire_atom::value)
            .then([stop](bool) { stop(); }, [stop](caf::error&) { stop(); });
        return true;
      },
      [self](join_atom, worker_actor worker, const worker_info& info) -> caf::result<int32_t> {
        // A worker from another process, admitted by the join point: build a replica around it.
        auto& st = self->state;
        if (!st.make_remote_replica)
          return caf::make_error(caf::sec::runtime_error, "no remote replicas here");
        // The worker takes the place of a lost remote replica if there is one, so that a
        // restarted worker brings the engine back to all replicas serving.
        int32_t index = -1;
        for (int32_t i = 0; i < st.replicas.size() && index < 0; ++i)
          if (st.remote[i] && st.down[i]) index = i;
        if (index < 0) {
          index = add_replica(
              self,
              st.make_remote_replica(self->system(), std::move(worker), info, st.replicas.size()),
              true);
        } else {
          st.schedulers[index] =
              st.make_remote_replica(self->system(), std::move(worker), info, index);
          self->monitor(st.schedulers[index]);
          st.down[index] = false;
          st.replicas.revive(index);
        }
        std::fprintf(stderr, "router: worker '%s' joined as replica %d (%d KV blocks)\n",
                     info.name.c_str(), index, info.num_device_blocks);
        return index;
      },
      [self](sample_atom) { self->state.probe.sample(self); },
      [self](stats_atom) -> caf::result<std::vector<replica_stats>> {
        auto& st = self->state;
        auto rp = self->make_response_promise<std::vector<replica_stats>>();
        auto collected = std::make_shared<std::vector<replica_stats>>();
        auto num_pending = std::make_shared<size_t>(0);
        // A replica whose scheduler has ended is reported without a message to it: an engine
        // that scaled up and down all day keeps many such, and asks every half second.
        auto dead = [](int32_t i) {
          replica_stats s;
          s.replica = i;
          s.alive = false;
          s.state = to_string(replica_state::dead);
          return s;
        };
        // So is one marked dead before it had a scheduler (its workers failed to start).
        auto ended = [&st](int32_t i) {
          return st.down[i] || st.replicas.state(i) == replica_state::dead;
        };
        for (int32_t i = 0; i < static_cast<int32_t>(st.schedulers.size()); ++i) {
          if (ended(i))
            collected->push_back(dead(i));
          else if (st.schedulers[i])
            ++*num_pending;
        }
        if (*num_pending == 0) {
          rp.deliver(std::move(*collected));
          return rp;
        }
        for (int32_t i = 0; i < static_cast<int32_t>(st.schedulers.size()); ++i) {
          if (!st.schedulers[i] || ended(i)) continue;  // starting: the engine system says
          self->request(st.schedulers[i], std::chrono::seconds(10), stats_atom::value)
              .then(
                  [=](replica_stats& s) mutable {
                    s.replica = i;
                    s.state = to_string(self->state.replicas.state(i));
                    collected->push_back(std::move(s));
                    if (--*num_pending == 0) rp.deliver(std::move(*collected));
                  },
                  [=](caf::error&) mutable {
                    collected->push_back(dead(i));
                    if (--*num_pending == 0) rp.deliver(std::move(*collected));
                  });
        }
        return rp;
      },
  };
}

}  // namespace actorllm

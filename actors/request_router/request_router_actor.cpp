#include "actors/request_router/request_router_actor.hpp"

#include <cstdio>
#include <unordered_map>

#include "common/output_merge.hpp"

namespace actorllm {

namespace {

using self_ptr = router_actor::stateful_pointer<router_state>;

void send_one(self_ptr self, const output_sink_actor& client, request_output out) {
  self->send(client, outputs_atom::value, std::vector<request_output>{std::move(out)});
}

void forget(self_ptr self, std::map<std::string, router_request>::iterator it) {
  self->state.replicas.release(it->second.replica, it->second.charged_tokens);
  self->state.requests.erase(it);
}

int32_t add_replica(self_ptr self, scheduler_actor scheduler) {
  auto& st = self->state;
  const int32_t index = st.replicas.add();
  self->monitor(scheduler);
  st.schedulers.push_back(std::move(scheduler));
  return index;
}

}  // namespace

router_actor::behavior_type request_router(self_ptr self, std::shared_ptr<prompt_builder> prompts,
                                           std::vector<scheduler_actor> schedulers,
                                           remote_replica_factory make_remote_replica,
                                           std::function<void(size_t mailbox_depth)> on_mailbox,
                                           int32_t stream_interval) {
  self->state.prompts = std::move(prompts);
  self->state.stream_interval = stream_interval;
  self->state.on_mailbox = std::move(on_mailbox);
  self->state.make_remote_replica = std::move(make_remote_replica);
  for (auto& s : schedulers) add_replica(self, std::move(s));

  // A dead replica ends its requests with an error; the others keep serving.
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    for (int32_t i = 0; i < static_cast<int32_t>(st.schedulers.size()); ++i) {
      if (st.schedulers[i].address() != msg.source) continue;
      st.replicas.mark_dead(i);
      std::fprintf(stderr, "router: replica %d is down (%s)\n", i, to_string(msg.reason).c_str());
      for (auto it = st.requests.begin(); it != st.requests.end();) {
        if (it->second.replica != i) {
          ++it;
          continue;
        }
        send_one(self, it->second.client,
                 error_output(it->first, "the engine replica serving this request failed", 500));
        it = st.requests.erase(it);
      }
    }
  });

  return {
      [self](generate_atom, const generate_request& req, const output_sink_actor& client) {
        auto& st = self->state;
        if (st.requests.count(req.request_id))
          return send_one(self, client, error_output(req.request_id, "duplicate request id", 400));
        prepared_prompt prompt = st.prompts->prepare(req);
        if (!prompt.ok())
          return send_one(
              self, client,
              error_output(req.request_id, prompt.error, prompt.status, prompt.error_param));
        const auto replica = st.replicas.pick();
        if (!replica)
          return send_one(self, client,
                          error_output(req.request_id, "no engine replica is available", 503));
        const int32_t n = std::max(1, req.params.n);
        // max_tokens -1: until the context is full.
        const int64_t prompt_len = static_cast<int64_t>(prompt.token_ids.size());
        const int64_t max_out = req.params.max_tokens > 0
                                    ? req.params.max_tokens
                                    : st.prompts->max_model_len() - prompt_len;
        const int64_t tokens = prompt_len + max_out * n;
        st.replicas.charge(*replica, tokens);
        st.requests.emplace(
            req.request_id,
            router_request{output_processor(st.prompts->tok(), req, prompt.token_ids),
                           stream_coalescer(st.stream_interval), client, *replica, tokens, n, 0});
        const std::string id = req.request_id;
        self->request(st.schedulers[*replica], caf::infinite, add_atom::value,
                      engine_request{id, std::move(prompt.token_ids), req.params})
            .then(
                [self, id](admission_reply& reply) {
                  if (reply.error.empty()) return;
                  auto it = self->state.requests.find(id);
                  if (it == self->state.requests.end()) return;
                  send_one(self, it->second.client, error_output(id, reply.error, reply.status));
                  forget(self, it);
                },
                [self, id](caf::error& e) {
                  auto it = self->state.requests.find(id);
                  if (it == self->state.requests.end()) return;
                  send_one(self, it->second.client,
                           error_output(id, "engine replica unreachable: " + to_string(e), 503));
                  forget(self, it);
                });
      },
      [self](abort_atom, const std::string& id) {
        auto& st = self->state;
        auto it = st.requests.find(id);
        if (it != st.requests.end())
          self->send(st.schedulers[it->second.replica], abort_atom::value, id);
      },
      [self](outputs_atom, std::vector<request_output>& raw) {
        auto& st = self->state;
        // One message per client for the whole batch: many streams, few mailbox entries.
        std::unordered_map<caf::actor_addr,
                           std::pair<output_sink_actor, std::vector<request_output>>>
            per_client;
        for (auto& out : raw) {
          auto it = st.requests.find(out.request_id);
          if (it == st.requests.end()) continue;
          auto& r = it->second;
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
        if (st.on_mailbox) st.on_mailbox(self->mailbox().size());
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
      [self](replica_atom, scheduler_actor scheduler) -> int32_t {
        return add_replica(self, std::move(scheduler));
      },
      [self](drain_atom, int32_t index) -> bool { return self->state.replicas.drain(index); },
      [self](join_atom, worker_actor worker, const worker_info& info) -> caf::result<int32_t> {
        // A worker from another process, admitted by the join point: build a replica around it.
        auto& st = self->state;
        if (!st.make_remote_replica)
          return caf::make_error(caf::sec::runtime_error, "no remote replicas here");
        auto scheduler = st.make_remote_replica(self->system(), std::move(worker), info,
                                                st.replicas.size());
        const int32_t index = add_replica(self, std::move(scheduler));
        std::fprintf(stderr, "router: worker '%s' joined as replica %d (%d KV blocks)\n",
                     info.name.c_str(), index, info.num_device_blocks);
        return index;
      },
      [self](stats_atom) -> caf::result<std::vector<replica_stats>> {
        auto& st = self->state;
        auto rp = self->make_response_promise<std::vector<replica_stats>>();
        auto collected = std::make_shared<std::vector<replica_stats>>();
        auto num_pending = std::make_shared<size_t>(0);
        for (int32_t i = 0; i < static_cast<int32_t>(st.schedulers.size()); ++i)
          if (st.replicas.outstanding(i) >= 0) ++*num_pending;
        if (*num_pending == 0) {
          rp.deliver(std::vector<replica_stats>{});
          return rp;
        }
        for (int32_t i = 0; i < static_cast<int32_t>(st.schedulers.size()); ++i) {
          self->request(st.schedulers[i], std::chrono::seconds(10), stats_atom::value)
              .then(
                  [=](replica_stats& s) mutable {
                    s.replica = i;
                    collected->push_back(std::move(s));
                    if (--*num_pending == 0) rp.deliver(std::move(*collected));
                  },
                  [=](caf::error&) mutable {
                    replica_stats dead;
                    dead.replica = i;
                    dead.alive = false;
                    collected->push_back(dead);
                    if (--*num_pending == 0) rp.deliver(std::move(*collected));
                  });
        }
        return rp;
      },
  };
}

}  // namespace actorllm

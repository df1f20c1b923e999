// The router's immediate stop of a replica (`retire`, an operator's stop) moves its requests
// only once the replica's scheduler has answered that it emits nothing more. What that
// scheduler emitted before its answer reaches the router first, so a request it finished in
// its last step ends there, once, and does not move to be finished (and counted) again on
// another replica. Stand-in schedulers set the order of the messages: replica 0 finishes
// request "a" just before it answers the stop, while "b" is still running there.
#include <gtest/gtest.h>

#include <caf/all.hpp>
#include <memory>
#include <mutex>

#include "actors/request_router/request_router_actor.hpp"
#include "actors/system/engine_system.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/stories_tokenizer.hpp"

namespace actorllm {
namespace {

using testing::eventually;

/// What the stand-ins and the client saw, read from the test's thread.
struct retire_log {
  std::mutex m;
  std::vector<std::vector<std::string>> added{2};  ///< per replica: the requests handed to it
  std::vector<request_output> client;              ///< every delta the client got, in order
  std::vector<int32_t> retired;                    ///< on_replica_retired's replicas

  template <class F>
  auto read(F f) {
    std::lock_guard lock(m);
    return f();
  }
};

request_output finished_output(const std::string& id, int32_t token) {
  request_output out;
  out.request_id = id;
  out.token_ids = {token};
  out.num_generated_tokens = 1;
  out.finish = finish_reason::length;
  return out;
}

/// A scheduler that takes requests without running them. `finish_on_retire`: a request it
/// ends just before it answers a stop. `finish_on_add`: it ends each request it is handed.
scheduler_actor::behavior_type stand_in_scheduler(scheduler_actor::pointer self, int32_t replica,
                                                  std::shared_ptr<retire_log> log,
                                                  std::string finish_on_retire,
                                                  bool finish_on_add) {
  return {
      [=](add_atom, engine_request& req) {
        log->read([&] { log->added[replica].push_back(req.request_id); });
        if (finish_on_add)
          self->send(caf::actor_cast<replica_sink_actor>(self->current_sender()),
                     outputs_atom::value,
                     std::vector<request_output>{finished_output(req.request_id, 7)});
        return admission_reply{};
      },
      [=](retire_atom) {
        // The router asks: the outputs go back to it, ahead of the answer.
        self->send(caf::actor_cast<replica_sink_actor>(self->current_sender()), outputs_atom::value,
                   std::vector<request_output>{finished_output(finish_on_retire, 5)});
        return true;
      },
      [](abort_atom, std::string&) {},
      [](stopped_atom, std::string&) {},
      [](tick_atom) {},
      [](watchdog_atom) {},
      [](heartbeat_atom) {},
      [](sample_atom) {},
      [=](stats_atom) {
        replica_stats stats;
        stats.replica = replica;
        return stats;
      },
  };
}

output_sink_actor::behavior_type collecting_client(output_sink_actor::pointer,
                                                   std::shared_ptr<retire_log> log) {
  return {[=](outputs_atom, std::vector<request_output>& outs) {
    log->read([&] { log->client.insert(log->client.end(), outs.begin(), outs.end()); });
  }};
}

generate_request prompt_request(const std::string& id) {
  generate_request r;
  r.request_id = id;
  r.kind = prompt_kind::token_ids;
  r.token_ids = {1, 20, 30};
  r.params.max_tokens = 4;
  return r;
}

TEST(replica_retire, a_request_the_stopped_replica_finished_before_it_answered_does_not_move) {
  engine_actor_config config;
  caf::actor_system system{config};
  auto log = std::make_shared<retire_log>();
  auto prompts = std::make_shared<prompt_builder>(testing::stories_tokenizer(), chat_renderer{},
                                                  "stories", 64);
  router_hooks hooks;
  hooks.on_replica_retired = [log](int32_t replica) {
    log->read([&] { log->retired.push_back(replica); });
  };
  auto first = system.spawn(stand_in_scheduler, 0, log, std::string("a"), false);
  auto router = system.spawn(request_router, prompts, std::vector<scheduler_actor>{first},
                             remote_replica_factory{}, hooks, 1,
                             routing_options{routing_policy::least_load, 0, 16});
  auto sink = system.spawn(collecting_client, log);
  caf::anon_send(router, generate_atom::value, prompt_request("a"), sink);
  caf::anon_send(router, generate_atom::value, prompt_request("b"), sink);
  ASSERT_TRUE(eventually([&] { return log->read([&] { return log->added[0].size(); }) == 2; }));

  // A second replica joins: the one the stopped replica's requests can move to.
  caf::scoped_actor self{system};
  int32_t index = -1;
  self->request(router, std::chrono::seconds(5), reserve_atom::value)
      .receive([&](int32_t i) { index = i; }, [](caf::error& e) { FAIL() << to_string(e); });
  ASSERT_EQ(index, 1);
  auto second = system.spawn(stand_in_scheduler, 1, log, std::string("none"), true);
  bool ok = false;
  self->request(router, std::chrono::seconds(5), replica_atom::value, 1, second)
      .receive([&](bool b) { ok = b; }, [](caf::error& e) { FAIL() << to_string(e); });
  ASSERT_TRUE(ok);

  self->request(router, std::chrono::seconds(5), retire_atom::value, 0)
      .receive([&](bool b) { ok = b; }, [](caf::error& e) { FAIL() << to_string(e); });
  ASSERT_TRUE(ok);
  ASSERT_TRUE(eventually([&] { return log->read([&] { return log->retired.size(); }) == 1; }));
  // The stats go through replica 1: it has read whatever the router handed it before.
  self->request(router, std::chrono::seconds(5), stats_atom::value)
      .receive([](std::vector<replica_stats>&) {}, [](caf::error& e) { FAIL() << to_string(e); });
  EXPECT_EQ(log->read([&] { return log->added[1]; }), std::vector<std::string>{"b"})
      << "only the request still running on the stopped replica moves";
  ASSERT_TRUE(eventually([&] { return log->read([&] { return log->client.size(); }) == 2; }));
  log->read([&] {
    EXPECT_EQ(log->client[0].request_id, "a");
    EXPECT_EQ(log->client[0].token_ids, std::vector<int32_t>{5}) << "from the stopped replica";
    EXPECT_EQ(log->client[1].request_id, "b");
    EXPECT_EQ(log->client[1].token_ids, std::vector<int32_t>{7}) << "from the one it moved to";
    for (const auto& out : log->client) EXPECT_EQ(out.finish, finish_reason::length);
  });
  EXPECT_EQ(log->read([&] { return log->retired; }), std::vector<int32_t>{0});
  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(first, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(second, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(sink, caf::exit_reason::user_shutdown);
}

}  // namespace
}  // namespace actorllm

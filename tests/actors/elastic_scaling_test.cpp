// Replicas added, drained and stopped while serving, by hand (engine_system, and the admin
// API's replica_manager) and by load (--autoscale): a replica added under a streaming load
// takes a share of it; a drained one finishes every request it held, with the tokens of a
// run alone, then stops and gives its KV pool back; an immediate stop loses no request; the
// autoscaler goes 1 -> N -> 1 across a burst with every request complete.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "actors/system/engine_system.hpp"
#include "actors/system/replica_manager.hpp"
#include "kernels/cpu/host_memory.hpp"
#include "tests/actors/client_streams.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::eventually;
using testing::streams;

std::map<std::string, std::vector<int32_t>> solo_token_ids(
    engine_system& engine, const std::vector<generate_request>& rs) {
  std::map<std::string, std::vector<int32_t>> alone;
  for (const auto& r : rs) alone[r.request_id] = engine.client().generate({r})[0][0].token_ids;
  return alone;
}

void expect_complete_and_exact(streams& s, const std::vector<generate_request>& requests,
                               const std::map<std::string, std::vector<int32_t>>& alone) {
  for (const auto& r : requests) {
    const auto& out = s.last[r.request_id][0];
    EXPECT_EQ(out.finish, finish_reason::length) << r.request_id << " " << out.error;
    EXPECT_EQ(s.tokens[r.request_id][0], alone.at(r.request_id))
        << r.request_id << ": tokens lost, repeated or changed";
  }
}

replica_stats stats_of(engine_system& engine, int32_t replica) {
  for (const auto& s : engine.stats())
    if (s.replica == replica) return s;
  return {};
}

std::string state_of(replica_manager& admin, int32_t replica) {
  for (const auto& r : admin.snapshot())
    if (r.id == replica) return r.state;
  return "unknown";
}

TEST(elastic_scaling, a_replica_added_under_load_takes_a_share_of_it) {
  engine_system engine(testing::stories_config(256, 16));
  streams s;
  auto first = testing::varied_requests(6, 200, 20, "a");
  for (const auto& r : first) s.submit(engine.client(), r);
  ASSERT_TRUE(eventually([&] { return s.min_tokens() >= 4; }));
  EXPECT_EQ(engine.add_replica(), 1);
  auto second = testing::varied_requests(6, 100, 20, "b");
  for (const auto& r : second) s.submit(engine.client(), r);
  ASSERT_TRUE(s.wait_done(std::chrono::seconds(120)));
  for (const auto* rs : {&first, &second})
    for (const auto& r : *rs) EXPECT_EQ(s.last[r.request_id][0].finish, finish_reason::length);
  EXPECT_GT(stats_of(engine, 1).num_steps, 10u) << "the new replica generated nothing";
  EXPECT_GT(stats_of(engine, 0).num_steps, 10u);
}

TEST(elastic_scaling, a_drained_replica_finishes_its_requests_then_stops_and_frees_its_pool) {
  auto config = testing::stories_config(1024, 64);
  config.parallel.replicas = 2;
  engine_system engine(config);
  replica_manager admin(engine, config);
  const auto requests = testing::varied_requests(12, 200, 30, "d");
  const auto alone = solo_token_ids(engine, requests);

  const size_t pools_before = cpu::pages_in_use();
  streams s;
  for (const auto& r : requests) s.submit(engine.client(), r);
  ASSERT_TRUE(eventually([&] { return s.min_tokens() >= 8; }));
  ASSERT_GT(stats_of(engine, 0).scheduler.num_running, 0) << "replica 0 holds nothing to drain";

  std::promise<admin_outcome> drained;
  admin.drain_replica(0, [&](admin_outcome o) { drained.set_value(o); });
  const admin_outcome out = drained.get_future().get();
  EXPECT_EQ(out.status, 202) << out.error;
  EXPECT_EQ(state_of(admin, 0), "draining");
  // Nothing new goes to a draining replica.
  const auto late = testing::ids_request("late", {1, 400, 401}, 20);
  s.submit(engine.client(), late);

  ASSERT_TRUE(s.wait_done(std::chrono::seconds(120)));
  expect_complete_and_exact(s, requests, alone);
  EXPECT_EQ(s.last["late"][0].finish, finish_reason::length);
  ASSERT_TRUE(eventually([&] { return state_of(admin, 0) == "dead"; }))
      << "the drained replica did not stop";
  // Its workers' KV pools (device and swap) are unmapped: exactly one replica's worth fewer.
  const auto& runner = engine.setup().runner;
  const size_t pool_bytes = size_t(runner.num_device_blocks + runner.num_cpu_blocks) *
                            size_t(engine.setup()
                                       .model->cache_shape(1, runner.block_size, runner.cache_dtype)
                                       .bytes_per_block());
  ASSERT_TRUE(eventually([&] { return cpu::pages_in_use() + pool_bytes == pools_before; }))
      << cpu::pages_in_use() << " bytes of pools, " << pools_before << " before";
  EXPECT_EQ(state_of(admin, 1), "serving");
  // A second drain is refused: it is no longer serving.
  std::promise<admin_outcome> again;
  admin.drain_replica(0, [&](admin_outcome o) { again.set_value(o); });
  EXPECT_EQ(again.get_future().get().status, 409);
}

TEST(elastic_scaling, an_immediate_stop_moves_its_requests_and_loses_none) {
  auto config = testing::stories_config(256, 16);
  config.parallel.replicas = 2;
  engine_system engine(config);
  const auto requests = testing::varied_requests(10, 200, 30, "s");
  const auto alone = solo_token_ids(engine, requests);
  streams s;
  for (const auto& r : requests) s.submit(engine.client(), r);
  ASSERT_TRUE(eventually([&] { return s.min_tokens() >= 8; }));
  ASSERT_GT(stats_of(engine, 0).scheduler.num_running, 0);
  ASSERT_TRUE(engine.stop_replica(0));
  EXPECT_FALSE(engine.stop_replica(0)) << "stopped twice";
  ASSERT_TRUE(s.wait_done(std::chrono::seconds(120)));
  expect_complete_and_exact(s, requests, alone);
  EXPECT_GT(stats_of(engine, 1).num_steps, 0u);
  EXPECT_FALSE(stats_of(engine, 0).alive);
  // The engine view lists both: the stopped one dead, the survivor with its tokens. It hears
  // of the stop from the stopped scheduler's down message, which may land after the moved
  // requests ended (or at once, when it had finished them all before the stop).
  nlohmann::json view;
  ASSERT_TRUE(eventually([&] {
    view = nlohmann::json::parse(engine.client().engine_stats_json());
    return view["replicas"].size() == 2u && view["replicas"][0]["state"] == "dead";
  })) << view.dump();
  EXPECT_GT(view["replicas"][1]["generation_tokens"].get<int64_t>(), 0);
  EXPECT_EQ(view["totals"]["requests_finished"]["length"].get<int64_t>(),
            static_cast<int64_t>(2 * requests.size()))
      << "the solo runs and the moved requests, each counted once";
  // The engine goes on serving on the survivor.
  EXPECT_EQ(engine.client().generate({requests[0]})[0][0].token_ids, alone.at("s0"));
}

TEST(elastic_scaling, the_admin_calls_check_their_arguments) {
  auto config = testing::stories_config(64, 8);
  engine_system engine(config);
  replica_manager admin(engine, config);
  auto call = [](auto&& start) {
    std::promise<admin_outcome> p;
    start([&](admin_outcome o) { p.set_value(std::move(o)); });
    return p.get_future().get();
  };
  EXPECT_EQ(call([&](auto done) { admin.add_replicas(0, "", done); }).status, 400);
  EXPECT_EQ(call([&](auto done) { admin.add_replicas(17, "", done); }).status, 400);
  const auto wrong_device = call([&](auto done) { admin.add_replicas(1, "cuda:3", done); });
  EXPECT_EQ(wrong_device.status, 400);
  EXPECT_NE(wrong_device.error.find("run on cpu"), std::string::npos) << wrong_device.error;
  EXPECT_EQ(call([&](auto done) { admin.drain_replica(9, done); }).status, 404);
  EXPECT_EQ(call([&](auto done) { admin.stop_replica(-1, done); }).status, 404);

  const auto added = call([&](auto done) { admin.add_replicas(2, "cpu", done); });
  EXPECT_EQ(added.status, 202);
  EXPECT_EQ(added.ids, (std::vector<int32_t>{1, 2}));
  ASSERT_TRUE(eventually([&] { return state_of(admin, 2) == "serving"; }));
  std::promise<std::vector<replica_view>> listed;
  admin.replicas([&](std::vector<replica_view> v) { listed.set_value(std::move(v)); });
  const auto views = listed.get_future().get();
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[1].device, "cpu");
  EXPECT_EQ(views[1].workers, 1);
  EXPECT_EQ(call([&](auto done) { admin.stop_replica(1, done); }).status, 202);
  ASSERT_TRUE(eventually([&] { return state_of(admin, 1) == "dead"; }));
  EXPECT_EQ(call([&](auto done) { admin.stop_replica(1, done); }).status, 409);
  // The engine view (the web page's) shows each replica's state as it changes: it hears of
  // the stop from the monitoring, a moment after the admin's snapshot (seen under ASan).
  nlohmann::json view;
  ASSERT_TRUE(eventually([&] {
    view = nlohmann::json::parse(engine.client().engine_stats_json());
    return view["replicas"].size() == 3u && view["replicas"][1]["state"] == "dead";
  })) << view.dump();
  EXPECT_EQ(view["replicas"][2]["state"], "serving");
  // What does not fit in memory is refused before anything starts.
  EXPECT_NE(admin.capacity_refusal(1 << 30).find("MiB"), std::string::npos);
  EXPECT_EQ(admin.capacity_refusal(1), "");
  const std::string metrics = engine.client().metrics_text();
  EXPECT_NE(metrics.find("actorllm:scale_events_total"), std::string::npos);
  EXPECT_NE(metrics.find("actorllm:replicas{"), std::string::npos);
}

TEST(elastic_scaling, a_dead_replica_leaves_the_listings_after_its_grace_time) {
  auto config = testing::stories_config(64, 8);
  engine_system engine(config);
  replica_manager admin(engine, config, /*dead_grace_s=*/1.0);
  auto call = [](auto&& start) {
    std::promise<admin_outcome> p;
    start([&](admin_outcome o) { p.set_value(std::move(o)); });
    return p.get_future().get();
  };
  ASSERT_EQ(call([&](auto done) { admin.add_replicas(1, "cpu", done); }).status, 202);
  ASSERT_TRUE(eventually([&] { return state_of(admin, 1) == "serving"; }));
  ASSERT_EQ(call([&](auto done) { admin.stop_replica(1, done); }).status, 202);
  ASSERT_TRUE(eventually([&] { return state_of(admin, 1) == "dead"; }));
  // Listed dead for its grace time (sampled once a second), then gone from every listing.
  ASSERT_TRUE(eventually([&] { return state_of(admin, 1) == "unknown"; }))
      << "still listed: " << state_of(admin, 1);
  nlohmann::json view;
  ASSERT_TRUE(eventually([&] {
    view = nlohmann::json::parse(engine.client().engine_stats_json());
    return view["replicas"].size() == 1u;
  })) << view.dump();
  EXPECT_EQ(view["replicas"][0]["state"], "serving");
  // The metrics drop its series when the monitoring hears of the removal, a moment after the
  // listings (seen under load: the series still there right after).
  EXPECT_TRUE(eventually([&] {
    return engine.client().metrics_text().find("replica=\"1\"") == std::string::npos;
  })) << "replica 1's series still in /metrics";
  EXPECT_TRUE(engine.client().health().ok);
  // Replica 0 serves on.
  EXPECT_EQ(engine.client().generate({testing::ids_request("after", {1, 403}, 4)})[0][0].finish,
            finish_reason::length);
}

TEST(elastic_scaling, every_actor_samples_its_own_mailbox_depth) {
  engine_system engine(testing::stories_config(64, 8));
  // The first sample is taken as each actor starts; no request, no step needed.
  for (const char* actor :
       {"http_gateway", "router", "scheduler-0", "cache_engine-0", "replica0-worker0"}) {
    const std::string series = std::string("actor=\"") + actor + "\"";
    EXPECT_TRUE(eventually(
        [&] {
          std::istringstream lines(engine.client().metrics_text());
          for (std::string line; std::getline(lines, line);)
            if (line.rfind("actorllm:actor_mailbox_depth{", 0) == 0 &&
                line.find(series) != std::string::npos)
              return true;
          return false;
        },
        std::chrono::seconds(5)))
        << actor;
  }
}

TEST(elastic_scaling, the_series_of_long_retired_replicas_are_dropped) {
  engine_monitoring m("m", 128, 0);
  const cache_config_values cache{16, 64, 8, 1.0};
  auto series_of = [&](int32_t replica) {
    const std::string metrics = m.render();
    return metrics.find("replica=\"" + std::to_string(replica) + "\"") != std::string::npos;
  };
  auto mailbox_of = [&](const std::string& actor) {
    return m.render().find("actor=\"" + actor + "\"") != std::string::npos;
  };
  for (int32_t i = 0; i < 12; ++i) {
    m.hooks_for(i, cache);
    m.set_mailbox_depth("scheduler-" + std::to_string(i), 1);
    m.set_mailbox_depth("replica" + std::to_string(i) + "-worker0", 1);
  }
  m.set_mailbox_depth("router", 0);
  for (int32_t i = 0; i < 11; ++i) m.replica_down(i, "stopped", true);  // 11 keeps serving
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(series_of(i)) << i;
    EXPECT_FALSE(mailbox_of("scheduler-" + std::to_string(i))) << i;
    EXPECT_FALSE(mailbox_of("replica" + std::to_string(i) + "-worker0")) << i;
  }
  for (int32_t i = 3; i < 12; ++i) EXPECT_TRUE(series_of(i)) << "the last 8 retired, and 11";
  EXPECT_TRUE(mailbox_of("scheduler-5"));
  EXPECT_TRUE(mailbox_of("router"));
  // A failed replica is never dropped (its /health matters), and one that serves again (a
  // worker joined in its place) is no longer retired.
  m.replica_down(11, "worker lost", false);
  m.hooks_for(3, cache);
  for (int32_t i = 12; i < 30; ++i) {
    m.hooks_for(i, cache);
    m.replica_down(i, "stopped", true);
  }
  EXPECT_TRUE(series_of(11));
  EXPECT_TRUE(series_of(3));
  EXPECT_FALSE(series_of(4));
  EXPECT_TRUE(series_of(29));
}

TEST(elastic_scaling, autoscaling_goes_up_across_a_burst_and_back_to_min_with_nothing_lost) {
  auto config = testing::stories_config(256, 16);
  config.scheduler.max_num_seqs = 1;  // a burst queues at once
  config.autoscale.min_replicas = 1;
  config.autoscale.max_replicas = 3;
  config.autoscale.up_window_s = 0.2;
  config.autoscale.down_window_s = 0.5;
  config.autoscale.cooldown_s = 0.3;
  config.autoscale.interval_s = 0.05;
  engine_system engine(config);
  replica_manager scaler(engine, config);

  streams s;
  std::vector<generate_request> burst;
  int32_t most_serving = 0;
  auto count_serving = [&] {
    int32_t n = 0;
    for (const auto& r : scaler.snapshot()) n += r.state == "serving";
    most_serving = std::max(most_serving, n);
    return n;
  };
  // Arrivals far faster than a replica of one sequence serves them, for a second: its queue
  // stays long past the up window, and later arrivals go to the new replicas.
  for (int i = 0; i < 100; ++i) {
    auto r = testing::ids_request("burst" + std::to_string(i), {1, 300 + i}, 400);
    s.submit(engine.client(), r);
    burst.push_back(std::move(r));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    count_serving();
  }
  while (!s.wait_done(std::chrono::seconds(0))) {
    count_serving();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const auto& r : burst) {
    EXPECT_EQ(s.last[r.request_id][0].finish, finish_reason::length) << r.request_id;
    EXPECT_EQ(s.tokens[r.request_id][0].size(), 400u) << r.request_id;
  }
  EXPECT_GE(most_serving, 2) << "the burst added no replica";
  ASSERT_TRUE(eventually([&] { return count_serving() == 1; }, std::chrono::seconds(30)))
      << "the idle engine did not scale back to MIN";
  const std::string metrics = engine.client().metrics_text();
  EXPECT_NE(metrics.find("direction=\"up\""), std::string::npos);
  EXPECT_NE(metrics.find("direction=\"down\""), std::string::npos);
}

}  // namespace
}  // namespace actorllm

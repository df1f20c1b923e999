// /health is the engine's liveness: not ok while any replica is down or restarting its
// workers, with the reason naming it, and ok again once every replica serves (a worker that
// joins takes the lost one's place). Two gauges say the same to Prometheus.
#include "monitoring/replica_health.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "tests/actors/remote_worker_node.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::eventually;

const std::string health_secret = "health test secret";

/// The value of `name{...}` whose labels include `label` (-1: no such series).
double series(const std::string& metrics, const std::string& name, const std::string& label) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("actorllm:" + name + "{", 0) != 0) continue;
    if (!label.empty() && line.find(label) == std::string::npos) continue;
    return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

TEST(replica_health, restarting_and_down_replicas_are_named_and_counted_until_they_serve) {
  metrics_registry registry;
  replica_health h(registry, "m");
  h.set_serving(0, "replica 0");
  h.set_serving(1, "replica 1 (remote worker 'a')");
  EXPECT_EQ(h.problems(), "");
  EXPECT_EQ(series(registry.render(), "replicas_unhealthy", ""), 0);
  EXPECT_EQ(series(registry.render(), "replica_up", "replica=\"1\""), 1);

  h.worker_down(0, 0, "replica0-worker0 was lost");
  h.worker_down(0, 1, "replica0-worker1 was lost");
  EXPECT_EQ(h.problems(), "replica 0 is restarting its workers (replica0-worker1 was lost)");
  h.worker_up(0, 0);
  EXPECT_EQ(h.num_unhealthy(), 1) << "rank 1 is not back yet";
  h.set_down(1, "exit_reason(kill)");
  EXPECT_EQ(h.problems(),
            "replica 0 is restarting its workers (replica0-worker1 was lost); replica 1 (remote "
            "worker 'a') is down (exit_reason(kill))");
  EXPECT_EQ(series(registry.render(), "replicas_unhealthy", ""), 2);
  EXPECT_EQ(series(registry.render(), "replica_up", "replica=\"0\""), 0);
  EXPECT_EQ(series(registry.render(), "replica_up", "replica=\"1\""), 0);
  h.worker_up(0, 1);
  h.worker_up(1, 0);  // a down replica does not come back by a stray worker report
  EXPECT_EQ(h.problems(), "replica 1 (remote worker 'a') is down (exit_reason(kill))");
  h.set_serving(1, "replica 1 (remote worker 'b')");  // a worker joined in its place
  EXPECT_EQ(h.problems(), "");
  EXPECT_EQ(series(registry.render(), "replicas_unhealthy", ""), 0);
  EXPECT_EQ(series(registry.render(), "replica_up", "replica=\"1\""), 1);
  EXPECT_EQ(h.num_serving(), 2);
  h.set_retired(1);  // left on purpose
  EXPECT_EQ(h.problems(), "");
  EXPECT_EQ(series(registry.render(), "replica_up", "replica=\"1\""), 0);
  EXPECT_EQ(h.num_serving(), 1);
  h.set_down(0, "exit_reason(kill)");
  EXPECT_EQ(h.num_serving(), 0);
}

struct cluster {
  engine_system engine{testing::stories_config(256, 16)};
  uint16_t port = 0;
  cluster() {
    auto bound = engine.publish(0, "127.0.0.1", health_secret);
    if (auto* p = std::get_if<uint16_t>(&bound))
      port = *p;
    else
      ADD_FAILURE() << std::get<std::string>(bound);
  }
  engine_health health() { return engine.client().health(); }
  double up(int replica) {
    return series(engine.client().metrics_text(), "replica_up",
                  "replica=\"" + std::to_string(replica) + "\"");
  }
  double unhealthy() { return series(engine.client().metrics_text(), "replicas_unhealthy", ""); }
};

TEST(engine_health, a_lost_remote_replica_is_named_while_the_local_one_keeps_health_up) {
  cluster c;
  EXPECT_TRUE(c.health().ok);
  auto node = std::make_unique<testing::remote_worker_node>(testing::stories_config(256, 16), "a");
  ASSERT_TRUE(std::holds_alternative<joined_cluster>(node->join(c.port, health_secret)));
  EXPECT_TRUE(c.health().ok) << c.health().reason;
  EXPECT_EQ(c.up(1), 1);

  node->kill();
  // The replica may first read "restarting" (its supervisor saw the worker go) before the
  // router marks it down: wait for the state it settles in.
  const std::string down = "replica 1 (remote worker 'a') is down";
  ASSERT_TRUE(eventually([&] { return c.health().reason.find(down) != std::string::npos; }))
      << c.health().reason;
  const engine_health h = c.health();
  EXPECT_TRUE(h.ok) << "replica 0 serves";
  EXPECT_EQ(h.reason.find("replica 0"), std::string::npos) << h.reason;
  EXPECT_EQ(c.up(1), 0);
  EXPECT_EQ(c.up(0), 1);
  EXPECT_EQ(c.unhealthy(), 1);
  // Requests are still admitted: the engine runs, replica 0 serves them.
  EXPECT_TRUE(c.engine.client().healthy());
  EXPECT_EQ(c.engine.client().generate({testing::ids_request("x", {1}, 8)})[0][0].finish,
            finish_reason::length);

  node = std::make_unique<testing::remote_worker_node>(testing::stories_config(256, 16), "b");
  const auto joined = node->join(c.port, health_secret);
  ASSERT_TRUE(std::holds_alternative<joined_cluster>(joined));
  EXPECT_EQ(std::get<joined_cluster>(joined).replica, 1) << "the lost replica's place";
  EXPECT_TRUE(c.health().ok) << c.health().reason;
  EXPECT_EQ(c.up(1), 1);
  EXPECT_EQ(c.unhealthy(), 0);
  // The rebuilt replica serves.
  ASSERT_TRUE(c.engine.drain_replica(0));
  const auto out = c.engine.client().generate({testing::ids_request("y", {1}, 16)});
  EXPECT_EQ(out[0][0].finish, finish_reason::length);
  EXPECT_EQ(c.engine.stats().size(), 2u);
}

// /health is 200 while any replica serves: with the last one stopped, nothing does.
TEST(engine_health, no_replica_serving_fails_health) {
  cluster c;
  EXPECT_TRUE(c.health().ok);
  ASSERT_TRUE(c.engine.stop_replica(0));
  ASSERT_TRUE(eventually([&] { return !c.health().ok; })) << c.health().reason;
  EXPECT_NE(c.health().reason.find("no replica serves the model"), std::string::npos)
      << c.health().reason;
}

TEST(engine_health, a_worker_that_leaves_cleanly_retires_its_replica_without_failing_health) {
  cluster c;
  auto node = std::make_unique<testing::remote_worker_node>(testing::stories_config(256, 16), "a");
  ASSERT_TRUE(std::holds_alternative<joined_cluster>(node->join(c.port, health_secret)));
  node.reset();  // its worker stops, its actor system shuts down
  ASSERT_TRUE(eventually([&] { return c.up(1) == 0; }));
  EXPECT_TRUE(c.health().ok) << c.health().reason;
  EXPECT_EQ(c.unhealthy(), 0);
}

TEST(engine_health, a_replica_whose_local_worker_was_replaced_serves_again) {
  cluster c;
  caf::anon_send_exit(c.engine.initial_workers(0)[0], caf::exit_reason::kill);
  ASSERT_TRUE(eventually([&] { return c.health().ok && c.up(0) == 1; })) << c.health().reason;
  EXPECT_EQ(c.engine.client().generate({testing::ids_request("z", {1}, 8)})[0][0].finish,
            finish_reason::length);
  EXPECT_EQ(c.engine.stats()[0].num_worker_restarts, 1);
}

TEST(engine_health, the_default_health_follows_healthy) {
  struct port : engine_port {
    bool alive = true;
    void submit(generate_request, output_callback) override {}
    void abort(const std::string&) override {}
    void tokenize(generate_request, std::function<void(tokenize_result)>) override {}
    void detokenize(detokenize_request, std::function<void(detokenize_result)>) override {}
    bool healthy() const override { return alive; }
    model_info model() const override { return {}; }
    std::string metrics_text() override { return {}; }
    std::size_t num_waiting() const override { return 0; }
  } p;
  EXPECT_TRUE(p.health().ok);
  p.alive = false;
  EXPECT_FALSE(p.health().ok);
  EXPECT_EQ(p.health().reason, "the engine is not running");
}

}  // namespace
}  // namespace actorllm

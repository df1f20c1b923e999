// A replica lost for good (its remote worker killed, or gone with its process) does not take
// its requests with it: the router moves them to a surviving replica, which recomputes the
// prompt and the tokens already streamed and goes on, so that each client sees one stream,
// with exactly the tokens of a run alone; the lost replica's gauges read zero.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>

#include "actors/scheduler/scheduler.hpp"
#include "tests/actors/client_streams.hpp"
#include "tests/actors/remote_worker_node.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::gauge;
using testing::streams;

const std::string failover_secret = "failover test secret";

TEST(scheduler_resume, a_resumed_request_recomputes_its_choices_and_goes_on_from_their_tokens) {
  scheduler_options o;
  o.block_size = 4;
  o.num_device_blocks = 16;
  o.max_model_len = 64;
  scheduler s(o);
  sampling_params p;
  p.n = 3;
  p.max_tokens = 4;
  p.temperature = 0;
  // Choice 1 ended on the lost replica; 0 and 2 had 2 and 1 tokens.
  ASSERT_FALSE(s.resume_request("r", {1, 2, 3}, p, {{0, {5, 6}}, {2, {7}}}));
  EXPECT_EQ(s.stats().num_waiting, 1);
  std::map<int32_t, std::vector<int32_t>> sent;  // choice -> the tokens plans sent the workers
  std::map<int32_t, std::vector<int32_t>> made;  // choice -> tokens of the outputs
  std::map<int32_t, request_output> last;
  std::map<seq_id, int32_t> index_of;
  for (int step = 0; step < 20 && s.has_work(); ++step) {
    const step_plan plan = s.schedule();
    s.check_invariants();
    for (const auto& n : plan.new_seqs) {
      EXPECT_EQ(n.num_prompt_tokens, 3);
      index_of[n.seq] = n.index;
    }
    step_result result;
    result.step = plan.step;
    for (const auto& q : plan.seqs) {
      auto& t = sent[index_of.at(q.seq)];
      t.insert(t.end(), q.new_token_ids.begin(), q.new_token_ids.end());
      EXPECT_LE(q.num_samples, 1);  // a resumed request has forked already
      if (q.num_samples)
        result.seqs.push_back({q.seq, {40 + index_of.at(q.seq)}, {}, {}, {}, {}, 0, {}});
    }
    for (const auto& out : s.update(result)) {
      auto& t = made[out.index];
      t.insert(t.end(), out.token_ids.begin(), out.token_ids.end());
      last[out.index] = out;
    }
    s.check_invariants();
  }
  EXPECT_FALSE(s.has_work());
  // Each choice recomputed its prompt and its own tokens, and went on from there (the
  // workers keep the tokens they sample themselves: a plan never sends them back).
  EXPECT_EQ(sent[0], (std::vector<int32_t>{1, 2, 3, 5, 6}));
  EXPECT_EQ(sent[2], (std::vector<int32_t>{1, 2, 3, 7}));
  EXPECT_EQ(sent.count(1), 0u) << "a finished choice is not resumed";
  // max_tokens counts the tokens made before: 2 more for choice 0, 3 more for choice 2.
  EXPECT_EQ(made[0], (std::vector<int32_t>{40, 40}));
  EXPECT_EQ(made[2], (std::vector<int32_t>{42, 42, 42}));
  EXPECT_EQ(last[0].finish, finish_reason::length);
  EXPECT_EQ(last[0].num_generated_tokens, 4);
  EXPECT_EQ(last[0].num_prompt_tokens, 3);
  EXPECT_EQ(last[2].finish, finish_reason::length);
  EXPECT_EQ(last[2].num_generated_tokens, 4);
  EXPECT_EQ(s.stats().device.num_used, 0);
}

TEST(scheduler_resume, a_choice_that_cannot_go_on_here_is_refused) {
  scheduler_options o;
  o.block_size = 4;
  o.num_device_blocks = 2;
  o.max_model_len = 64;
  scheduler s(o);
  sampling_params p;
  p.max_tokens = 3;
  EXPECT_TRUE(s.resume_request("full", {1, 2}, p, {{0, {5, 6, 7}}}));  // max_tokens reached
  p.max_tokens = 20;
  const auto refused = s.resume_request("big", {1, 2}, p, {{0, {5, 6, 7, 8, 9, 10, 11}}});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->kind, admission_error::code::exceeds_kv_cache);
  EXPECT_FALSE(s.resume_request("fits", {1, 2}, p, {{0, {5, 6, 7}}}));
  s.check_invariants();
}

enum class loss { worker_killed, process_gone };

void expect_seamless_failover(loss how) {
  engine_system engine(testing::stories_config(256, 16));
  const auto bound = engine.publish(0, "127.0.0.1", failover_secret);
  ASSERT_TRUE(std::holds_alternative<uint16_t>(bound));
  auto requests = testing::varied_requests(8, 240, 30, "f");
  requests[3].params.n = 2;  // greedy: both choices are the solo run
  std::map<std::string, std::vector<int32_t>> alone;
  for (const auto& r : requests)
    alone[r.request_id] = engine.client().generate({r})[0][0].token_ids;

  auto node = std::make_unique<testing::remote_worker_node>(testing::stories_config(256, 16));
  const auto joined = node->join(std::get<uint16_t>(bound), failover_secret);
  ASSERT_TRUE(std::holds_alternative<joined_cluster>(joined));
  streams s;
  for (const auto& r : requests) s.submit(engine.client(), r);
  // Mid-stream: every choice has streamed some tokens, and the remote replica holds requests.
  for (int i = 0; i < 5000 && s.min_tokens() < 8; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(s.min_tokens(), 8u);
  const std::string before = engine.client().metrics_text();
  ASSERT_GT(gauge(before, "num_requests_running", 1), 0) << "no request ran on the remote worker";
  ASSERT_GT(gauge(before, "kv_cache_usage_perc", 1), 0);
  if (how == loss::worker_killed)
    node->kill();
  else
    node.reset();  // its actor system shuts down: the connection closes

  ASSERT_TRUE(s.wait_done(std::chrono::seconds(60))) << "streams still open after the loss";
  for (const auto& r : requests) {
    for (int32_t i = 0; i < std::max(1, r.params.n); ++i) {
      const auto& out = s.last[r.request_id][i];
      EXPECT_EQ(out.finish, finish_reason::length) << r.request_id << " " << out.error;
      EXPECT_EQ(s.tokens[r.request_id][i], alone[r.request_id])
          << r.request_id << " choice " << i << ": tokens lost, repeated or changed";
      EXPECT_EQ(out.num_generated_tokens, static_cast<int32_t>(alone[r.request_id].size()));
    }
  }
  // The lost replica's gauges are zero, not its last state.
  const std::string after = engine.client().metrics_text();
  EXPECT_EQ(gauge(after, "num_requests_running", 1), 0);
  EXPECT_EQ(gauge(after, "num_requests_waiting", 1), 0);
  EXPECT_EQ(gauge(after, "kv_cache_usage_perc", 1), 0);
  EXPECT_EQ(gauge(after, "num_free_blocks", 1, "pool=\"device\""), 0);
  // The survivor finished them. Its gauges follow the step that sent the last token, so the
  // streams may end a moment before they read 0.
  EXPECT_TRUE(testing::eventually([&] {
    return gauge(engine.client().metrics_text(), "num_requests_running", 0) == 0;
  })) << "the survivor still counts a running request";
  // New requests go to the survivor.
  const auto later = engine.client().generate({requests[0]});
  EXPECT_EQ(later[0][0].token_ids, alone[requests[0].request_id]);
}

TEST(replica_failover, a_killed_remote_worker_s_streams_go_on_on_a_survivor_with_exact_tokens) {
  expect_seamless_failover(loss::worker_killed);
}

TEST(replica_failover, a_worker_process_gone_mid_stream_loses_no_token_either) {
  expect_seamless_failover(loss::process_gone);
}

TEST(replica_failover, with_no_replica_left_the_streams_end_with_an_error_not_a_hang) {
  engine_system engine(testing::stories_config(256, 16));
  const auto bound = engine.publish(0, "127.0.0.1", failover_secret);
  ASSERT_TRUE(std::holds_alternative<uint16_t>(bound));
  testing::remote_worker_node node(testing::stories_config(256, 16));
  ASSERT_TRUE(std::holds_alternative<joined_cluster>(
      node.join(std::get<uint16_t>(bound), failover_secret)));
  ASSERT_TRUE(engine.drain_replica(0));
  streams s;
  const auto requests = testing::varied_requests(4, 240, 30, "n");
  for (const auto& r : requests) s.submit(engine.client(), r);
  for (int i = 0; i < 5000 && s.min_tokens() < 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(s.min_tokens(), 4u);
  node.kill();
  ASSERT_TRUE(s.wait_done(std::chrono::seconds(30)));
  for (const auto& r : requests) {
    const auto& out = s.last[r.request_id][0];
    EXPECT_EQ(out.finish, finish_reason::error);
    EXPECT_EQ(out.error_status, 503);
    EXPECT_NE(out.error.find("no other replica is available"), std::string::npos) << out.error;
  }
}

}  // namespace
}  // namespace actorllm

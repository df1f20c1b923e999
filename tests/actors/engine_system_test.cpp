// The engine through its actors: golden output, 64 concurrent requests equal to their solo
// runs with real batching, abort frees blocks, a killed worker recovers, replicas.
#include "actors/system/engine_system.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

using testing::ids_request;

engine_config base_config() {
  return testing::stories_config(512, 64);
}

std::vector<generate_request> varied(int count, int max_tokens) {
  return testing::varied_requests(count, max_tokens, 40, "q");
}

/// Waits until every replica is idle with no block in use (or times out).
bool wait_idle(engine_system& e) {
  for (int i = 0; i < 200; ++i) {
    bool idle = true;
    for (const auto& s : e.stats())
      idle &= s.scheduler.num_running + s.scheduler.num_waiting + s.scheduler.num_swapped == 0 &&
              s.scheduler.device.num_used == 0;
    if (idle) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

/// Waits (bounded) until replica 0 is generating, so that a fault lands mid-run rather than
/// before the requests arrive or after they end.
bool wait_generating(engine_system& e) {
  for (int i = 0; i < 5000; ++i) {
    const auto s = e.stats()[0].scheduler;
    if (s.num_running > 0 && s.num_waiting == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

/// Every choice of every request completed: the test requests ignore EOS, so each ends by
/// length with exactly max_tokens tokens and some text. A choice that ended in error counts
/// as a failure, never as a skip.
void expect_all_complete(const std::vector<generate_request>& requests,
                         const std::vector<std::vector<request_output>>& out) {
  ASSERT_EQ(out.size(), requests.size());
  int num_failed = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].size(), static_cast<size_t>(requests[i].params.n)) << "request " << i;
    for (const auto& choice : out[i]) {
      num_failed += choice.finish == finish_reason::error;
      EXPECT_EQ(choice.finish, finish_reason::length) << "request " << i << ": " << choice.error;
      EXPECT_EQ(choice.token_ids.size(), static_cast<size_t>(requests[i].params.max_tokens))
          << "request " << i;
      EXPECT_FALSE(choice.text.empty()) << "request " << i;
    }
  }
  EXPECT_EQ(num_failed, 0) << "choices that ended in error";
}

/// Each request run alone (and checked complete): the reference for the requests together.
std::vector<request_output> solo_runs(engine_system& engine,
                                      const std::vector<generate_request>& requests) {
  std::vector<request_output> alone;
  for (const auto& r : requests) {
    const auto out = engine.client().generate({r});
    expect_all_complete({r}, out);
    alone.push_back(out.at(0).at(0));
  }
  return alone;
}

/// Every request completed with exactly the tokens and text of its solo run.
void expect_as_alone(const std::vector<generate_request>& requests,
                     const std::vector<std::vector<request_output>>& out,
                     const std::vector<request_output>& alone) {
  expect_all_complete(requests, out);
  ASSERT_EQ(out.size(), alone.size());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_FALSE(out[i].empty()) << "request " << i;
    EXPECT_EQ(out[i][0].token_ids, alone[i].token_ids) << "request " << i;
    EXPECT_EQ(out[i][0].text, alone[i].text) << "request " << i;
  }
}

TEST(engine_system, golden_greedy_through_the_actors) {
  engine_system engine(base_config());
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  const auto g = nlohmann::json::parse(in);
  const auto out = engine.client().generate({ids_request("g", {1}, 120)});
  EXPECT_EQ(out[0][0].token_ids, g["output_token_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(out[0][0].text, g["output_text"].get<std::string>());
  EXPECT_TRUE(wait_idle(engine));
}

/// The value of request_success_total{finished_reason=reason} in a /metrics text (-1: absent).
double success_count(const std::string& metrics, const std::string& reason) {
  std::istringstream lines(metrics);
  const std::string label = "finished_reason=\"" + reason + "\"";
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("actorllm:request_success_total{") && line.find(label) != line.npos)
      return std::stod(line.substr(line.rfind(' ') + 1));
  }
  return -1;
}

TEST(engine_system, a_request_ended_by_a_stop_string_counts_as_stop_in_the_metrics) {
  // The router matches stop strings and then has the scheduler let the request go; that
  // release must not count as an abort.
  engine_system engine(base_config());
  auto r = ids_request("s", {1}, 120);
  r.params.stop = {"Lily."};
  const auto out = engine.client().generate({r});
  ASSERT_EQ(out[0][0].finish, finish_reason::stop);
  ASSERT_TRUE(wait_idle(engine));
  const std::string metrics = engine.monitoring().render();
  EXPECT_EQ(success_count(metrics, "stop"), 1) << metrics;
  EXPECT_EQ(success_count(metrics, "abort"), 0);
}

TEST(engine_system, plain_and_asynchronous_scheduling_give_the_same_outputs) {
  // A pool small enough to preempt (recompute), n > 1, sampling with seeds and penalties: every
  // way a step planned ahead could go wrong shows up as a different token.
  std::vector<std::vector<std::vector<int32_t>>> runs;
  for (bool async : {false, true}) {
    auto config = testing::stories_config(24, 256);
    config.model.max_model_len = 256;
    config.scheduler.async_scheduling = async;
    engine_system engine(config);
    auto requests = varied(12, 48);
    for (size_t i = 0; i < requests.size(); ++i) {
      requests[i].params.n = i % 4 == 0 ? 2 : 1;
      requests[i].params.temperature = i % 2 ? 0.8f : 0.0f;
      requests[i].params.seed = i;
      requests[i].params.repetition_penalty = i % 3 == 0 ? 1.3f : 1.0f;
    }
    std::vector<std::vector<int32_t>> tokens;
    const auto out = engine.client().generate(requests);
    expect_all_complete(requests, out);
    for (const auto& choices : out)
      for (const auto& choice : choices) tokens.push_back(choice.token_ids);
    EXPECT_GT(engine.stats()[0].scheduler.num_preemptions, 0);
    EXPECT_TRUE(wait_idle(engine));
    runs.push_back(std::move(tokens));
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t i = 0; i < runs[0].size(); ++i) EXPECT_EQ(runs[0][i], runs[1][i]) << "choice " << i;
}

/// A counter's value in a /metrics text, summed over its series (-1: absent).
double counter_sum(const std::string& metrics, const std::string& name) {
  std::istringstream lines(metrics);
  double sum = -1;
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(name + "{")) continue;
    sum = std::max(sum, 0.0) + std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

TEST(engine_system, speculative_decoding_through_the_actors_keeps_greedy_outputs_exact) {
  // With asynchronous scheduling (a step that verifies drafts waits for the one before): by
  // n-gram lookup, and by a draft model with two tensor-parallel ranks (each drafts and
  // verifies the same tokens on the same logits).
  auto requests = varied(10, 120);
  requests.push_back(ids_request("story", {1}, 150));
  std::vector<request_output> alone;
  {
    engine_system plain(base_config());
    alone = solo_runs(plain, requests);
  }
  for (int32_t tp : {1, 2}) {
    auto config = base_config();
    config.parallel.tensor_parallel_size = tp;
    // The target as its own draft on two ranks, whole on each.
    config.speculative = tp == 1
                             ? testing::ngram_speculation(4)
                             : testing::draft_speculation(testing::stories260k_dir().string(), 4);
    engine_system engine(config);
    expect_as_alone(requests, engine.client().generate(requests), alone);
    ASSERT_TRUE(wait_idle(engine));
    const auto spec = engine.stats()[0].scheduler.speculation;
    EXPECT_GT(spec.num_accepted_tokens, 0) << "tp " << tp;
    const std::string metrics = engine.monitoring().render();
    EXPECT_EQ(counter_sum(metrics, "actorllm:spec_decode_num_accepted_tokens_total"),
              spec.num_accepted_tokens);
    EXPECT_EQ(counter_sum(metrics, "actorllm:spec_decode_num_accepted_tokens_per_pos_total"),
              spec.num_accepted_tokens);
  }
}

/// A device pool too small for the batch, in `cache_dtype`: requests are preempted by swap,
/// their blocks go to the CPU pool and back, and every request gets what it gets alone.
engine_config swapping_stories(const std::string& cache_dtype) {
  auto config = testing::stories_config(20, 256);
  config.cache.cache_dtype = cache_dtype;
  config.scheduler.preemption = preemption_mode::swap;
  config.model.max_model_len = 256;
  return config;
}

void expect_swapped_runs_as_alone(engine_system& engine) {
  const auto requests = varied(12, 48);
  const auto alone = solo_runs(engine, requests);
  expect_as_alone(requests, engine.client().generate(requests), alone);
  EXPECT_GT(engine.stats()[0].scheduler.num_preemptions, 0);
  EXPECT_TRUE(wait_idle(engine));
}

TEST(engine_system, float16_cache_swaps_blocks_and_keeps_outputs_exact) {
  engine_system engine(swapping_stories("float16"));
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  const auto g = nlohmann::json::parse(in);
  EXPECT_EQ(engine.client().generate({ids_request("g", {1}, 120)})[0][0].token_ids,
            g["output_token_ids"].get<std::vector<int32_t>>());
  expect_swapped_runs_as_alone(engine);
}

TEST(engine_system, float8_cache_swaps_blocks_and_finishes_every_request) {
  // vLLM's --kv-cache-dtype fp8: a quarter of float32's bytes a block. Not checked against solo
  // runs token for token: a step's batch size picks the matrix kernel, whose float32 K and V
  // differ in the last bit, and a value on an fp8 rounding boundary then takes the next code
  // (1/16 apart), which can turn a greedy choice (seen once in about ten runs). Swapped blocks
  // themselves come back byte for byte (kv_cache.blocks_of_every_type_swap_out_and_back_exactly).
  engine_system engine(swapping_stories("fp8"));
  const auto requests = varied(12, 48);
  expect_all_complete(requests, engine.client().generate(requests));
  EXPECT_GT(engine.stats()[0].scheduler.num_preemptions, 0);
  EXPECT_TRUE(wait_idle(engine));
}

TEST(engine_system, sixty_four_concurrent_requests_match_their_solo_runs) {
  const auto requests = varied(64, 32);
  engine_system engine(base_config());
  const auto alone = solo_runs(engine, requests);
  const auto steps_before = engine.stats()[0].num_steps;
  const auto together = engine.client().generate(requests);
  const auto steps = engine.stats()[0].num_steps - steps_before;
  expect_as_alone(requests, together, alone);
  // Continuous batching: far fewer steps than one request at a time would take.
  size_t total_tokens = 0;
  for (const auto& r : requests) total_tokens += r.params.max_tokens;
  EXPECT_LT(steps * 4, total_tokens) << "steps " << steps;
  EXPECT_TRUE(wait_idle(engine));
}

TEST(engine_system, a_stream_interval_sends_fewer_deltas_with_the_same_tokens_and_text) {
  auto config = base_config();
  config.scheduler.stream_interval = 8;
  engine_system engine(config);
  const auto request = ids_request("s", {1}, 120);
  std::vector<request_output> deltas;
  std::promise<void> finished;
  engine.client().submit(request, [&](request_output out) {
    const bool last = out.finish != finish_reason::none;
    deltas.push_back(std::move(out));
    if (last) finished.set_value();
  });
  ASSERT_EQ(finished.get_future().wait_for(std::chrono::seconds(60)), std::future_status::ready);
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  const auto g = nlohmann::json::parse(in);
  std::vector<int32_t> ids;
  std::string text;
  for (const auto& d : deltas) {
    ids.insert(ids.end(), d.token_ids.begin(), d.token_ids.end());
    text += d.text;
  }
  EXPECT_EQ(ids, g["output_token_ids"].get<std::vector<int32_t>>());
  EXPECT_EQ(text, g["output_text"].get<std::string>());
  // The first token alone, then 8 at a time: 1 + ceil(119 / 8) deltas.
  EXPECT_EQ(deltas.front().token_ids.size(), 1u);
  EXPECT_EQ(deltas.size(), 1u + (119 + 7) / 8);
  EXPECT_TRUE(wait_idle(engine));
}

TEST(engine_system, abort_stops_within_a_step_and_frees_every_block) {
  engine_system engine(base_config());
  std::atomic<int> num_deltas{0};
  std::atomic<bool> done{false};
  finish_reason reason = finish_reason::none;
  auto r = ids_request("long", {1}, 400);
  engine.client().submit(r, [&](request_output out) {
    ++num_deltas;
    if (out.finish != finish_reason::none) {
      reason = out.finish;
      done = true;
    }
  });
  // Bounded waits: a broken engine fails the test instead of hanging it.
  for (int i = 0; i < 5000 && num_deltas < 5; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(num_deltas.load(), 5) << "the request never started streaming";
  engine.client().abort("long");
  for (int i = 0; i < 500 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_TRUE(done);
  EXPECT_EQ(reason, finish_reason::abort);
  EXPECT_LT(num_deltas.load(), 400);
  EXPECT_TRUE(wait_idle(engine));
}

TEST(engine_system, a_killed_worker_is_replaced_and_requests_complete) {
  engine_system engine(base_config());
  const auto requests = varied(8, 60);
  const auto alone = solo_runs(engine, requests);
  std::vector<std::vector<request_output>> out;
  std::thread run([&] { out = engine.client().generate(requests); });
  EXPECT_TRUE(wait_generating(engine));
  caf::anon_send_exit(engine.initial_workers(0)[0], caf::exit_reason::kill);
  run.join();
  // The scheduler requeues every request to recompute on the fresh worker: none may fail.
  expect_as_alone(requests, out, alone);
  EXPECT_EQ(engine.stats()[0].num_worker_restarts, 1);
  EXPECT_TRUE(wait_idle(engine));
}

TEST(engine_system, two_replicas_serve_and_a_new_replica_takes_requests) {
  auto c = base_config();
  c.parallel.replicas = 2;
  engine_system engine(c);
  const auto first = varied(16, 16);
  expect_all_complete(first, engine.client().generate(first));
  auto stats = engine.stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_GT(stats[0].num_steps, 0u);
  EXPECT_GT(stats[1].num_steps, 0u);
  EXPECT_TRUE(engine.drain_replica(0));
  EXPECT_TRUE(engine.drain_replica(1));
  EXPECT_EQ(engine.add_replica(), 2);
  const auto later = varied(4, 8);
  expect_all_complete(later, engine.client().generate(later));
  EXPECT_GT(engine.stats()[2].num_steps, 0u);
}

}  // namespace
}  // namespace actorllm

namespace actorllm {
namespace {

TEST(engine_system, a_killed_tensor_parallel_rank_replaces_its_group_without_hanging) {
  auto c = testing::stories_config(512, 64);
  c.parallel.tensor_parallel_size = 2;
  engine_system engine(c);
  const auto requests = varied(8, 60);
  const auto alone = solo_runs(engine, requests);
  std::vector<std::vector<request_output>> out;
  auto run = std::async(std::launch::async, [&] { out = engine.client().generate(requests); });
  EXPECT_TRUE(wait_generating(engine));
  // Rank 1 dies; rank 0 may be waiting for it inside an all-reduce. The replacement group
  // aborts the old one, so nothing waits for the step timeout (minutes).
  caf::anon_send_exit(engine.initial_workers(0)[1], caf::exit_reason::kill);
  if (run.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    // The client thread is stuck for good; fail loudly instead of hanging the suite.
    std::fprintf(stderr, "FAILED: requests still open 60 s after a rank was killed\n");
    std::abort();
  }
  // The replacement group recomputes every request: none may fail.
  expect_as_alone(requests, out, alone);
  EXPECT_GE(engine.stats()[0].num_worker_restarts, 1);
  EXPECT_TRUE(wait_idle(engine));
}

TEST(engine_system, tensor_parallel_workers_reproduce_the_golden_and_solo_runs) {
  auto c = testing::stories_config(512, 64);
  c.parallel.tensor_parallel_size = 2;
  engine_system engine(c);
  std::ifstream in(testing::stories260k_dir() / "golden_greedy.json");
  const auto g = nlohmann::json::parse(in);
  const auto out = engine.client().generate({testing::ids_request("g", {1}, 120)});
  EXPECT_EQ(out[0][0].token_ids, g["output_token_ids"].get<std::vector<int32_t>>());
  const auto requests = testing::varied_requests(12, 24, 40, "tp");
  const auto alone = solo_runs(engine, requests);
  expect_as_alone(requests, engine.client().generate(requests), alone);
}

}  // namespace
}  // namespace actorllm

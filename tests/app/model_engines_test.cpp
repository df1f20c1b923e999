// The engines of a server of several models, with real engines on stories260K: models load on
// demand and through the admin API, the least recently used idle one makes room under
// --max-loaded-models, --keep-alive unloads, an unload drains (requests in flight finish, new
// ones are refused), and a folder that fails to load leaves the others serving.
#include "app/model_engines.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "tests/support/eventually.hpp"
#include "tests/support/requests.hpp"

namespace actorllm::app {
namespace {

using namespace std::chrono_literals;
using testing::eventually;

constexpr int64_t kv_budget = int64_t{8} << 20;

/// stories260K served as `name`; its KV pools are sized from the split, as a server's are.
model_plan stories_as(const std::string& name) {
  engine_config config = testing::stories_config(0, 0);
  config.model.served_model_name = name;
  config.model.max_model_len = 128;
  config.parallel.cpu_threads = 2;
  config.cache.num_gpu_blocks_override = -1;
  return {name, config};
}

/// What one request got: its tokens and how it ended.
struct answer {
  std::vector<int32_t> tokens;
  finish_reason finish = finish_reason::none;
  int32_t status = 0;
  std::string error;
};

/// Submits `r` to `port` and returns a future of its answer (one choice).
std::future<answer> submit(engine_port& port, generate_request r) {
  auto got = std::make_shared<answer>();
  auto promise = std::make_shared<std::promise<answer>>();
  auto future = promise->get_future();
  port.submit(std::move(r), [got, promise](request_output out) {
    got->tokens.insert(got->tokens.end(), out.token_ids.begin(), out.token_ids.end());
    if (out.finish == finish_reason::none) return;
    got->finish = out.finish;
    got->status = out.error_status;
    got->error = out.error;
    promise->set_value(*got);
  });
  return future;
}

/// Waits for `model` as a server's request would, then runs `r` on it.
answer generate_on(api::model_directory& models, const std::string& model, generate_request r) {
  std::promise<void> ready;
  models.await_model(model, [&ready] { ready.set_value(); });
  ready.get_future().wait();
  r.model = model;
  auto done = submit(models, std::move(r));
  EXPECT_EQ(done.wait_for(60s), std::future_status::ready) << model << " never answered";
  return done.get();
}

std::string state_of(model_engines& engines, const std::string& name) {
  const auto state = engines.directory().state_of(name);
  return state ? to_string(*state) : "unknown";
}

admin_outcome call(std::function<void(std::function<void(admin_outcome)>)> admin_call) {
  std::promise<admin_outcome> promise;
  admin_call([&promise](admin_outcome out) { promise.set_value(std::move(out)); });
  return promise.get_future().get();
}

struct logged {
  std::mutex mutex;
  std::vector<std::string> lines;
  model_engines::log_function sink() {
    return [this](const char*, const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  bool has(const std::string& part) {
    std::lock_guard lock(mutex);
    for (const auto& l : lines)
      if (l.find(part) != std::string::npos) return true;
    return false;
  }
};

model_engines_options options_with(residency_limits limits) {
  model_engines_options options;
  options.kv_budget_bytes = kv_budget;
  options.limits = limits;
  options.load_timeout_s = 60;
  options.base = stories_as("base").config;
  options.base.model = {};
  return options;
}

/// The greedy tokens of stories260K for `r` alone, from an engine of its own.
std::vector<int32_t> reference(const generate_request& r) {
  engine_system engine(testing::stories_config(64, 0));
  return engine.client().generate({r})[0][0].token_ids;
}

TEST(model_engines, models_unload_and_load_again_on_demand_with_the_same_tokens) {
  logged log;
  model_engines engines({stories_as("a"), stories_as("b")}, options_with({}), log.sink());
  engines.start();
  EXPECT_EQ(engines.num_loaded(), 2u);
  const auto request = testing::ids_request("r1", {1, 403, 407}, 12);
  const auto expected = reference(request);
  EXPECT_EQ(generate_on(engines.directory(), "a", request).tokens, expected);

  for (const std::string name : {"a", "b"}) {
    EXPECT_EQ(call([&](auto done) { engines.unload_model(name, done); }).status, 202);
    EXPECT_TRUE(eventually([&] { return state_of(engines, name) == "unloaded"; }, 30s))
        << name << " is " << state_of(engines, name);
  }
  EXPECT_EQ(engines.num_loaded(), 0u);
  EXPECT_TRUE(engines.directory().health().ok) << "nothing loaded, but each loads on demand";

  // A request for an unloaded model loads it, waits, and gets exactly the same tokens.
  auto again = request;
  again.request_id = "r2";
  const answer on_demand = generate_on(engines.directory(), "b", again);
  EXPECT_EQ(on_demand.tokens, expected) << on_demand.error;
  EXPECT_EQ(state_of(engines, "b"), "loaded");
  EXPECT_EQ(state_of(engines, "a"), "unloaded");
  EXPECT_TRUE(log.has("model 'b': unloaded (unloaded through the admin API)"));
}

TEST(model_engines, at_most_max_loaded_models_serve_a_rotating_workload_least_recent_out) {
  logged log;
  residency_limits limits;
  limits.max_loaded = 2;
  model_engines engines({stories_as("a"), stories_as("b"), stories_as("c")}, options_with(limits),
                        log.sink());
  engines.start();
  EXPECT_EQ(state_of(engines, "c"), "unloaded") << "the third waits for demand";
  const auto request = testing::ids_request("rot", {1, 403, 407, 289}, 10);
  const auto expected = reference(request);
  for (int i = 0; i < 9; ++i) {
    const std::string model = std::string(1, "cab"[i % 3]);
    auto r = request;
    r.request_id = "rot" + std::to_string(i);
    const answer got = generate_on(engines.directory(), model, r);
    EXPECT_EQ(got.tokens, expected) << model << ": " << got.error;
    EXPECT_LE(engines.num_loaded(), 2u);
  }
  // c, then a, then b: each load evicted the one used longest ago.
  EXPECT_TRUE(log.has("model 'a': unloaded (least recently used; room for 'c')"));
  EXPECT_TRUE(log.has("model 'b': unloaded (least recently used; room for 'a')"));
  EXPECT_TRUE(log.has("model 'c': unloaded (least recently used; room for 'b')"));
}

TEST(model_engines, busy_models_are_never_evicted_and_every_request_is_served) {
  residency_limits limits;
  limits.max_loaded = 2;
  logged log;
  model_engines engines({stories_as("a"), stories_as("b"), stories_as("c")}, options_with(limits),
                        log.sink());
  engines.start();
  const auto request = testing::ids_request("mix", {1, 403}, 24);
  const auto expected = reference(request);
  std::atomic<size_t> most_loaded{0};
  std::atomic<bool> done{false};
  std::thread watch([&] {
    while (!done) {
      most_loaded = std::max(most_loaded.load(), engines.num_loaded());
      std::this_thread::sleep_for(1ms);
    }
  });
  std::vector<std::future<answer>> answers;
  for (int i = 0; i < 12; ++i)
    answers.push_back(std::async(std::launch::async, [&, i] {
      auto r = request;
      r.request_id = "mix" + std::to_string(i);
      return generate_on(engines.directory(), std::string(1, "abc"[i % 3]), r);
    }));
  for (auto& a : answers) {
    const answer got = a.get();
    EXPECT_EQ(got.tokens, expected) << got.error;
  }
  done = true;
  watch.join();
  EXPECT_LE(most_loaded.load(), 2u);
}

TEST(model_engines, an_unload_drains_the_requests_in_flight_and_refuses_new_ones) {
  logged log;
  model_engines engines({stories_as("a"), stories_as("b")}, options_with({}), log.sink());
  engines.start();
  auto request = testing::ids_request("long", {1, 403}, 120);
  const auto expected = reference(request);
  std::vector<std::future<answer>> streams;
  for (int i = 0; i < 4; ++i) {
    auto r = request;
    r.request_id = "drain" + std::to_string(i);
    r.model = "a";
    streams.push_back(submit(engines.directory(), r));
  }
  ASSERT_TRUE(eventually([&] { return engines.directory().usage().in_flight("a") == 4; }));
  EXPECT_EQ(call([&](auto done) { engines.unload_model("a", done); }).status, 202);
  EXPECT_EQ(state_of(engines, "a"), "draining");
  auto late = request;
  late.request_id = "late";
  late.model = "a";
  const answer refused = submit(engines.directory(), late).get();
  EXPECT_EQ(refused.finish, finish_reason::error);
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.error.find("is unloading; retry later"), std::string::npos) << refused.error;
  for (auto& s : streams) {
    const answer got = s.get();
    EXPECT_EQ(got.finish, finish_reason::length) << got.error;
    EXPECT_EQ(got.tokens, expected);
  }
  EXPECT_TRUE(eventually([&] { return state_of(engines, "a") == "unloaded"; }));
  EXPECT_EQ(state_of(engines, "b"), "loaded");
}

TEST(model_engines, an_aborted_request_does_not_keep_its_model_busy) {
  logged log;
  model_engines engines({stories_as("a"), stories_as("b")}, options_with({}), log.sink());
  engines.start();
  auto r = testing::ids_request("gone", {1, 403}, 120);
  r.model = "a";
  engines.directory().submit(r, [](request_output) {});
  EXPECT_EQ(engines.directory().usage().in_flight("a"), 1);
  engines.directory().abort("gone");  // the engine need not send a last delta after this
  EXPECT_EQ(engines.directory().usage().in_flight("a"), 0);
  EXPECT_EQ(call([&](auto done) { engines.unload_model("a", done); }).status, 202);
  EXPECT_TRUE(eventually([&] { return state_of(engines, "a") == "unloaded"; }));
}

TEST(model_engines, keep_alive_unloads_an_idle_model_and_demand_brings_it_back) {
  residency_limits limits;
  limits.keep_alive_s = 0.3;
  logged log;
  model_engines engines({stories_as("a"), stories_as("b")}, options_with(limits), log.sink());
  engines.start();
  EXPECT_TRUE(eventually([&] { return engines.num_loaded() == 0; }, 10s));
  EXPECT_TRUE(log.has("model 'a': unloaded (idle for 0.3 s (--keep-alive))"));
  const auto request = testing::ids_request("back", {1, 403}, 6);
  EXPECT_EQ(generate_on(engines.directory(), "a", request).tokens, reference(request));
}

TEST(model_engines, a_folder_that_fails_leaves_the_others_serving_and_the_admin_api_checks_calls) {
  logged log;
  model_plan broken = stories_as("broken");
  broken.config.model.model = "/nonexistent/model";
  model_engines engines({stories_as("a"), broken}, options_with({}), log.sink());
  engines.start();
  EXPECT_EQ(state_of(engines, "a"), "loaded");
  EXPECT_EQ(state_of(engines, "broken"), "failed");
  EXPECT_TRUE(engines.directory().health().ok);
  const auto request = testing::ids_request("ok", {1, 403}, 6);
  EXPECT_EQ(generate_on(engines.directory(), "a", request).tokens, reference(request));
  // A failed model is not loaded on demand: the request is refused with why.
  const answer refused = generate_on(engines.directory(), "broken", request);
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.error.find("failed to load"), std::string::npos) << refused.error;

  const auto load = [&](load_model_request r) {
    return call([&](auto done) { engines.load_model(r, done); });
  };
  EXPECT_EQ(load({"a", "", ""}).status, 409);    // loaded already
  EXPECT_EQ(load({"new", "", ""}).status, 400);  // a new model needs its folder
  EXPECT_EQ(load({"bad name!", stories_as("x").config.model.model, ""}).status, 400);
  EXPECT_EQ(load({"new", "/nonexistent", ""}).status, 400);  // no config.json there
  EXPECT_EQ(load({"new", stories_as("x").config.model.model, R"({"no_such_flag": 1})"}).status,
            400);
  EXPECT_EQ(call([&](auto done) { engines.unload_model("nobody", done); }).status, 404);
  EXPECT_EQ(call([&](auto done) { engines.unload_model("broken", done); }).status, 409);

  // A model added at run time, with flags of its own, serves once loaded.
  EXPECT_EQ(load({"added", stories_as("x").config.model.model, R"({"max_model_len": 64})"}).status,
            202);
  EXPECT_EQ(generate_on(engines.directory(), "added", request).tokens, reference(request));
  std::vector<model_view> views;
  engines.models([&](std::vector<model_view> v) { views = std::move(v); });
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[2].name, "added");
  EXPECT_EQ(views[2].state, "loaded") << views[2].error;
  EXPECT_GT(views[2].kv_cache_bytes, 0);
  EXPECT_GT(views[2].weight_bytes, 0);
  EXPECT_EQ(views[1].state, "failed");
  EXPECT_FALSE(views[1].error.empty());
}

}  // namespace
}  // namespace actorllm::app

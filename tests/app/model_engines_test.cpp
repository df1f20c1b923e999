// The engines of a server of several models, with real engines on stories260K: models load on
// demand and through the admin API, the least recently used idle one makes room under
// --max-loaded-models, --keep-alive unloads, an unload drains (requests in flight finish, new
// ones are refused), and a folder that fails to load leaves the others serving.
#include "app/model_engines.hpp"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <mutex>

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
  options.base = testing::stories_config(0, 0);
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

}  // namespace
}  // namespace actorllm::app

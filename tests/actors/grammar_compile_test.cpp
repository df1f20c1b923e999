// A new grammar compiles off the router (request_router_actor.cpp, compile_then_admit): the
// router goes on routing every other request and stream while a slow schema compiles, and a
// grammar that does not compile is still a 400 naming its parameter.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "actors/system/engine_system.hpp"
#include "tests/support/requests.hpp"

namespace actorllm {
namespace {

/// The final outputs of the requests submitted through it, in the order they came.
class finish_log {
 public:
  engine_port::output_callback callback() {
    return [this](request_output out) {
      if (out.finish == finish_reason::none) return;
      std::lock_guard lock(mutex_);
      finished_.push_back(std::move(out));
      changed_.notify_all();
    };
  }
  std::vector<request_output> wait_for(size_t count) {
    std::unique_lock lock(mutex_);
    const bool all = changed_.wait_for(lock, std::chrono::seconds(120),
                                       [&] { return finished_.size() >= count; });
    EXPECT_TRUE(all) << "only " << finished_.size() << " of " << count << " requests ended";
    return finished_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<request_output> finished_;
};

generate_request constrained(std::string id, std::string regex) {
  generate_request r = testing::ids_request(std::move(id), {1, 403}, 4);
  r.params.structured.kind = output_constraint::regex;
  r.params.structured.source = std::move(regex);
  return r;
}

TEST(grammar_compile, a_slow_compile_holds_up_no_other_request) {
  engine_system engine(testing::stories_config(512, 64));
  finish_log log;
  // A regular expression whose deterministic automaton has 2^17 states: long to build, within
  // the budget.
  engine.client().submit(constrained("slow", "(a|b)*a(a|b){16}"), log.callback());
  for (int i = 0; i < 3; ++i)
    engine.client().submit(testing::ids_request("plain-" + std::to_string(i), {1, 403}, 8),
                           log.callback());
  const std::vector<request_output> finished = log.wait_for(4);
  ASSERT_EQ(finished.size(), 4u);
  EXPECT_EQ(finished.back().request_id, "slow") << "a plain request waited for the compile";
  EXPECT_EQ(finished.back().finish, finish_reason::length) << finished.back().error;
}

TEST(grammar_compile, a_grammar_that_does_not_compile_is_refused_from_the_helper) {
  engine_system engine(testing::stories_config(512, 64));
  finish_log log;
  generate_request bad = constrained("bad", "(unclosed");
  bad.params.structured.field = "regex";
  engine.client().submit(bad, log.callback());
  const std::vector<request_output> finished = log.wait_for(1);
  ASSERT_EQ(finished.size(), 1u);
  EXPECT_EQ(finished[0].finish, finish_reason::error);
  EXPECT_EQ(finished[0].error_status, 400);
  EXPECT_EQ(finished[0].error_param, "regex");
  EXPECT_NE(finished[0].error.find("invalid regex"), std::string::npos) << finished[0].error;
  // The same id is free again once refused.
  engine.client().submit(testing::ids_request("bad", {1, 403}, 2), log.callback());
  EXPECT_EQ(log.wait_for(2).back().finish, finish_reason::length);
}

TEST(grammar_compile, a_request_aborted_while_its_grammar_compiles_never_runs) {
  engine_system engine(testing::stories_config(512, 64));
  finish_log log;
  engine.client().submit(constrained("gone", "(a|b)*b(a|b){16}"), log.callback());
  engine.client().abort("gone");
  engine.client().submit(testing::ids_request("after", {1, 403}, 2), log.callback());
  log.wait_for(1);
  // Past the compile, nothing of it ran: dropped, not admitted (an abort's own notice aside).
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (const request_output& out : log.wait_for(1)) {
    if (out.request_id != "gone") continue;
    EXPECT_EQ(out.finish, finish_reason::abort);
    EXPECT_TRUE(out.token_ids.empty());
  }
}

}  // namespace
}  // namespace actorllm

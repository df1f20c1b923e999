// A model evicted to make room (or idle past --keep-alive) loads again on demand: requests for
// it wait through the drain and the reload instead of meeting a 503, even one admitted a moment
// before the eviction began. A model unloaded through the admin API refuses them.
#include <gtest/gtest.h>

#include <future>
#include <mutex>
#include <vector>

#include "api/model_directory.hpp"
#include "testing/fake_engine.hpp"
#include "tests/support/requests.hpp"

namespace actorllm::api {
namespace {

/// A fake engine that serves model "alpha".
struct alpha_engine : testing::fake_engine {
  model_info model() const override {
    model_info info = fake_engine::model();
    info.name = "alpha";
    info.root = "/models/alpha";
    info.aliases = {info.root};
    return info;
  }
};

/// What a submit answered first, once it has answered.
struct first_answer {
  std::promise<request_output> promise;
  std::future<request_output> future = promise.get_future();
  std::once_flag once;
  engine_port::output_callback callback() {
    return [this](request_output out) {
      std::call_once(once, [&] { promise.set_value(std::move(out)); });
    };
  }
  bool answered() { return future.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
};

class model_reload_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(directory_.add("alpha", "/models/alpha"), "");
    ASSERT_TRUE(directory_.set_loaded("alpha", first_));
    directory_.set_demand_loader([this](const std::string& name) { loads_.push_back(name); },
                                 std::chrono::seconds(60));
  }
  std::shared_ptr<alpha_engine> first_ = std::make_shared<alpha_engine>();
  std::shared_ptr<alpha_engine> second_ = std::make_shared<alpha_engine>();
  std::vector<std::string> loads_;  // what the demand loader was asked, in order
  model_directory directory_;
};

TEST_F(model_reload_test, a_request_admitted_before_an_eviction_waits_for_the_reload) {
  ASSERT_TRUE(directory_.set_draining("alpha", model_directory::drain_kind::reload));
  // Admission still takes it: the listing says it reloads, with the model's own info.
  const auto listing = directory_.find_model("alpha");
  ASSERT_TRUE(listing);
  EXPECT_TRUE(listing->reloads);
  EXPECT_TRUE(admits_requests(*listing));
  EXPECT_EQ(listing->info.max_model_len, first_->model().max_model_len);

  std::promise<std::string> idle;  // the model whose last request in flight ended
  directory_.usage().on_idle([&idle](const std::string& model) { idle.set_value(model); });
  first_answer answer;
  directory_.submit(testing::text_request("alpha", "r1"), answer.callback());
  EXPECT_FALSE(answer.answered());  // parked: neither refused nor sent to the draining engine
  EXPECT_TRUE(first_->submitted().empty());

  ASSERT_TRUE(directory_.set_unloaded("alpha"));  // drained: it loads again for the waiter
  EXPECT_EQ(directory_.state_of("alpha"), model_state::loading);
  EXPECT_EQ(loads_, std::vector<std::string>{"alpha"});
  EXPECT_FALSE(answer.answered());

  ASSERT_TRUE(directory_.set_loaded("alpha", second_));
  EXPECT_EQ(answer.future.get().finish, finish_reason::length);
  ASSERT_EQ(second_->submitted().size(), 1u);
  EXPECT_EQ(second_->submitted()[0].request_id, "r1");
  EXPECT_FALSE(directory_.find_model("alpha")->reloads);
  // Counted on the new engine until its last output has been handed on (just after the
  // answer above).
  auto idle_model = idle.get_future();
  ASSERT_EQ(idle_model.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(idle_model.get(), "alpha");
  EXPECT_EQ(directory_.usage().in_flight("alpha"), 0);
  directory_.usage().on_idle(nullptr);
}

TEST_F(model_reload_test, an_evicted_model_with_nobody_waiting_stays_unloaded) {
  ASSERT_TRUE(directory_.set_draining("alpha", model_directory::drain_kind::reload));
  ASSERT_TRUE(directory_.set_unloaded("alpha"));
  EXPECT_EQ(directory_.state_of("alpha"), model_state::unloaded);
  EXPECT_TRUE(loads_.empty());
}

TEST_F(model_reload_test, a_parked_request_that_is_aborted_never_reaches_an_engine) {
  ASSERT_TRUE(directory_.set_draining("alpha", model_directory::drain_kind::reload));
  first_answer answer;
  directory_.submit(testing::text_request("alpha", "r1"), answer.callback());
  directory_.abort("r1");
  ASSERT_TRUE(directory_.set_unloaded("alpha"));
  ASSERT_TRUE(directory_.set_loaded("alpha", second_));
  EXPECT_TRUE(second_->submitted().empty());
  EXPECT_FALSE(answer.answered());  // after an abort no answer is owed
  EXPECT_EQ(directory_.usage().in_flight("alpha"), 0);
}

TEST_F(model_reload_test, a_model_unloaded_through_the_admin_api_refuses_new_requests) {
  ASSERT_TRUE(directory_.set_draining("alpha", model_directory::drain_kind::refuse));
  const auto listing = directory_.find_model("alpha");
  EXPECT_FALSE(listing->reloads);
  EXPECT_FALSE(admits_requests(*listing));
  first_answer answer;
  directory_.submit(testing::text_request("alpha", "r1"), answer.callback());
  ASSERT_TRUE(answer.answered());
  const request_output out = answer.future.get();
  EXPECT_EQ(out.error_status, 503);
  EXPECT_EQ(out.error, "the model `alpha` is unloading; retry later");
  bool ready = false;
  directory_.await_model("alpha", [&] { ready = true; });
  EXPECT_TRUE(ready);  // nothing to wait for: admission refuses it
  ASSERT_TRUE(directory_.set_unloaded("alpha"));
  EXPECT_TRUE(loads_.empty());
}

TEST_F(model_reload_test, a_reload_that_fails_refuses_its_waiters) {
  ASSERT_TRUE(directory_.set_draining("alpha", model_directory::drain_kind::reload));
  first_answer answer;
  directory_.submit(testing::text_request("alpha", "r1"), answer.callback());
  ASSERT_TRUE(directory_.set_unloaded("alpha"));
  ASSERT_TRUE(directory_.set_failed("alpha", "out of memory"));
  ASSERT_TRUE(answer.answered());
  const request_output out = answer.future.get();
  EXPECT_EQ(out.error_status, 503);
  EXPECT_EQ(out.error, "the model `alpha` failed to load: out of memory");
  EXPECT_FALSE(admits_requests(*directory_.find_model("alpha")));
}

TEST_F(model_reload_test, a_tokenize_call_waits_for_the_reload_too) {
  ASSERT_TRUE(directory_.set_draining("alpha", model_directory::drain_kind::reload));
  std::promise<tokenize_result> result;
  directory_.tokenize(testing::text_request("alpha", "t1"),
                      [&](tokenize_result r) { result.set_value(std::move(r)); });
  ASSERT_TRUE(directory_.set_unloaded("alpha"));
  ASSERT_TRUE(directory_.set_loaded("alpha", second_));
  const tokenize_result r = result.get_future().get();
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_FALSE(r.tokens.empty());
}

}  // namespace
}  // namespace actorllm::api

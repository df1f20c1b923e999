// Several models behind one server: the directory routes each request to the engine of the
// model it names and lists every model with its state; admission, /v1/models and /tokenize
// read the model a request names.
#include "api/model_directory.hpp"

#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>

#include "api/admission.hpp"
#include "api/lora_api.hpp"
#include "api/request_plan.hpp"
#include "testing/fake_engine.hpp"
#include "tests/support/requests.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

/// A fake engine serving model `name` (its folder /models/<name> an alias, as when started
/// with --model /models/<name>), with sampling defaults of its own.
struct named_engine : testing::fake_engine {
  explicit named_engine(std::string n, sampling_defaults s = {})
      : name(std::move(n)), sampling(s) {}
  model_info model() const override {
    model_info info = fake_engine::model();
    info.name = name;
    info.root = "/models/" + name;
    info.aliases = {info.root};
    info.sampling = sampling;
    return info;
  }
  std::string engine_stats_json() override {
    return R"({"object":"engine.stats","of":")" + name + "\"}";
  }
  /// The fake's text, marked with this model's name: whose tokenizer read the ids.
  void detokenize(detokenize_request request,
                  std::function<void(detokenize_result)> done) override {
    fake_engine::detokenize(std::move(request), [done, name = name](detokenize_result r) {
      if (r.error.empty()) r.text = name + ":" + r.text;
      done(std::move(r));
    });
  }
  std::string name;
  sampling_defaults sampling;
};

/// The first output of a submit (the whole answer of a refused one).
request_output first_output(engine_port& port, generate_request r) {
  std::promise<request_output> first;
  auto done = std::make_shared<std::once_flag>();
  port.submit(std::move(r), [&first, done](request_output out) {
    std::call_once(*done, [&] { first.set_value(std::move(out)); });
  });
  return first.get_future().get();
}

class model_directory_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(directory_.add("alpha", "/models/alpha"), "");
    ASSERT_EQ(directory_.add("beta", "/models/beta"), "");
    ASSERT_EQ(directory_.add("gamma", "/models/gamma"), "");
    ASSERT_TRUE(directory_.set_loaded("alpha", alpha_));
    ASSERT_TRUE(directory_.set_loaded("beta", beta_));
    ASSERT_TRUE(directory_.set_failed("gamma", "config.json: unknown architecture"));
  }
  std::shared_ptr<named_engine> alpha_ = std::make_shared<named_engine>("alpha");
  std::shared_ptr<named_engine> beta_ =
      std::make_shared<named_engine>("beta", sampling_defaults{0.25f, {}, {}, {}, 7});
  model_directory directory_;
  server_context context_{directory_, {}};
};

TEST_F(model_directory_test, each_request_goes_to_the_engine_of_the_model_it_names) {
  EXPECT_EQ(first_output(directory_, testing::text_request("beta", "r1")).finish,
            finish_reason::length);
  EXPECT_EQ(first_output(directory_, testing::text_request("", "r2")).finish,
            finish_reason::length);
  EXPECT_EQ(first_output(directory_, testing::text_request("/models/beta", "r3")).finish,
            finish_reason::length);  // an alias a loaded engine answers to
  ASSERT_EQ(alpha_->submitted().size(), 1u);
  EXPECT_EQ(alpha_->submitted()[0].request_id, "r2");  // no name: the default, the first added
  ASSERT_EQ(beta_->submitted().size(), 2u);
  EXPECT_EQ(beta_->submitted()[0].request_id, "r1");

  const request_output unknown = first_output(directory_, testing::text_request("delta", "r4"));
  EXPECT_EQ(unknown.finish, finish_reason::error);
  EXPECT_EQ(unknown.error_status, 404);
  const request_output failed = first_output(directory_, testing::text_request("gamma", "r5"));
  EXPECT_EQ(failed.error_status, 503);
  EXPECT_EQ(failed.error, "the model `gamma` failed to load: config.json: unknown architecture");
  EXPECT_EQ(alpha_->submitted().size() + beta_->submitted().size(), 3u);

  directory_.abort("r1");  // ids are unique: every engine hears it, the one that has it acts
  EXPECT_TRUE(beta_->was_aborted("r1"));
  alpha_->waiting = 2;
  beta_->waiting = 3;
  EXPECT_EQ(directory_.num_waiting(), 5u);
}

TEST_F(model_directory_test, detokenize_reads_the_ids_with_the_named_models_tokenizer) {
  auto detokenize = [&](std::string model) {
    std::promise<detokenize_result> answer;
    directory_.detokenize({std::move(model), {104, 105}},
                          [&answer](detokenize_result r) { answer.set_value(std::move(r)); });
    return answer.get_future().get();
  };
  EXPECT_EQ(detokenize("beta").text, "beta:hi");
  EXPECT_EQ(detokenize("/models/beta").text, "beta:hi");  // an alias the engine answers to
  EXPECT_EQ(detokenize("").text, "alpha:hi");             // no name: the default
  EXPECT_EQ(detokenize("delta").error_status, 404);
  const detokenize_result failed = detokenize("gamma");
  EXPECT_EQ(failed.error_status, 503);
  EXPECT_EQ(failed.error, "the model `gamma` failed to load: config.json: unknown architecture");

  detokenize_request admitted;
  ASSERT_FALSE(admit_detokenize(context_, R"({"model":"/models/beta","tokens":[104]})", admitted));
  EXPECT_EQ(admitted.model, "beta");  // the engine knows its model by its served name
  EXPECT_EQ(admit_detokenize(context_, R"({"model":"delta","tokens":[1]})", admitted)->status, 404);
  EXPECT_EQ(admit_detokenize(context_, R"({"model":"gamma","tokens":[1]})", admitted)->status, 503);
}

TEST_F(model_directory_test, a_runtime_lora_load_goes_to_the_model_its_body_names) {
  alpha_->lora_updates = beta_->lora_updates = true;
  lora_update_request load;
  ASSERT_FALSE(parse_lora_update(
      R"({"lora_name":"sql","lora_path":"/adapters/sql","base_model_name":"/models/beta"})", true,
      load));
  EXPECT_EQ(load.base_model, "/models/beta");
  ASSERT_FALSE(apply_lora_update(directory_, load, true).first);
  ASSERT_EQ(beta_->model().adapters.size(), 1u);  // beta's, found by its folder's name too
  EXPECT_TRUE(alpha_->model().adapters.empty());
  EXPECT_EQ(first_output(directory_, testing::text_request("sql", "r1")).finish,
            finish_reason::length);
  ASSERT_EQ(beta_->submitted().size(), 1u);  // a request for the adapter reaches its model

  load.base_model = "delta";
  const auto unknown = apply_lora_update(directory_, load, true).first;
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(unknown->param, "base_model_name");
  // Called directly (a model gone between admission and the load): the directory's own 404.
  EXPECT_EQ(directory_.load_lora_adapter({"other", "/adapters/other", "delta"}).status, 404);
  load.base_model = "gamma";  // listed, failed to load
  EXPECT_EQ(apply_lora_update(directory_, load, true).first->status, 400);
  EXPECT_EQ(
      parse_lora_update(R"({"lora_name":"a","lora_path":"/x","base_model_name":3})", true, load)
          ->param,
      "base_model_name");

  ASSERT_FALSE(apply_lora_update(directory_, {"sql"}, false).first);  // from the model holding it
  EXPECT_TRUE(beta_->model().adapters.empty());
}

TEST_F(model_directory_test, models_are_listed_in_order_with_their_states) {
  const auto models = directory_.models();
  ASSERT_EQ(models.size(), 3u);
  EXPECT_EQ(models[0].info.name, "alpha");
  EXPECT_EQ(models[1].info.sampling.temperature, 0.25f);  // a loaded model's own info
  EXPECT_EQ(models[2].state, model_state::failed);
  EXPECT_EQ(models[2].info.root, "/models/gamma");
  EXPECT_EQ(directory_.model().name, "alpha");
  EXPECT_EQ(directory_.num_models(), 3u);
  EXPECT_FALSE(directory_.find_model("delta"));
  EXPECT_EQ(directory_.find_model("gamma")->state, model_state::failed);
  EXPECT_EQ(directory_.find_model("/models/beta")->info.name, "beta");

  ASSERT_TRUE(directory_.set_unloaded("beta"));
  EXPECT_EQ(directory_.find_model("beta")->state, model_state::unloaded);
  EXPECT_EQ(first_output(directory_, testing::text_request("beta", "r6")).error,
            "the model `beta` is not loaded");
  EXPECT_FALSE(directory_.find_model("/models/beta"));  // aliases leave with the engine
  EXPECT_TRUE(directory_.healthy());
  const engine_health health = directory_.health();
  EXPECT_TRUE(health.ok);
  EXPECT_NE(health.reason.find("model gamma: the model `gamma` failed to load"), std::string::npos);
}

TEST_F(model_directory_test, names_are_unique_and_bounded) {
  EXPECT_EQ(directory_.add("beta", "/elsewhere"), "two models are named 'beta'");
  EXPECT_EQ(directory_.add("", "/x"), "a model needs a name");
  for (std::size_t i = directory_.num_models(); i < model_directory::max_models; ++i)
    ASSERT_EQ(directory_.add("m" + std::to_string(i), "/x"), "");
  EXPECT_EQ(directory_.add("one-more", "/x"), "at most 64 models may be served");
  EXPECT_FALSE(directory_.set_loaded("nobody", alpha_));
}

TEST_F(model_directory_test, v1_models_lists_every_model_with_its_state_and_adapters) {
  alpha_->lora_updates = true;
  ASSERT_EQ(directory_.load_lora_adapter({"sql", "/adapters/sql"}).error, "");  // the default's
  ASSERT_EQ(alpha_->model().adapters.size(), 1u);
  EXPECT_EQ(directory_.load_lora_adapter({"beta", "/adapters/x"}).status, 400);  // a model's name
  request_head head;
  head.host = "127.0.0.1:8000";
  head.method = "GET";
  head.target = "/v1/models";
  const json body = json::parse(plan_request(context_, head).reply.body);
  ASSERT_EQ(body["data"].size(), 4u);
  EXPECT_EQ(body["data"][0]["id"], "alpha");
  EXPECT_EQ(body["data"][0]["state"], "loaded");
  EXPECT_EQ(body["data"][1]["id"], "sql");
  EXPECT_EQ(body["data"][1]["parent"], "alpha");
  EXPECT_EQ(body["data"][2]["id"], "beta");
  EXPECT_EQ(body["data"][3]["id"], "gamma");
  EXPECT_EQ(body["data"][3]["state"], "failed");
  EXPECT_EQ(body["data"][3]["error"], "config.json: unknown architecture");

  head.target = "/v1/models/sql";
  EXPECT_EQ(json::parse(plan_request(context_, head).reply.body)["parent"], "alpha");
  head.target = "/v1/models/gamma";
  EXPECT_EQ(json::parse(plan_request(context_, head).reply.body)["state"], "failed");
  head.target = "/v1/models/delta";
  EXPECT_EQ(plan_request(context_, head).reply.status, 404);
  head.target = "/v1/engine/stats";
  const json stats = json::parse(plan_request(context_, head).reply.body);
  EXPECT_EQ(stats["of"], "alpha");
  ASSERT_EQ(stats["models"].size(), 3u);
  EXPECT_EQ(stats["models"][1]["stats"]["of"], "beta");
  EXPECT_EQ(stats["models"][2]["state"], "failed");

  EXPECT_EQ(directory_.unload_lora_adapter("sql").error, "");
  EXPECT_EQ(directory_.unload_lora_adapter("alpha").status, 404);
}

TEST_F(model_directory_test, a_call_is_read_with_the_named_models_defaults_and_refused_by_state) {
  openai_request call;
  model_info model;
  ASSERT_FALSE(admit_call(context_, api_kind::completion,
                          R"({"prompt":"hi","nested":{"model":"alpha"},"model":"beta"})", call,
                          model));
  EXPECT_EQ(model.name, "beta");
  EXPECT_EQ(call.prompts.at(0).params.temperature, 0.25f);  // beta's generation_config
  EXPECT_EQ(call.prompts.at(0).params.top_k, 7);
  ASSERT_FALSE(admit_call(context_, api_kind::completion, R"({"prompt":"hi"})", call, model));
  EXPECT_EQ(model.name, "alpha");
  EXPECT_EQ(call.prompts.at(0).params.temperature, 1.0f);

  auto error =
      admit_call(context_, api_kind::completion, R"({"model":"gamma","prompt":"hi"})", call, model);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 503);
  EXPECT_EQ(error->code, "model_not_loaded");
  error =
      admit_call(context_, api_kind::completion, R"({"model":"delta","prompt":"hi"})", call, model);
  EXPECT_EQ(error->status, 404);

  generate_request tokenize;
  ASSERT_FALSE(admit_tokenize(context_, R"({"model":"/models/beta","prompt":"hi"})", tokenize));
  EXPECT_EQ(tokenize.model, "beta");  // the engine knows its model by its served name
  EXPECT_EQ(admit_tokenize(context_, R"({"model":"gamma","prompt":"hi"})", tokenize)->status, 503);
}

}  // namespace
}  // namespace actorllm::api

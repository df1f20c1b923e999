// POST /v1/embeddings' protocol: every accepted shape of `input`, the refusals (each naming
// its field), base64 as OpenAI encodes it, and a batch answered in input order with its usage,
// or with the first failure.
#include "api/embeddings_api.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace actorllm::api {
namespace {

using nlohmann::json;

model_info embedding_model() {
  model_info m;
  m.name = "m";
  m.embeddings = true;
  m.embedding_size = 3;
  m.pooling = pooling_type::mean;
  return m;
}

TEST(embeddings_api, reads_every_shape_of_input) {
  embeddings_request r;
  ASSERT_FALSE(parse_embeddings_request(R"({"model":"m","input":"hello"})", embedding_model(), r));
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].kind, prompt_kind::text);
  EXPECT_EQ(r.inputs[0].text, "hello");
  EXPECT_EQ(r.inputs[0].params.pooling, pooling_type::mean);
  EXPECT_FALSE(r.base64);
  ASSERT_FALSE(parse_embeddings_request(R"({"input":["a","b"],"encoding_format":"base64"})",
                                        embedding_model(), r));
  EXPECT_EQ(r.inputs.size(), 2u);
  EXPECT_TRUE(r.base64);
  ASSERT_FALSE(parse_embeddings_request(R"({"input":[1,2,3]})", embedding_model(), r));
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].kind, prompt_kind::token_ids);
  EXPECT_EQ(r.inputs[0].token_ids, (std::vector<int32_t>{1, 2, 3}));
  ASSERT_FALSE(parse_embeddings_request(R"({"input":[[1],[2,3],"x"],"dimensions":3})",
                                        embedding_model(), r));
  EXPECT_EQ(r.inputs.size(), 3u);
  EXPECT_EQ(r.inputs[2].kind, prompt_kind::text);
  ASSERT_FALSE(parse_embeddings_request(R"({"input":["a",[1,2]],"truncate_prompt_tokens":2})",
                                        embedding_model(), r));
  EXPECT_EQ(r.inputs[0].params.truncate_prompt_tokens, 2);
  EXPECT_EQ(r.inputs[1].params.truncate_prompt_tokens, 2);
}

TEST(embeddings_api, refuses_with_the_field_at_fault) {
  const auto refusal = [](const std::string& body, model_info m = embedding_model()) {
    embeddings_request r;
    return parse_embeddings_request(body, m, r);
  };
  EXPECT_EQ(refusal("[]")->status, 400);
  EXPECT_EQ(refusal(R"({"model":"other","input":"x"})")->status, 404);
  EXPECT_EQ(refusal(R"({})")->param, "input");
  EXPECT_EQ(refusal(R"({"input":[]})")->param, "input");
  EXPECT_EQ(refusal(R"({"input":[[]]})")->param, "input");
  EXPECT_EQ(refusal(R"({"input":[-1]})")->param, "input");
  EXPECT_EQ(refusal(R"({"input":[{"a":1}]})")->param, "input");
  EXPECT_EQ(refusal(R"({"input":"x","encoding_format":"int8"})")->param, "encoding_format");
  EXPECT_EQ(refusal(R"({"input":"x","dimensions":2})")->param, "dimensions");
  for (const char* truncate : {"-5", "0", "1.5", "\"3\"", "4294967296"})
    EXPECT_EQ(
        refusal(std::string(R"({"input":"x","truncate_prompt_tokens":)") + truncate + "}")->param,
        "truncate_prompt_tokens")
        << truncate;
  json many = {{"input", json::array()}};
  for (int i = 0; i <= max_embedding_inputs; ++i) many["input"].push_back("x");
  EXPECT_EQ(refusal(many.dump())->param, "input");
  model_info generating = embedding_model();
  generating.embeddings = false;
  const auto off = refusal(R"({"input":"x"})", generating);
  ASSERT_TRUE(off);
  EXPECT_NE(off->message.find("--task embed"), std::string::npos);
}

TEST(embeddings_api, base64_is_little_endian_float32) {
  // 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0.
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  EXPECT_EQ(base64_floats({1.0f, -2.0f}), "AACAPwAAAMA=");
  EXPECT_EQ(base64_floats({}), "");
}

/// Answers each submit at once with a vector made from the prompt, or an error for "bad".
class instant_engine : public engine_port {
 public:
  void submit(generate_request request, output_callback on_output) override {
    request_output out;
    out.request_id = request.request_id;
    if (request.text == "bad") {
      out.finish = finish_reason::error;
      out.error = "the prompt is too long";
      out.error_status = 400;
    } else {
      out.finish = finish_reason::stop;
      out.num_prompt_tokens = static_cast<int32_t>(request.text.size());
      out.embedding = {static_cast<float>(request.text.size()), 0.5f, -1.0f};
    }
    on_output(std::move(out));
  }
  void abort(const std::string& id) override { aborted.push_back(id); }
  void tokenize(generate_request, std::function<void(tokenize_result)>) override {}
  void detokenize(detokenize_request, std::function<void(detokenize_result)>) override {}
  bool healthy() const override { return true; }
  model_info model() const override { return embedding_model(); }
  std::string metrics_text() override { return {}; }
  std::size_t num_waiting() const override { return 0; }
  std::vector<std::string> aborted;
};

TEST(embeddings_api, answers_in_input_order_with_usage_or_the_first_failure) {
  instant_engine engine;
  embeddings_request r;
  ASSERT_FALSE(parse_embeddings_request(R"({"input":["ab","abcd"]})", embedding_model(), r));
  std::optional<api_error> error;
  std::string body;
  run_embeddings(engine, r, embedding_model(), "e", [&](std::optional<api_error> e, std::string b) {
    error = std::move(e);
    body = std::move(b);
  });
  ASSERT_FALSE(error);
  const json answer = json::parse(body);
  EXPECT_EQ(answer["object"], "list");
  EXPECT_EQ(answer["model"], "m");
  ASSERT_EQ(answer["data"].size(), 2u);
  EXPECT_EQ(answer["data"][1]["index"], 1);
  EXPECT_EQ(answer["data"][1]["object"], "embedding");
  EXPECT_EQ(answer["data"][1]["embedding"][0], 4.0);
  EXPECT_EQ(answer["usage"]["prompt_tokens"], 6);
  EXPECT_EQ(answer["usage"]["total_tokens"], 6);

  ASSERT_FALSE(parse_embeddings_request(R"({"input":["ok","bad","ok"]})", embedding_model(), r));
  run_embeddings(engine, r, embedding_model(), "f", [&](std::optional<api_error> e, std::string b) {
    error = std::move(e);
    body = std::move(b);
  });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 400);
  EXPECT_NE(error->message.find("too long"), std::string::npos);
  EXPECT_FALSE(engine.aborted.empty());  // the others were let go
}

}  // namespace
}  // namespace actorllm::api

// OpenAI request parsing: every parameter, every prompt shape, errors naming the parameter.
#include "api/openai_protocol.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <tuple>
#include <vector>

#include "common/sampling_contract.hpp"

namespace actorllm::api {
namespace {

openai_request parse_ok(const std::string& body, api_kind kind = api_kind::completion) {
  openai_request out;
  auto error = parse_openai_request(body, kind, out);
  EXPECT_FALSE(error) << body << " -> " << (error ? error->message : "");
  return out;
}

api_error parse_error(const std::string& body, api_kind kind = api_kind::completion) {
  openai_request out;
  auto error = parse_openai_request(body, kind, out);
  EXPECT_TRUE(error) << body;
  return error.value_or(api_error{});
}

TEST(openai_protocol, completion_with_every_parameter) {
  const auto r = parse_ok(R"({"model":"m","prompt":"hi","max_tokens":7,"temperature":0.5,
    "top_p":0.9,"top_k":40,"min_p":0.05,"n":3,"seed":42,"stop":["a","b"],
    "stop_token_ids":[2,3],"presence_penalty":0.1,"frequency_penalty":-0.2,
    "repetition_penalty":1.1,"logit_bias":{"5":-100,"7":2.5},"logprobs":2,
    "ignore_eos":true,"min_tokens":2,"user":"u","stream":true,
    "stream_options":{"include_usage":true,"continuous_usage_stats":true},
    "some_future_field":{"x":1}})");
  EXPECT_EQ(r.model, "m");
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.continuous_usage_stats);
  EXPECT_EQ(r.n, 3);
  ASSERT_EQ(r.prompts.size(), 1u);
  const generate_request& g = r.prompts[0];
  EXPECT_EQ(g.kind, prompt_kind::text);
  EXPECT_EQ(g.text, "hi");
  EXPECT_FALSE(g.echo);  // echo is read alone below: with logprobs it is refused
  EXPECT_TRUE(parse_ok(R"({"prompt":"hi","echo":true})").prompts[0].echo);
  const sampling_params& p = g.params;
  EXPECT_EQ(p.max_tokens, 7);
  EXPECT_FLOAT_EQ(p.temperature, 0.5f);
  EXPECT_FLOAT_EQ(p.top_p, 0.9f);
  EXPECT_EQ(p.top_k, 40);
  EXPECT_FLOAT_EQ(p.min_p, 0.05f);
  EXPECT_EQ(p.n, 3);
  EXPECT_EQ(p.seed, 42u);
  EXPECT_EQ(p.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.stop_token_ids, (std::vector<int32_t>{2, 3}));
  EXPECT_FLOAT_EQ(p.presence_penalty, 0.1f);
  EXPECT_FLOAT_EQ(p.frequency_penalty, -0.2f);
  EXPECT_FLOAT_EQ(p.repetition_penalty, 1.1f);
  ASSERT_EQ(p.logit_bias.size(), 2u);
  EXPECT_EQ(p.logit_bias[0].first, 5);
  EXPECT_FLOAT_EQ(p.logit_bias[0].second, -100.0f);
  EXPECT_EQ(p.logprobs, 2);
  EXPECT_TRUE(p.ignore_eos);
  EXPECT_EQ(p.min_tokens, 2);
}

TEST(openai_protocol, defaults_follow_openai) {
  const auto c = parse_ok(R"({"prompt":"x"})");
  EXPECT_EQ(c.prompts[0].params.max_tokens, 16);
  EXPECT_EQ(c.prompts[0].params.logprobs, -1);
  EXPECT_TRUE(c.prompts[0].add_special_tokens);
  EXPECT_FALSE(c.stream);
  const auto chat = parse_ok(R"({"messages":[{"role":"user","content":"x"}]})", api_kind::chat);
  EXPECT_EQ(chat.prompts[0].params.max_tokens, -1);  // until the context is full
  EXPECT_FALSE(chat.prompts[0].add_special_tokens);
  EXPECT_TRUE(chat.prompts[0].add_generation_prompt);
}

TEST(openai_protocol, prompt_shapes_fan_out) {
  auto r = parse_ok(R"({"prompt":["a","b","c"],"n":2})");
  ASSERT_EQ(r.prompts.size(), 3u);
  EXPECT_EQ(r.prompts[2].text, "c");
  EXPECT_EQ(r.prompts[2].params.n, 2);

  r = parse_ok(R"({"prompt":[1,2,3]})");
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(r.prompts[0].kind, prompt_kind::token_ids);
  EXPECT_EQ(r.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));

  r = parse_ok(R"({"prompt":[[1],[4,5]]})");
  ASSERT_EQ(r.prompts.size(), 2u);
  EXPECT_EQ(r.prompts[1].token_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(r.prompts[1].kind, prompt_kind::token_ids);
}

TEST(openai_protocol, bad_prompts_are_400_on_prompt) {
  for (const char* body : {R"({})", R"({"prompt":[]})", R"({"prompt":["a",1]})",
                           R"({"prompt":[1,-2]})", R"({"prompt":[[1],[]]})", R"({"prompt":5})",
                           R"({"prompt":[1.5]})", R"({"prompt":[[1],"a"]})"}) {
    const api_error e = parse_error(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, "prompt") << body;
  }
}

TEST(openai_protocol, seeds_keep_all_64_bits) {
  openai_request r;
  ASSERT_FALSE(parse_openai_request(R"({"prompt":"x","seed":18446744073709551615})",
                                    api_kind::completion, r));
  EXPECT_EQ(r.prompts[0].params.seed, 18446744073709551615ull);
  ASSERT_FALSE(parse_openai_request(R"({"prompt":"x","seed":9223372036854775809})",
                                    api_kind::completion, r));
  EXPECT_EQ(r.prompts[0].params.seed, 9223372036854775809ull);  // not clamped to 2^63 - 1
  ASSERT_FALSE(parse_openai_request(R"({"prompt":"x","seed":-1})", api_kind::completion, r));
  EXPECT_EQ(r.prompts[0].params.seed, 18446744073709551615ull);  // two's complement, as C casts
}

TEST(openai_protocol, wrong_types_and_ranges_name_the_parameter) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"prompt":"x","temperature":"hot"})", "temperature"},
      {R"({"prompt":"x","temperature":-1})", "temperature"},
      {R"({"prompt":"x","temperature":1e39})", "temperature"},
      {R"({"prompt":"x","repetition_penalty":2.5})", "repetition_penalty"},
      {R"({"prompt":"x","top_p":0})", "top_p"},
      {R"({"prompt":"x","top_k":-2})", "top_k"},
      {R"({"prompt":"x","min_p":1.5})", "min_p"},
      {R"({"prompt":"x","n":0})", "n"},
      {R"({"prompt":"x","n":true})", "n"},
      {R"({"prompt":"x","max_tokens":0})", "max_tokens"},
      {R"({"prompt":"x","max_tokens":2.5})", "max_tokens"},
      {R"({"prompt":"x","seed":"s"})", "seed"},
      {R"({"prompt":"x","stop":5})", "stop"},
      {R"({"prompt":"x","stop":["a",1]})", "stop"},
      {R"({"prompt":"x","stop_token_ids":"a"})", "stop_token_ids"},
      {R"({"prompt":"x","presence_penalty":2.5})", "presence_penalty"},
      {R"({"prompt":"x","frequency_penalty":-3})", "frequency_penalty"},
      {R"({"prompt":"x","repetition_penalty":0})", "repetition_penalty"},
      {R"({"prompt":"x","logit_bias":{"abc":1}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"1":101}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{" 5":1}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"+5":1}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"5 ":1}})", "logit_bias"},
      {R"({"prompt":"x","logit_bias":{"-0":1}})", "logit_bias"},
      {R"({"prompt":"x","logprobs":1025})", "logprobs"},
      {R"({"prompt":"x","echo":"yes"})", "echo"},
      {R"({"prompt":"x","ignore_eos":1})", "ignore_eos"},
      {R"({"prompt":"x","min_tokens":-1})", "min_tokens"},
      {R"({"prompt":"x","max_tokens":2,"min_tokens":3})", "min_tokens"},
      {R"({"prompt":"x","stream":"true"})", "stream"},
      {R"({"prompt":"x","stream_options":{"include_usage":true}})", "stream_options"},
      {R"({"prompt":"x","stream":true,"stream_options":{"include_usage":1}})", "include_usage"},
      {R"({"prompt":"x","model":5})", "model"},
      {R"({"prompt":"x","user":5})", "user"},
      {R"({"prompt":"x","priority":"high"})", "priority"},
  };
  for (const auto& [body, param] : cases) {
    const api_error e = parse_error(body);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
    EXPECT_FALSE(e.message.empty());
  }
}

// HTTP and the offline engine share one contract (common/sampling_contract.hpp, vLLM's
// bounds): what one door takes the other takes, and both name the same parameter on refusal.
TEST(openai_protocol, sampling_bounds_are_the_offline_engines_bounds) {
  struct agreement {
    const char* body;
    std::function<void(sampling_params&)> same;
  };
  const agreement cases[] = {
      {R"({"prompt":"x","temperature":7})", [](auto& p) { p.temperature = 7; }},
      {R"({"prompt":"x","temperature":-0.5})", [](auto& p) { p.temperature = -0.5f; }},
      {R"({"prompt":"x","top_k":0})", [](auto& p) { p.top_k = 0; }},
      {R"({"prompt":"x","top_k":-2})", [](auto& p) { p.top_k = -2; }},
      {R"({"prompt":"x","repetition_penalty":2})", [](auto& p) { p.repetition_penalty = 2; }},
      {R"({"prompt":"x","repetition_penalty":3})", [](auto& p) { p.repetition_penalty = 3; }},
      {R"({"prompt":"x","n":129})", [](auto& p) { p.n = 129; }},
      {R"({"prompt":"x","min_p":1})", [](auto& p) { p.min_p = 1; }},
      {R"({"prompt":"x","logit_bias":{"3":-100}})",
       [](auto& p) {
         p.logit_bias = {{3, -100}};
       }},
      {R"({"prompt":"x","logit_bias":{"3":100.5}})",
       [](auto& p) {
         p.logit_bias = {{3, 100.5f}};
       }},
      {R"({"prompt":"x","max_tokens":4,"min_tokens":5})",
       [](auto& p) { p.max_tokens = 4, p.min_tokens = 5; }},
  };
  for (const auto& c : cases) {
    sampling_params offline;
    c.same(offline);
    const auto broken = check_sampling(offline);
    openai_request out;
    const auto error = parse_openai_request(c.body, api_kind::completion, out);
    ASSERT_EQ(error.has_value(), broken.has_value()) << c.body;
    if (broken) {
      EXPECT_EQ(error->param, broken->param) << c.body;
      EXPECT_EQ(error->message, broken->message) << c.body;
    }
  }
  // NaN reaches no HTTP request (JSON has none), but the offline door refuses it.
  sampling_params nan_temperature;
  nan_temperature.temperature = std::nanf("");
  ASSERT_TRUE(check_sampling(nan_temperature));
  EXPECT_EQ(check_sampling(nan_temperature)->param, "temperature");
}

TEST(openai_protocol, fields_it_cannot_honor_are_refused_not_ignored) {
  // Each asks for output this server cannot give; silently ignoring it would answer wrongly.
  const std::tuple<const char*, api_kind, const char*> refused[] = {
      {R"({"prompt":"x","structural_tag":{"type":"x"}})", api_kind::completion, "structural_tag"},
      {R"({"messages":[],"tool_choice":"required"})", api_kind::chat, "tool_choice"},
      {R"({"messages":[],"tool_choice":{"type":"function","function":{"name":"f"}}})",
       api_kind::chat, "tool_choice"},
      {R"({"prompt":"x","best_of":3})", api_kind::completion, "best_of"},
      {R"({"prompt":"x","suffix":"end"})", api_kind::completion, "suffix"},
      {R"({"prompt":"x","allowed_token_ids":[1,2]})", api_kind::completion, "allowed_token_ids"},
      {R"({"prompt":"x","bad_words":["no"]})", api_kind::completion, "bad_words"},
      {R"({"prompt":"x","logits_processors":["f"]})", api_kind::completion, "logits_processors"},
      {R"({"messages":[],"continue_final_message":true})", api_kind::chat,
       "continue_final_message"},
  };
  for (const auto& [body, kind, param] : refused) {
    const api_error e = parse_error(body, kind);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
  }
  // What asks for nothing beyond free text passes, and so do fields nobody defined.
  parse_ok(R"({"prompt":"x","response_format":{"type":"text"},"best_of":1,"suffix":"",)"
           R"("guided_json":null,"prompt_logprobs":null,"made_up_field":1,)"
           R"("use_beam_search":false,"allowed_token_ids":[],"bad_words":[]})");
  parse_ok(R"({"prompt":"x","echo":true,"logprobs":null})");
  parse_ok(R"({"prompt":"x","echo":false,"logprobs":1})");
  parse_ok(R"({"messages":[{"role":"user","content":"hi"}],"tool_choice":"none"})", api_kind::chat);
}

TEST(openai_protocol, prompt_logprobs_and_echo_with_logprobs_ask_for_the_prompts_logprobs) {
  openai_request named = parse_ok(R"({"prompt":"x","prompt_logprobs":3})");
  EXPECT_EQ(named.prompts[0].params.prompt_logprobs, 3);
  EXPECT_TRUE(named.prompt_logprobs);
  named = parse_ok(R"({"messages":[{"role":"user","content":"hi"}],"prompt_logprobs":0})",
                   api_kind::chat);
  EXPECT_EQ(named.prompts[0].params.prompt_logprobs, 0);
  // Echo with logprobs: the legacy object covers the prompt, with as many alternatives.
  openai_request echo = parse_ok(R"({"prompt":"x","echo":true,"logprobs":2})");
  EXPECT_EQ(echo.prompts[0].params.prompt_logprobs, 2);
  EXPECT_FALSE(echo.prompt_logprobs);
  EXPECT_EQ(parse_ok(R"({"prompt":"x","echo":true})").prompts[0].params.prompt_logprobs, -1);
  EXPECT_EQ(parse_error(R"({"prompt":"x","prompt_logprobs":-1})").param, "prompt_logprobs");
  EXPECT_EQ(parse_error(R"({"prompt":"x","prompt_logprobs":"2"})").param, "prompt_logprobs");
}

TEST(openai_protocol, use_beam_search_asks_for_n_beams_answered_whole) {
  const openai_request beams = parse_ok(
      R"({"prompt":"x","use_beam_search":true,"n":3,"length_penalty":0.5,"early_stopping":true})");
  EXPECT_TRUE(beams.prompts[0].params.beam.enabled);
  EXPECT_EQ(beams.prompts[0].params.n, 3);
  EXPECT_FLOAT_EQ(beams.prompts[0].params.beam.length_penalty, 0.5f);
  EXPECT_TRUE(beams.prompts[0].params.beam.early_stopping);
  EXPECT_TRUE(parse_ok(R"({"messages":[{"role":"user","content":"hi"}],"use_beam_search":true})",
                       api_kind::chat)
                  .prompts[0]
                  .params.beam.enabled);
  // vLLM ranks the beams once the search is over: nothing to stream, and nothing else may
  // choose or score a beam's tokens.
  EXPECT_EQ(parse_error(R"({"prompt":"x","use_beam_search":true,"stream":true})").param, "stream");
  EXPECT_EQ(parse_error(R"({"prompt":"x","use_beam_search":true,"logprobs":2})").param, "logprobs");
  EXPECT_EQ(parse_error(R"({"prompt":"x","use_beam_search":true,)"
                        R"("response_format":{"type":"json_object"}})")
                .param,
            "response_format");
  EXPECT_FALSE(parse_ok(R"({"prompt":"x","use_beam_search":false,"stream":true})")
                   .prompts[0]
                   .params.beam.enabled);
}

TEST(openai_protocol, max_tokens_zero_with_echo_scores_the_prompt_without_generating) {
  // lm-evaluation-harness's loglikelihood request (older versions send max_tokens 0).
  const openai_request scored =
      parse_ok(R"({"prompt":[[1,2,3]],"max_tokens":0,"echo":true,"logprobs":1,"temperature":0})");
  EXPECT_TRUE(scored.prompts[0].echo_without_generation);
  EXPECT_EQ(scored.prompts[0].params.max_tokens, 1);  // the engine computes one token, unshown
  EXPECT_EQ(scored.prompts[0].params.prompt_logprobs, 1);
  EXPECT_FALSE(
      parse_ok(R"({"prompt":"x","max_tokens":1,"echo":true})").prompts[0].echo_without_generation);
  EXPECT_EQ(parse_error(R"({"prompt":"x","max_tokens":0})").param, "max_tokens");
  EXPECT_EQ(parse_error(R"({"messages":[],"max_tokens":0})", api_kind::chat).param, "max_tokens");
}

TEST(openai_protocol, auto_tool_choice_is_refused_naming_the_flags_vllm_needs) {
  // vLLM answers 400 unless started with a tool-call parser (tool_fields_test.cpp has the
  // server that has one); answering as if the tools were used would be silently wrong.
  const std::string hi = R"("messages":[{"role":"user","content":"hi"}])";
  const std::string tools = R"("tools":[{"type":"function","function":{"name":"f"}}])";
  const std::vector<std::string> refused = {
      "{" + hi + "," + tools + R"(,"tool_choice":"auto"})",
      "{" + hi + "," + tools + "}",
  };
  // A tool choice without tools has nothing to choose from.
  EXPECT_EQ(parse_error("{" + hi + R"(,"tool_choice":"auto"})", api_kind::chat).param,
            "tool_choice");
  for (const std::string& body : refused) {
    const api_error e = parse_error(body, api_kind::chat);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, "tool_choice") << body;
    EXPECT_NE(e.message.find("--enable-auto-tool-choice"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find("--tool-call-parser"), std::string::npos) << e.message;
  }
  // Tools without tool_choice mean "auto", and the answer says so.
  EXPECT_NE(parse_error("{" + hi + "," + tools + "}", api_kind::chat).message.find("tools"),
            std::string::npos);
  // "none" renders the tools into the prompt only; so do an explicit null (vLLM defaults to
  // "auto" only when the field is missing) and an empty list.
  const std::vector<std::string> accepted = {
      "{" + hi + "," + tools + R"(,"tool_choice":"none"})",
      "{" + hi + "," + tools + R"(,"tool_choice":null})",
      "{" + hi + R"(,"tools":[]})",
  };
  for (const std::string& body : accepted) parse_ok(body, api_kind::chat);
}

TEST(openai_protocol, vllm_extensions_stop_strings_truncation_and_template_kwargs) {
  const auto r = parse_ok(
      R"({"prompt":"x","stop":"end","include_stop_str_in_output":true,"truncate_prompt_tokens":5})");
  EXPECT_TRUE(r.prompts[0].params.include_stop_str_in_output);
  EXPECT_EQ(r.prompts[0].params.truncate_prompt_tokens, 5);
  EXPECT_EQ(parse_ok(R"({"prompt":"x","truncate_prompt_tokens":-1})")
                .prompts[0]
                .params.truncate_prompt_tokens,
            -1);
  EXPECT_EQ(parse_error(R"({"prompt":"x","truncate_prompt_tokens":0})").param,
            "truncate_prompt_tokens");
  EXPECT_EQ(parse_error(R"({"prompt":"x","truncate_prompt_tokens":-2})").param,
            "truncate_prompt_tokens");

  // Extra template variables sit beside messages, where the chat renderer reads them.
  const auto chat = parse_ok(R"({"messages":[{"role":"user","content":"hi"}],)"
                             R"("chat_template_kwargs":{"enable_thinking":false}})",
                             api_kind::chat);
  const auto vars = nlohmann::json::parse(chat.prompts[0].chat_json);
  EXPECT_EQ(vars["enable_thinking"], false);
  EXPECT_EQ(vars["messages"][0]["content"], "hi");
  EXPECT_EQ(parse_error(R"({"messages":[{"role":"user","content":"hi"}],)"
                        R"("chat_template_kwargs":{"messages":[]}})",
                        api_kind::chat)
                .param,
            "chat_template_kwargs");
}

TEST(openai_protocol, priority_is_read_for_the_priority_policy) {
  EXPECT_EQ(parse_ok(R"({"prompt":"x","priority":-3})").prompts[0].params.priority, -3);
  EXPECT_EQ(parse_ok(R"({"prompt":"x"})").prompts[0].params.priority, 0);
}

TEST(openai_protocol, null_means_not_given) {
  const auto r = parse_ok(R"({"prompt":"x","temperature":null,"stop":null,"seed":null})");
  EXPECT_FLOAT_EQ(r.prompts[0].params.temperature, 1.0f);
  EXPECT_FALSE(r.prompts[0].params.seed);
}

TEST(openai_protocol, tool_call_arguments_reach_the_template_as_a_mapping) {
  const auto r = parse_ok(R"({"messages":[{"role":"user","content":"x"},
      {"role":"assistant","content":null,"tool_calls":[
        {"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\": 1}"}},
        {"id":"call_2","type":"function","function":{"name":"g","arguments":""}}]},
      {"role":"tool","tool_call_id":"call_1","content":"2"}]})",
                          api_kind::chat);
  const auto chat = nlohmann::json::parse(r.prompts[0].chat_json);
  const auto& calls = chat["messages"][1]["tool_calls"];
  EXPECT_EQ(calls[0]["function"]["arguments"], nlohmann::json({{"a", 1}}));
  EXPECT_EQ(calls[1]["function"]["arguments"], nlohmann::json::object());  // no arguments
  EXPECT_EQ(chat["messages"][2]["tool_call_id"], "call_1");
}

// Arguments the template would render as something the model never wrote are refused.
TEST(openai_protocol, tool_call_arguments_that_are_not_a_json_object_are_refused) {
  for (const char* arguments : {R"(not json)", R"({\"a\": 1)", R"([1, 2])", R"(42)"}) {
    const std::string body = std::string(R"({"messages":[{"role":"assistant","content":null,)") +
                             R"("tool_calls":[{"id":"c","type":"function","function":)" +
                             R"({"name":"g","arguments":")" + arguments + R"("}}]}]})";
    const api_error e = parse_error(body, api_kind::chat);
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, "messages") << body;
    EXPECT_NE(e.message.find("function.arguments must be a JSON object"), std::string::npos)
        << e.message;
  }
}

TEST(openai_protocol, chat_messages_and_logprobs) {
  const auto r = parse_ok(R"({"model":"m","messages":[
      {"role":"system","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
      "max_completion_tokens":9,"max_tokens":3,"logprobs":true,"top_logprobs":4,
      "tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none"})",
                          api_kind::chat);
  ASSERT_EQ(r.prompts.size(), 1u);
  const generate_request& g = r.prompts[0];
  EXPECT_EQ(g.kind, prompt_kind::chat);
  EXPECT_EQ(g.params.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_EQ(g.params.logprobs, 4);
  const auto chat = nlohmann::json::parse(g.chat_json);
  EXPECT_EQ(chat["messages"][1]["content"], "a\nb");
  EXPECT_EQ(chat["messages"][0]["role"], "system");
  EXPECT_EQ(chat["tools"].size(), 1u);

  EXPECT_EQ(
      parse_ok(R"({"messages":[{"role":"user","content":"x"}],"logprobs":true})", api_kind::chat)
          .prompts[0]
          .params.logprobs,
      0);
  EXPECT_EQ(parse_error(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})",
                        api_kind::chat)
                .param,
            "top_logprobs");
}

TEST(openai_protocol, bad_chat_messages) {
  for (const char* body :
       {R"({})", R"({"messages":[]})", R"({"messages":"hi"})", R"({"messages":[5]})",
        R"({"messages":[{"content":"x"}]})", R"({"messages":[{"role":"user","content":5}]})",
        R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})"}) {
    EXPECT_EQ(parse_error(body, api_kind::chat).param, "messages") << body;
  }
}

TEST(openai_protocol, bad_json_is_400) {
  for (const char* body : {"", "{", "[1,2]", "nul", "\"text\""}) {
    EXPECT_EQ(parse_error(body).status, 400) << body;
  }
  std::string deep(100000, '[');
  EXPECT_EQ(parse_error(deep).status, 400);
  std::string deep_in_string = R"({"prompt":")" + std::string(1000, '[') + R"("})";
  EXPECT_EQ(parse_ok(deep_in_string).prompts[0].text.size(), 1000u);
}

TEST(openai_protocol, tokenize_and_detokenize_bodies) {
  generate_request g;
  ASSERT_FALSE(parse_tokenize_request(R"({"prompt":"hello","add_special_tokens":false})", g));
  EXPECT_EQ(g.kind, prompt_kind::text);
  EXPECT_EQ(g.text, "hello");
  EXPECT_FALSE(g.add_special_tokens);
  ASSERT_FALSE(parse_tokenize_request(R"({"messages":[{"role":"user","content":"x"}]})", g));
  EXPECT_EQ(g.kind, prompt_kind::chat);
  EXPECT_TRUE(parse_tokenize_request(R"({"text":"x"})", g));

  detokenize_request ids;
  ASSERT_FALSE(parse_detokenize_request(R"({"tokens":[1,2]})", ids));
  EXPECT_EQ(ids.tokens, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ids.model, "");  // the default model's tokenizer
  detokenize_request named;
  ASSERT_FALSE(parse_detokenize_request(R"({"tokens":[3],"model":"beta"})", named));
  EXPECT_EQ(named.model, "beta");
  EXPECT_EQ(parse_detokenize_request(R"({"tokens":["a"]})", ids)->param, "tokens");
  EXPECT_EQ(parse_detokenize_request(R"({"tokens":[1],"model":7})", ids)->param, "model");
}

TEST(openai_protocol, error_object_shape) {
  const auto j = nlohmann::json::parse(error_json(bad_request("bad n", "n")));
  EXPECT_EQ(j["error"]["message"], "bad n");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "n");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(engine_error("no such model", 404).status, 404);
  EXPECT_EQ(engine_error("boom", 0).status, 500);
  EXPECT_EQ(engine_error("busy", 503).status, 503);
}

TEST(openai_protocol, the_models_sampling_defaults_fill_what_a_request_leaves_out) {
  sampling_defaults model;
  model.temperature = 0.6f;
  model.top_k = 20;
  openai_request plain, own;
  ASSERT_FALSE(parse_openai_request(R"({"prompt":"x"})", api_kind::completion, plain, model));
  EXPECT_EQ(plain.prompts.at(0).params.temperature, 0.6f);
  EXPECT_EQ(plain.prompts.at(0).params.top_k, 20);
  EXPECT_EQ(plain.prompts.at(0).params.top_p, 1.0f);  // not recommended: OpenAI's
  ASSERT_FALSE(parse_openai_request(R"({"messages":[{"role":"user","content":"x"}],
                                        "temperature":0,"top_k":-1})",
                                    api_kind::chat, own, model));
  EXPECT_EQ(own.prompts.at(0).params.temperature, 0.0f);  // the request's own values win
  EXPECT_EQ(own.prompts.at(0).params.top_k, -1);
}

}  // namespace
}  // namespace actorllm::api

// Fields of the OpenAI objects that follow vLLM's types and values: stop_reason, text_offset,
// system_fingerprint.
#include <gtest/gtest.h>

#include "api/openai_call.hpp"

namespace actorllm::api {
namespace {

using json = nlohmann::json;

call_options options_for(api_kind kind, bool stream) {
  call_options o;
  o.kind = kind;
  o.id = "cmpl-1";
  o.model = "m";
  o.created = 123;
  o.stream = stream;
  return o;
}

request_output last_delta(finish_reason finish, int32_t stop_token, std::string stop_string) {
  request_output out;
  out.request_id = "e0";
  out.text = "ab";
  out.token_ids = {7, 8};
  out.num_prompt_tokens = 3;
  out.num_generated_tokens = 2;
  out.finish = finish;
  out.stop_token = stop_token;
  out.stop_reason = std::move(stop_string);
  return out;
}

/// stop_reason of the one choice, whole and streamed (the last chunk).
std::pair<json, json> stop_reasons(api_kind kind, const request_output& out) {
  openai_call whole(options_for(kind, false), {"e0"});
  std::vector<std::string> none;
  whole.add(out, none);
  openai_call streamed(options_for(kind, true), {"e0"});
  std::vector<std::string> chunks;
  streamed.add(out, chunks);
  EXPECT_FALSE(chunks.empty());
  return {json::parse(whole.response())["choices"][0]["stop_reason"],
          json::parse(chunks.back())["choices"][0]["stop_reason"]};
}

TEST(openai_fields, stop_reason_is_the_stop_token_id_as_an_integer) {
  for (api_kind kind : {api_kind::completion, api_kind::chat}) {
    const auto [whole, streamed] = stop_reasons(kind, last_delta(finish_reason::stop, 13, ""));
    EXPECT_TRUE(whole.is_number_integer()) << whole;
    EXPECT_EQ(whole, 13);
    EXPECT_TRUE(streamed.is_number_integer()) << streamed;
    EXPECT_EQ(streamed, 13);
  }
}

TEST(openai_fields, stop_reason_is_the_matched_stop_string) {
  for (api_kind kind : {api_kind::completion, api_kind::chat}) {
    const auto [whole, streamed] = stop_reasons(kind, last_delta(finish_reason::stop, -1, "\n"));
    EXPECT_EQ(whole, "\n");
    EXPECT_EQ(streamed, "\n");
  }
}

TEST(openai_fields, stop_reason_is_null_for_eos_and_length) {
  for (api_kind kind : {api_kind::completion, api_kind::chat}) {
    for (finish_reason finish : {finish_reason::stop, finish_reason::length}) {
      const auto [whole, streamed] = stop_reasons(kind, last_delta(finish, -1, ""));
      EXPECT_TRUE(whole.is_null()) << whole;
      EXPECT_TRUE(streamed.is_null()) << streamed;
    }
  }
}

request_output logprob_delta(std::vector<std::string> texts, finish_reason finish) {
  request_output out;
  out.request_id = "e0";
  for (const auto& t : texts) {
    out.text += t;
    out.token_ids.push_back(7);
    out.token_texts.push_back(t);
    token_logprob lp;
    lp.token_id = 7;
    lp.logprob = -0.5f;
    out.logprobs.push_back(lp);
  }
  out.finish = finish;
  return out;
}

TEST(openai_fields, text_offset_counts_characters_not_bytes) {
  // " é" is 2 characters in 3 bytes, "字" 1 in 3: offsets as Python's len() gives them.
  auto o = options_for(api_kind::completion, false);
  o.logprobs = true;
  openai_call whole(o, {"e0"});
  std::vector<std::string> none;
  whole.add(logprob_delta({" \u00e9", "\u5b57"}, finish_reason::none), none);
  whole.add(logprob_delta({"a", " b"}, finish_reason::length), none);
  const json logprobs = json::parse(whole.response())["choices"][0]["logprobs"];
  EXPECT_EQ(logprobs["tokens"], json({" \u00e9", "\u5b57", "a", " b"}));
  EXPECT_EQ(logprobs["text_offset"], json({0, 2, 3, 4}));

  o.stream = true;
  openai_call streamed(o, {"e0"});
  std::vector<std::string> chunks;
  streamed.add(logprob_delta({" \u00e9", "\u5b57"}, finish_reason::none), chunks);
  streamed.add(logprob_delta({"a"}, finish_reason::length), chunks);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(json::parse(chunks[0])["choices"][0]["logprobs"]["text_offset"], json({0, 2}));
  EXPECT_EQ(json::parse(chunks[1])["choices"][0]["logprobs"]["text_offset"], json({3}));
}

TEST(openai_fields, system_fingerprint_is_in_every_object_and_chunk) {
  for (api_kind kind : {api_kind::completion, api_kind::chat}) {
    auto o = options_for(kind, false);
    o.system_fingerprint = "fp_test";
    openai_call whole(o, {"e0"});
    std::vector<std::string> none;
    whole.add(last_delta(finish_reason::length, -1, ""), none);
    EXPECT_EQ(json::parse(whole.response())["system_fingerprint"], "fp_test");

    o.stream = true;
    o.include_usage = true;
    openai_call streamed(o, {"e0"});
    std::vector<std::string> chunks;
    request_output first = last_delta(finish_reason::none, -1, "");
    streamed.add(first, chunks);
    streamed.add(last_delta(finish_reason::length, -1, ""), chunks);
    chunks.push_back(streamed.usage_chunk());
    ASSERT_GE(chunks.size(), 3u);
    for (const auto& chunk : chunks) {
      const json j = json::parse(chunk);
      EXPECT_EQ(j["system_fingerprint"], "fp_test") << chunk;
      EXPECT_EQ(to_wire(j), chunk);  // the streamed bytes are still those of the object
    }
  }
}

}  // namespace
}  // namespace actorllm::api

// Assembling OpenAI objects from engine deltas: chunks, role chunks, usage, logprobs, errors.
#include "api/openai_call.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace actorllm::api {
namespace {

using json = nlohmann::json;

request_output delta(const std::string& id, int32_t index, const std::string& text, int32_t gen,
                     finish_reason finish = finish_reason::none) {
  request_output out;
  out.request_id = id;
  out.index = index;
  out.text = text;
  out.token_ids = {7};
  out.num_prompt_tokens = 5;
  out.num_generated_tokens = gen;
  out.finish = finish;
  return out;
}

std::vector<json> parse_all(const std::vector<std::string>& chunks) {
  std::vector<json> out;
  for (const auto& c : chunks) out.push_back(json::parse(c));
  return out;
}

call_options options(api_kind kind, bool stream, int32_t n = 1) {
  call_options o;
  o.kind = kind;
  o.id = "cmpl-1";
  o.model = "m";
  o.created = 123;
  o.n = n;
  o.stream = stream;
  return o;
}

TEST(openai_call, completion_stream_chunks) {
  openai_call call(options(api_kind::completion, true), {"e0"});
  std::vector<std::string> chunks;
  call.add(delta("e0", 0, "Hel", 1), chunks);
  call.add(delta("other", 0, "x", 1), chunks);  // not ours: ignored
  call.add(delta("e0", 0, "lo", 2, finish_reason::length), chunks);
  EXPECT_TRUE(call.done());
  const auto j = parse_all(chunks);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["object"], "text_completion");
  EXPECT_EQ(j[0]["id"], "cmpl-1");
  EXPECT_EQ(j[0]["model"], "m");
  EXPECT_EQ(j[0]["created"], 123);
  EXPECT_EQ(j[0]["choices"][0]["text"], "Hel");
  EXPECT_TRUE(j[0]["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(j[0].contains("usage"));  // no include_usage, no usage at all
  EXPECT_EQ(j[1]["choices"][0]["finish_reason"], "length");
}

TEST(openai_call, chat_stream_role_first_and_usage) {
  auto o = options(api_kind::chat, true, 2);
  o.include_usage = true;
  openai_call call(o, {"e0"});
  std::vector<std::string> chunks;
  call.add(delta("e0", 1, "b", 1), chunks);
  call.add(delta("e0", 0, "a", 1, finish_reason::stop), chunks);
  call.add(delta("e0", 1, "", 2, finish_reason::length), chunks);
  ASSERT_TRUE(call.done());
  auto j = parse_all(chunks);
  ASSERT_EQ(j.size(), 5u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(j[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(j[i]["choices"][0]["index"], i);
    EXPECT_EQ(j[i]["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(j[i].contains("usage") && j[i]["usage"].is_null());
  }
  EXPECT_EQ(j[2]["choices"][0]["delta"]["content"], "b");
  EXPECT_EQ(j[3]["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j[4]["choices"][0]["delta"], json::object());
  EXPECT_EQ(j[4]["choices"][0]["finish_reason"], "length");
  const json usage = json::parse(call.usage_chunk());
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 3);
  EXPECT_EQ(usage["usage"]["total_tokens"], 8);
}

TEST(openai_call, fan_out_choice_index_is_prompt_times_n_plus_sample) {
  openai_call call(options(api_kind::completion, false, 2), {"e0", "e1"});
  std::vector<std::string> chunks;
  call.add(delta("e1", 1, "d", 1, finish_reason::stop), chunks);
  call.add(delta("e1", 0, "c", 1, finish_reason::stop), chunks);
  call.add(delta("e0", 0, "a", 1, finish_reason::stop), chunks);
  EXPECT_FALSE(call.done());
  call.add(delta("e0", 1, "b", 1, finish_reason::stop), chunks);
  ASSERT_TRUE(call.done());
  EXPECT_TRUE(chunks.empty());
  const json r = json::parse(call.response());
  EXPECT_EQ(r["object"], "text_completion");
  ASSERT_EQ(r["choices"].size(), 4u);
  EXPECT_EQ(r["choices"][0]["text"], "a");
  EXPECT_EQ(r["choices"][1]["text"], "b");
  EXPECT_EQ(r["choices"][2]["text"], "c");
  EXPECT_EQ(r["choices"][3]["text"], "d");
  EXPECT_EQ(r["choices"][3]["index"], 3);
  EXPECT_EQ(r["usage"]["prompt_tokens"], 10);  // each prompt once, not once per sample
  EXPECT_EQ(r["usage"]["completion_tokens"], 4);
}

TEST(openai_call, chat_response_object) {
  openai_call call(options(api_kind::chat, false), {"e0"});
  std::vector<std::string> chunks;
  call.add(delta("e0", 0, "Hi ", 1), chunks);
  auto last = delta("e0", 0, "there", 2, finish_reason::stop);
  last.stop_reason = "\n";
  call.add(last, chunks);
  const json r = json::parse(call.response());
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Hi there");
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["choices"][0]["stop_reason"], "\n");
  EXPECT_TRUE(r["choices"][0]["logprobs"].is_null());
}

/// A delta of one token with its logprob and the most likely alternatives (most likely
/// first, as the engine reports them).
request_output with_logprobs(const std::string& text, int32_t id, float logprob, int32_t gen,
                             std::vector<int32_t> top_ids, std::vector<float> top_logprobs,
                             std::vector<std::string> top_texts) {
  auto out = delta("e0", 0, text, gen);
  out.token_ids = {id};
  out.token_texts = {text};
  token_logprob lp;
  lp.token_id = id;
  lp.logprob = logprob;
  lp.top_ids = std::move(top_ids);
  lp.top_logprobs = std::move(top_logprobs);
  lp.top_texts = std::move(top_texts);
  out.logprobs = {lp};
  return out;
}

// "Hi" (id 7) drawn as the most likely token; its runner-up (id 8) has no text, so the API
// names it "token_id:8" (vLLM's convention).
request_output first_token() {
  return with_logprobs("Hi", 7, -0.25f, 1, {7, 8}, {-0.25f, -2.0f}, {"Hi"});
}

// " é" (id 11) drawn although " a" (id 12) was more likely.
request_output second_token() {
  return with_logprobs(" \xC3\xA9", 11, -1.5f, 2, {12, 11}, {-0.5f, -1.5f}, {" a", " \xC3\xA9"});
}

// Chat logprobs of first_token() and second_token(), written out from OpenAI's format: per
// token its text, logprob, UTF-8 bytes and top_logprobs (most likely first), each with the same
// three fields.
const json first_token_chat = json::parse(R"({
  "token": "Hi", "logprob": -0.25, "bytes": [72, 105],
  "top_logprobs": [
    {"token": "Hi", "logprob": -0.25, "bytes": [72, 105]},
    {"token": "token_id:8", "logprob": -2.0,
     "bytes": [116, 111, 107, 101, 110, 95, 105, 100, 58, 56]}
  ]})");
const json second_token_chat = json::parse(R"({
  "token": " \u00e9", "logprob": -1.5, "bytes": [32, 195, 169],
  "top_logprobs": [
    {"token": " a", "logprob": -0.5, "bytes": [32, 97]},
    {"token": " \u00e9", "logprob": -1.5, "bytes": [32, 195, 169]}
  ]})");

TEST(openai_call, completion_logprobs_are_the_legacy_object) {
  auto o = options(api_kind::completion, false);
  o.logprobs = true;
  openai_call call(o, {"e0"});
  std::vector<std::string> chunks;
  call.add(first_token(), chunks);
  call.add(second_token(), chunks);
  auto last = with_logprobs("!", 13, -0.125f, 3, {13}, {-0.125f}, {"!"});
  last.finish = finish_reason::length;
  call.add(last, chunks);
  // The legacy completions shape: parallel lists over the tokens; top_logprobs maps each
  // alternative's text to its logprob; text_offset is where each token starts in the text, in
  // characters: "!" starts at 4, after "Hi" and " é" (two characters, three bytes).
  const json expected = json::parse(R"({
    "tokens": ["Hi", " \u00e9", "!"],
    "token_logprobs": [-0.25, -1.5, -0.125],
    "top_logprobs": [{"Hi": -0.25, "token_id:8": -2.0}, {" a": -0.5, " \u00e9": -1.5},
                     {"!": -0.125}],
    "text_offset": [0, 2, 4]
  })");
  const json r = json::parse(call.response());
  EXPECT_EQ(r["choices"][0]["text"], "Hi \xC3\xA9!");
  EXPECT_EQ(r["choices"][0]["logprobs"], expected);
}

TEST(openai_call, chat_logprobs_are_the_content_list) {
  auto o = options(api_kind::chat, false);
  o.logprobs = true;
  openai_call call(o, {"e0"});
  std::vector<std::string> chunks;
  call.add(first_token(), chunks);
  auto last = second_token();
  last.finish = finish_reason::stop;
  call.add(last, chunks);
  const json r = json::parse(call.response());
  EXPECT_EQ(r["choices"][0]["message"]["content"], "Hi \xC3\xA9");
  EXPECT_EQ(r["choices"][0]["logprobs"],
            json({{"content", json::array({first_token_chat, second_token_chat})}}));
}

TEST(openai_call, chat_logprobs_with_no_token_are_an_empty_content_list) {
  auto o = options(api_kind::chat, false);
  o.logprobs = true;
  openai_call call(o, {"e0"});
  std::vector<std::string> chunks;
  call.add(delta("e0", 0, "", 0, finish_reason::length), chunks);
  EXPECT_EQ(json::parse(call.response())["choices"][0]["logprobs"],
            json({{"content", json::array()}}));
}

TEST(openai_call, failure_before_first_chunk_keeps_the_http_status) {
  openai_call call(options(api_kind::completion, true), {"e0"});
  request_output out;
  out.request_id = "e0";
  out.finish = finish_reason::error;
  out.error = "prompt has 5000 tokens, max_model_len is 4096";
  out.error_status = 400;
  std::vector<std::string> chunks;
  call.add(out, chunks);
  EXPECT_TRUE(call.done());
  EXPECT_TRUE(call.failed());
  EXPECT_FALSE(call.started());
  EXPECT_TRUE(chunks.empty());
  EXPECT_EQ(call.error()->status, 400);
  EXPECT_NE(call.error()->message.find("4096"), std::string::npos);
}

TEST(openai_call, failure_after_first_chunk_is_an_error_chunk) {
  openai_call call(options(api_kind::completion, true), {"e0", "e1"});
  std::vector<std::string> chunks;
  call.add(delta("e0", 0, "a", 1), chunks);
  request_output out;
  out.request_id = "e1";
  out.finish = finish_reason::error;
  out.error_status = 500;
  call.add(out, chunks);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_TRUE(call.done());
  EXPECT_EQ(json::parse(chunks[1])["error"]["type"], "server_error");
}

TEST(openai_call, invalid_utf8_becomes_replacement_characters) {
  // to_wire's contract: what goes out is valid UTF-8, each invalid byte sequence (a stray byte,
  // a truncated character) replaced by U+FFFD, the valid text around it kept.
  const std::string fffd = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"ok \xFF\xFE", "ok " + fffd + fffd},
      {"caf\xC3", "caf" + fffd},
      {"\xE2\x82!", fffd + "!"},
      {"\xC3\xA9 fine", "\xC3\xA9 fine"},
  };
  for (const auto& [text, expected] : cases) {
    openai_call stream(options(api_kind::completion, true), {"e0"});
    std::vector<std::string> chunks;
    stream.add(delta("e0", 0, text, 1), chunks);
    ASSERT_EQ(chunks.size(), 1u);
    EXPECT_EQ(json::parse(chunks[0])["choices"][0]["text"], expected) << expected;

    openai_call whole(options(api_kind::chat, false), {"e0"});
    whole.add(delta("e0", 0, text, 1, finish_reason::stop), chunks);
    EXPECT_EQ(json::parse(whole.response())["choices"][0]["message"]["content"], expected);
  }

  // A token that ends mid-character: its text is replaced, but "bytes" keeps the raw bytes, so
  // that a client can join the character split across tokens (what the field is for).
  auto o = options(api_kind::chat, true);
  o.logprobs = true;
  openai_call call(o, {"e0"});
  std::vector<std::string> chunks;
  call.add(with_logprobs("\xC3", 300, -0.5f, 1, {300}, {-0.5f}, {"\xC3"}), chunks);
  const json entry = json::parse(chunks.back())["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["token"], fffd);
  EXPECT_EQ(entry["bytes"], json({195}));
  EXPECT_EQ(entry["top_logprobs"][0]["bytes"], json({195}));
}

// The object a streamed chunk stands for, built the obvious way (the oracle of render_chunk).
json expected_chunk(const call_options& o, std::size_t index, const request_output& out,
                    const json& logprobs, const std::string& stop_reason) {
  const bool chat = o.kind == api_kind::chat;
  json entry = {{"index", index}};
  if (chat) {
    entry["delta"] = out.text.empty() ? json::object() : json{{"content", out.text}};
  } else {
    entry["text"] = out.text;
  }
  entry["logprobs"] = logprobs;
  entry["finish_reason"] = out.finish == finish_reason::none ? json() : json(to_string(out.finish));
  entry["stop_reason"] = stop_reason.empty() ? json() : json(stop_reason);
  json chunk = {{"id", o.id},
                {"object", chat ? "chat.completion.chunk" : "text_completion"},
                {"created", o.created},
                {"model", o.model},
                {"choices", json::array({entry})}};
  if (o.include_usage) chunk["usage"] = nullptr;
  return chunk;
}

TEST(openai_call, streamed_chunks_are_the_bytes_of_their_object) {
  const std::vector<std::string> texts = {"Hel", "", "say \"hi\"\n\ttab\\", "\x01\x1f é 字",
                                          std::string("\xff\xfe", 2)};
  for (api_kind kind : {api_kind::completion, api_kind::chat}) {
    for (bool usage : {false, true}) {
      for (const std::string& text : texts) {
        for (finish_reason finish : {finish_reason::none, finish_reason::stop}) {
          if (text.empty() && finish == finish_reason::none) continue;  // no chunk at all
          auto o = options(kind, true, 2);
          o.id = "cmpl-\"q\"";
          o.model = "m/é";
          o.include_usage = usage;
          openai_call call(o, {"e0"});
          std::vector<std::string> chunks;
          auto out = delta("e0", 1, text, 1, finish);
          if (finish == finish_reason::stop) out.stop_reason = "13";
          call.add(out, chunks);
          const std::string expected = to_wire(expected_chunk(o, 1, out, json(), out.stop_reason));
          ASSERT_FALSE(chunks.empty());
          EXPECT_EQ(chunks.back(), expected) << "text '" << text << "'";
        }
      }
    }
  }
}

TEST(openai_call, continuous_usage_puts_the_usage_so_far_in_every_chunk) {
  for (api_kind kind : {api_kind::completion, api_kind::chat}) {
    auto o = options(kind, true);
    o.include_usage = true;
    o.continuous_usage = true;
    openai_call call(o, {"e0"});
    std::vector<std::string> chunks;
    for (int32_t gen = 1; gen <= 3; ++gen) {
      call.add(delta("e0", 0, "t" + std::to_string(gen), gen,
                     gen == 3 ? finish_reason::length : finish_reason::none),
               chunks);
      json expected = expected_chunk(o, 0,
                                     delta("e0", 0, "t" + std::to_string(gen), gen,
                                           gen == 3 ? finish_reason::length : finish_reason::none),
                                     json(), "");
      expected["usage"] = {
          {"prompt_tokens", 5}, {"completion_tokens", gen}, {"total_tokens", 5 + gen}};
      EXPECT_EQ(chunks.back(), to_wire(expected)) << "token " << gen;
    }
    EXPECT_EQ(json::parse(call.usage_chunk())["usage"]["completion_tokens"], 3);
  }
}

TEST(openai_call, streamed_chunk_with_logprobs_is_the_bytes_of_its_object) {
  for (api_kind kind : {api_kind::completion, api_kind::chat}) {
    auto o = options(kind, true);
    o.logprobs = true;
    openai_call call(o, {"e0"});
    std::vector<std::string> chunks;
    call.add(first_token(), chunks);
    call.add(second_token(), chunks);
    // Each chunk carries its own token's logprobs; a completion chunk's text_offset counts
    // from the start of the choice's text.
    const json logprobs = kind == api_kind::chat
                              ? json({{"content", json::array({second_token_chat})}})
                              : json::parse(R"({"tokens": [" \u00e9"], "token_logprobs": [-1.5],
                              "top_logprobs": [{" a": -0.5, " \u00e9": -1.5}],
                              "text_offset": [2]})");
    EXPECT_EQ(chunks.back(), to_wire(expected_chunk(o, 0, second_token(), logprobs, "")));
  }
}

TEST(openai_call, merge_deltas_joins_each_choice_in_order) {
  std::vector<request_output> outs = {
      delta("a", 0, "1", 1),    delta("a", 1, "x", 1),
      delta("a", 0, "2", 2),    delta("a", 0, "3", 3, finish_reason::stop),
      delta("a", 0, "late", 4), delta("b", 0, "y", 1)};
  merge_deltas(outs);
  ASSERT_EQ(outs.size(), 4u);
  EXPECT_EQ(outs[0].text, "123");
  EXPECT_EQ(outs[0].finish, finish_reason::stop);
  EXPECT_EQ(outs[0].num_generated_tokens, 3);
  EXPECT_EQ(outs[0].token_ids.size(), 3u);
  EXPECT_EQ(outs[1].text, "x");
  EXPECT_EQ(outs[2].text, "late");  // after a finish nothing is merged into it
  EXPECT_EQ(outs[3].request_id, "b");
}

}  // namespace
}  // namespace actorllm::api

namespace actorllm::api {
namespace {

/// The first delta of a scored prompt "<s>Hi é" (ids 1, 7, 11): its echo, the prompt's
/// logprobs (7 at rank 1; 11 at rank 2, behind " a") and the first generated token "!".
request_output scored_prompt_then_token() {
  auto out = with_logprobs("!", 13, -0.125f, 1, {13}, {-0.125f}, {"!"});
  out.text = "Hi \xC3\xA9!";  // the router's echo, then the token's text
  out.prompt_token_texts = {"<s>", "Hi", " \xC3\xA9"};
  token_logprob hi;
  hi.token_id = 7, hi.logprob = -0.25f, hi.rank = 1;
  hi.top_ids = {7}, hi.top_logprobs = {-0.25f}, hi.top_texts = {"Hi"};
  token_logprob e;
  e.token_id = 11, e.logprob = -1.5f, e.rank = 2;
  e.top_ids = {12}, e.top_logprobs = {-0.5f}, e.top_texts = {" a"};
  out.prompt_logprobs = {hi, e};
  out.finish = finish_reason::length;
  return out;
}

TEST(openai_call, echo_with_logprobs_puts_the_prompts_tokens_first) {
  // What lm-evaluation-harness reads: token_logprobs[i] for every prompt token, null for the
  // first; each top dict holds the alternatives and the prompt's own token.
  auto o = options(api_kind::completion, false);
  o.logprobs = true;
  o.echo_logprobs = true;
  openai_call call(o, {"e0"});
  std::vector<std::string> chunks;
  call.add(scored_prompt_then_token(), chunks);
  const json expected = json::parse(R"({
    "tokens": ["<s>", "Hi", " \u00e9", "!"],
    "token_logprobs": [null, -0.25, -1.5, -0.125],
    "top_logprobs": [null, {"Hi": -0.25}, {" a": -0.5, " \u00e9": -1.5}, {"!": -0.125}],
    "text_offset": [0, 3, 5, 7]
  })");
  const json r = json::parse(call.response());
  EXPECT_EQ(r["choices"][0]["logprobs"], expected);
  EXPECT_FALSE(r["choices"][0].contains("prompt_logprobs"));  // not asked for by name

  // Streamed, the first chunk carries the same.
  o.stream = true;
  openai_call streamed(o, {"e0"});
  chunks.clear();
  streamed.add(scored_prompt_then_token(), chunks);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(json::parse(chunks[0])["choices"][0]["logprobs"], expected);
}

TEST(openai_call, prompt_logprobs_are_vllms_list_per_choice_or_per_chat) {
  const json expected = json::parse(R"([
    null,
    {"7": {"logprob": -0.25, "rank": 1, "decoded_token": "Hi"}},
    {"12": {"logprob": -0.5, "rank": 1, "decoded_token": " a"},
     "11": {"logprob": -1.5, "rank": 2, "decoded_token": " \u00e9"}}
  ])");
  auto o = options(api_kind::completion, false);
  o.prompt_logprobs = true;
  openai_call completion(o, {"e0"});
  std::vector<std::string> chunks;
  completion.add(scored_prompt_then_token(), chunks);
  const json r = json::parse(completion.response());
  EXPECT_EQ(r["choices"][0]["prompt_logprobs"], expected);
  EXPECT_TRUE(r["choices"][0]["logprobs"].is_null());  // only what was asked

  auto c = options(api_kind::chat, false);
  c.prompt_logprobs = true;
  openai_call chat(c, {"e0"});
  chat.add(scored_prompt_then_token(), chunks);
  const json cr = json::parse(chat.response());
  EXPECT_EQ(cr["prompt_logprobs"], expected);
  EXPECT_FALSE(cr["choices"][0].contains("prompt_logprobs"));

  o.stream = true;
  openai_call streamed(o, {"e0"});
  chunks.clear();
  streamed.add(scored_prompt_then_token(), chunks);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(json::parse(chunks[0])["choices"][0]["prompt_logprobs"], expected);
}

}  // namespace
}  // namespace actorllm::api

// A chat choice's text through chat_output: reasoning split off, tool calls parsed or forced,
// and the streamed deltas folding, for every cut of the text, into the whole message.
#include "api/chat_output.hpp"

#include <gtest/gtest.h>

namespace actorllm::api {
namespace {

using nlohmann::json;

chat_output_options options(tool_mode mode, std::string parser = "hermes",
                            std::string reasoning = "") {
  chat_output_options o;
  o.tools.mode = mode;
  o.tools.names = {"get_weather", "noop"};
  o.tools.forced_name = "get_weather";
  o.tool_call_parser = std::move(parser);
  o.reasoning_parser = std::move(reasoning);
  return o;
}

/// What a client makes of streamed deltas: content and reasoning appended, each call's id,
/// name and argument pieces gathered by index.
json fold(const std::vector<json>& deltas) {
  json message = {{"content", ""}, {"reasoning_content", ""}, {"tool_calls", json::array()}};
  for (const json& d : deltas) {
    if (d.contains("content"))
      message["content"] = message["content"].get<std::string>() + d["content"].get<std::string>();
    if (d.contains("reasoning_content"))
      message["reasoning_content"] = message["reasoning_content"].get<std::string>() +
                                     d["reasoning_content"].get<std::string>();
    for (const json& call : d.value("tool_calls", json::array())) {
      const std::size_t i = call["index"];
      json& calls = message["tool_calls"];
      while (calls.size() <= i) calls.push_back({{"function", {{"arguments", ""}}}});
      if (call.contains("id")) calls[i]["id"] = call["id"];
      if (call["function"].contains("name"))
        calls[i]["function"]["name"] = call["function"]["name"];
      calls[i]["function"]["arguments"] = calls[i]["function"]["arguments"].get<std::string>() +
                                          call["function"].value("arguments", "");
    }
  }
  return message;
}

/// The message as whole() gives it, in fold()'s shape (ids left out: each run draws its own).
json normalized(json message) {
  json out = {
      {"content", message["content"].is_null() ? "" : message["content"]},
      {"reasoning_content",
       message.value("reasoning_content", json()).is_null() ? "" : message["reasoning_content"]},
      {"tool_calls", json::array()}};
  for (const json& call : message["tool_calls"])
    out["tool_calls"].push_back(
        {{"function",
          {{"arguments", call["function"]["arguments"]}, {"name", call["function"]["name"]}}}});
  return out;
}

json without_ids(json folded) {
  for (json& call : folded["tool_calls"]) call.erase("id");
  return folded;
}

/// Feeds `text` cut at `cuts`; returns the deltas and leaves the processor for message().
std::vector<json> stream(chat_output& out, const std::string& text, std::vector<std::size_t> cuts) {
  std::vector<json> deltas;
  std::size_t at = 0;
  cuts.push_back(text.size());
  for (std::size_t i = 0; i < cuts.size(); ++i) {
    const std::size_t end = std::max(at, std::min(cuts[i], text.size()));
    json d = out.feed(std::string_view(text).substr(at, end - at), i + 1 == cuts.size());
    if (!d.is_null()) deltas.push_back(std::move(d));
    at = end;
  }
  return deltas;
}

void expect_every_cut_agrees(const chat_output_options& o, const std::string& text) {
  chat_output whole(o);
  stream(whole, text, {});
  const json want = normalized(whole.message());
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    chat_output streamed(o);
    const auto deltas = stream(streamed, text, {cut});
    EXPECT_EQ(without_ids(fold(deltas)), want) << "cut at " << cut;
    EXPECT_EQ(normalized(streamed.message()), want) << "cut at " << cut;
  }
}

TEST(chat_output, hermes_calls_become_tool_calls_and_finish_reason_tool_calls) {
  const std::string text =
      "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\"}}\n</tool_call>";
  chat_output out(options(tool_mode::parse));
  stream(out, text, {5, 20, 40});
  const json m = out.message();
  EXPECT_EQ(m["content"], "Let me check.");
  ASSERT_EQ(m["tool_calls"].size(), 1u);
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(m["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"city", "Paris"}}));
  EXPECT_TRUE(m["tool_calls"][0]["id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(out.finish_reason(finish_reason::stop), "tool_calls");
  EXPECT_EQ(out.finish_reason(finish_reason::length), "length");
  expect_every_cut_agrees(options(tool_mode::parse), text);
}

TEST(chat_output, without_parallel_tool_calls_only_the_first_parsed_call_is_sent) {
  const std::string text =
      "<tool_call>{\"name\": \"noop\", \"arguments\": {}}</tool_call>\n"
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>";
  chat_output both(options(tool_mode::parse));
  stream(both, text, {});
  EXPECT_EQ(both.message()["tool_calls"].size(), 2u);
  auto one = options(tool_mode::parse);
  one.tools.parallel = false;
  expect_every_cut_agrees(one, text);
  chat_output single(one);
  stream(single, text, {30});
  ASSERT_EQ(single.message()["tool_calls"].size(), 1u);
  EXPECT_EQ(single.message()["tool_calls"][0]["function"]["name"], "noop");
}

TEST(chat_output, reasoning_is_split_before_the_tools_see_the_text) {
  const std::string text =
      "<think>The user wants weather.</think>Checking.<tool_call>{\"name\": \"noop\", "
      "\"arguments\": {}}</tool_call>";
  const auto o = options(tool_mode::parse, "hermes", "qwen3");
  chat_output out(o);
  stream(out, text, {3, 9});
  const json m = out.message();
  EXPECT_EQ(m["reasoning_content"], "The user wants weather.");
  EXPECT_EQ(m["reasoning"], "The user wants weather.");
  EXPECT_EQ(m["content"], "Checking.");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "noop");
  expect_every_cut_agrees(o, text);

  // Reasoning alone, no tools: content passes through after </think>.
  chat_output plain(options(tool_mode::none, "", "deepseek_r1"));
  stream(plain, "thinking...</think>The answer is 4.", {4});
  EXPECT_EQ(plain.message()["reasoning_content"], "thinking...");
  EXPECT_EQ(plain.message()["content"], "The answer is 4.");
  EXPECT_EQ(plain.finish_reason(finish_reason::stop), "stop");
}

TEST(chat_output, a_named_function_streams_its_arguments_as_they_come) {
  const std::string args = R"({"city": "Oslo", "zone": "CET"})";
  chat_output out(options(tool_mode::forced_named));
  const auto deltas = stream(out, args, {1, 10});
  ASSERT_EQ(deltas.size(), 3u);
  EXPECT_EQ(deltas[0]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(without_ids(fold(deltas))["tool_calls"][0]["function"]["arguments"], args);
  EXPECT_EQ(out.message()["content"], nullptr);
  // OpenAI answers "stop" for a function the client named.
  EXPECT_EQ(out.finish_reason(finish_reason::stop), "stop");
  expect_every_cut_agrees(options(tool_mode::forced_named), args);
}

// "required" streams like the parsers: each call once its name is known, then its arguments
// in pieces as the model wrote them (not all at the end), numbers no double holds included.
TEST(chat_output, required_streams_the_array_of_calls_as_it_comes) {
  const std::string text =
      R"([{"name": "get_weather", "parameters": {"city": "Rome"}}, {"name": "noop", "parameters": {}}])";
  chat_output out(options(tool_mode::forced_required));
  const auto deltas = stream(out, text, {40});
  ASSERT_GE(deltas.size(), 2u);
  EXPECT_EQ(deltas.front()["tool_calls"][0]["function"]["name"], "get_weather")
      << "the first call waited for the end: " << deltas.front().dump();
  const json m = out.message();
  ASSERT_EQ(m["tool_calls"].size(), 2u);
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], R"({"city": "Rome"})");
  EXPECT_EQ(m["tool_calls"][1]["function"]["name"], "noop");
  EXPECT_NE(m["tool_calls"][0]["id"], m["tool_calls"][1]["id"]);
  EXPECT_EQ(out.finish_reason(finish_reason::stop), "tool_calls");
  expect_every_cut_agrees(options(tool_mode::forced_required), text);

  auto one = options(tool_mode::forced_required);
  one.tools.parallel = false;
  chat_output single(one);
  stream(single, text, {});
  EXPECT_EQ(single.message()["tool_calls"].size(), 1u);

  // Cut short by max_tokens before a call began: not an array of calls, so content.
  chat_output cut(options(tool_mode::forced_required));
  stream(cut, R"([{"name": "get_we)", {});
  EXPECT_EQ(cut.message()["content"], R"([{"name": "get_we)");
  EXPECT_TRUE(cut.message()["tool_calls"].empty());

  // A number no double can hold stays the text the model wrote.
  chat_output huge(options(tool_mode::forced_required));
  stream(huge, R"([{"name": "get_weather", "parameters": {"city": "Rome", "n": 53E26305909}}])",
         {});
  ASSERT_EQ(huge.message()["tool_calls"].size(), 1u);
  EXPECT_EQ(huge.message()["tool_calls"][0]["function"]["arguments"],
            R"({"city": "Rome", "n": 53E26305909})");
  const json content = huge.message()["content"];
  EXPECT_TRUE(content.is_null() || content == "") << content;
}

TEST(chat_output, without_tools_or_reasoning_the_text_is_content) {
  chat_output out(options(tool_mode::none));
  const auto deltas = stream(out, "<tool_call>not parsed</tool_call>", {4});
  EXPECT_EQ(fold(deltas)["content"], "<tool_call>not parsed</tool_call>");
  EXPECT_EQ(out.message()["tool_calls"], json::array());
}

}  // namespace
}  // namespace actorllm::api

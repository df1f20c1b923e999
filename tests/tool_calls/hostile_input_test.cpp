// Hostile and random output: bounded memory held back, no quadratic time, and the streaming
// result equal to the whole-text one for random texts built from the formats' own pieces.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>

#include "tests/tool_calls/stream_check.hpp"
#include "tool_calls/forced_calls_parser.hpp"
#include "tool_calls/registry.hpp"

namespace actorllm::tool_calls {
namespace {

using testing::parse_text;

testing::parser_factory by_name(std::string_view name, parser_limits limits = {}) {
  tool_parser_options options;
  options.id_seed = 42;
  options.limits = limits;
  return [name, options] { return make_tool_call_parser(name, options); };
}

// The longest run of bytes a parser held back at once while fed one byte at a time.
std::size_t max_held_back(const testing::parser_factory& make, std::string_view text) {
  auto parser = make();
  std::size_t fed = 0, sent = 0, max_held = 0;
  auto count = [&](const std::vector<stream_event>& events) {
    for (const stream_event& e : events) {
      sent += e.text.size();
      if (e.what == stream_event::kind::call_start) sent = fed;  // the call took what was held
    }
  };
  for (char c : text) {
    ++fed;
    count(parser->feed(std::string_view(&c, 1)));
    max_held = std::max(max_held, fed - std::min(sent, fed));
  }
  return max_held;
}

TEST(hostile_input, text_held_back_before_a_call_is_bounded) {
  const parser_limits limits{.max_pending_bytes = 1000, .max_depth = 64};
  const std::string big_value(5000, 'x');
  // A call object whose name never comes, and arguments before the name, for each format.
  const std::vector<std::pair<std::string_view, std::string>> cases = {
      {"hermes", "<tool_call>{\"arguments\": {\"a\": \"" + big_value + "\"}, \"name\": \"f\"}"},
      {"hermes", "<tool_call>" + std::string(5000, ' ')},
      {"llama3_json", "{\"other\": \"" + big_value + "\"}"},
      {"llama3_json", std::string(5000, '\n')},
      {"mistral", "[TOOL_CALLS]" + big_value},
      {"mistral", "[TOOL_CALLS][{\"name\": \"" + big_value + "\"}]"},
      {"pythonic", "[" + big_value + "(a=1)]"},
      {"pythonic", std::string(5000, ' ') + "[f(a=1)]"},
  };
  for (const auto& [name, text] : cases) {
    const auto make = by_name(name, limits);
    EXPECT_LE(max_held_back(make, text), limits.max_pending_bytes + 1) << name;
    const parsed_output out = parse_text(make, text);
    EXPECT_TRUE(out.calls.empty()) << name;
    EXPECT_EQ(out.content, text) << name;
  }
}

TEST(hostile_input, long_arguments_stream_instead_of_being_held) {
  const parser_limits limits{.max_pending_bytes = 1000, .max_depth = 64};
  const std::string big(5000, 'z');
  const std::vector<std::pair<std::string_view, std::string>> cases = {
      {"hermes",
       "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"" + big + "\"}}</tool_call>"},
      {"llama3_json", "{\"name\": \"f\", \"parameters\": {\"a\": \"" + big + "\"}}"},
      {"mistral", "[TOOL_CALLS]f[ARGS]{\"a\": \"" + big + "\"}"},
      {"pythonic", "[f(a='" + big + "')]"},
  };
  for (const auto& [name, text] : cases) {
    const auto make = by_name(name, limits);
    EXPECT_LE(max_held_back(make, text), 64u) << name;
    const parsed_output out = parse_text(make, text);
    ASSERT_EQ(out.calls.size(), 1u) << name;
    EXPECT_EQ(out.calls[0].arguments, "{\"a\": \"" + big + "\"}") << name;
  }
}

TEST(hostile_input, deep_nesting_is_malformed) {
  const std::string deep = std::string(100, '[') + std::string(100, ']');
  const parser_limits limits{.max_pending_bytes = 64 * 1024, .max_depth = 32};
  // Nested past the bound inside the arguments: the call stays, the rest is content.
  const std::string hermes =
      "<tool_call>{\"name\": \"f\", \"arguments\": " + deep + "}</tool_call>";
  const parsed_output h = parse_text(by_name("hermes", limits), hermes);
  ASSERT_EQ(h.calls.size(), 1u);
  EXPECT_EQ(h.calls[0].arguments.size(), 31u);  // 31 '[' fit under the call object
  EXPECT_EQ(h.calls[0].arguments + h.content, hermes.substr(hermes.find('[')));
  const std::string python = "[f(a=" + deep + ")]";
  const parsed_output p = parse_text(by_name("pythonic", limits), python);
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"a\": " + std::string(32, '['));
  EXPECT_EQ(p.content, python.substr(5 + 32));
  // Within the bound it is fine.
  const std::string ok = "<tool_call>{\"name\": \"f\", \"arguments\": " + std::string(20, '[') +
                         std::string(20, ']') + "}</tool_call>";
  EXPECT_EQ(parse_text(by_name("hermes", limits), ok).calls[0].arguments.size(), 40u);
}

TEST(hostile_input, long_outputs_take_linear_time) {
  // 1 MB each of text full of marker prefixes, of whitespace, and of one huge call, fed in
  // 3-byte deltas: this runs in about a second (8 under ASan), where work quadratic in the
  // text or in what is held back would take hours and hit ctest's timeout. No clock is read
  // here: speed belongs to benchmarks, and a loaded machine must not fail a test.
  std::string prefixes;
  while (prefixes.size() < 1'000'000) prefixes += "<tool_cal [TOOL_CALL <|python_ta ";
  const std::string spaces(1'000'000, ' ');
  const std::string huge_call = "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"" +
                                std::string(1'000'000, 'y') + "\"}}</tool_call>";
  for (std::string_view name : tool_call_parser_names()) {
    for (const std::string* text :
         std::vector<const std::string*>{&prefixes, &spaces, &huge_call}) {
      // A bound past the text's size, so that held-back text grows to megabytes.
      tool_parser_options options;
      options.limits.max_pending_bytes = 16 << 20;
      auto parser = make_tool_call_parser(name, options);
      std::size_t out = 0;
      for (std::size_t at = 0; at < text->size(); at += 3) {
        for (const stream_event& e : parser->feed(std::string_view(*text).substr(at, 3))) {
          out += e.text.size();
        }
      }
      for (const stream_event& e : parser->finish()) out += e.text.size();
      EXPECT_GT(out, 0u);
    }
  }
}

// Random texts from the formats' pieces: every chunking gives the whole-text result.
TEST(hostile_input, random_texts_stream_as_they_parse_whole) {
  const std::vector<std::string_view> pieces = {"<tool_call>",
                                                "</tool_call>",
                                                "<tool_",
                                                "{",
                                                "}",
                                                "[",
                                                "]",
                                                "\"name\"",
                                                "\"arguments\"",
                                                "\"parameters\"",
                                                ":",
                                                ",",
                                                " ",
                                                "\n",
                                                "\"f\"",
                                                "\"x\\\"y\"",
                                                "1",
                                                "-2.5e3",
                                                "true",
                                                "null",
                                                "[TOOL_CALLS]",
                                                "[ARGS]",
                                                "[CALL_ID]",
                                                "abc",
                                                "<|python_tag|>",
                                                ";",
                                                "(",
                                                ")",
                                                "=",
                                                "'s'",
                                                "None",
                                                "<|python_start|>",
                                                "<|python_end|>",
                                                "get_weather",
                                                "\\",
                                                "\xc3\xa9",
                                                "</"};
  std::mt19937 rng(1234);
  std::vector<testing::parser_factory> factories;
  for (std::string_view name : tool_call_parser_names()) factories.push_back(by_name(name));
  tool_parser_options seeded;
  seeded.id_seed = 42;
  factories.push_back([seeded] { return std::make_unique<required_calls_parser>(seeded); });
  factories.push_back([seeded] { return std::make_unique<named_call_parser>("f", seeded); });
  for (const testing::parser_factory& make : factories) {
    for (int round = 0; round < 150; ++round) {
      std::string text;
      const int n = std::uniform_int_distribution<int>(1, 25)(rng);
      for (int i = 0; i < n; ++i) {
        text += pieces[std::uniform_int_distribution<std::size_t>(0, pieces.size() - 1)(rng)];
      }
      testing::expect_chunking_invariant(make, text, 3);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

// Well-formed random calls: parsed back exactly, whatever the chunking.
TEST(hostile_input, random_well_formed_calls_round_trip) {
  std::mt19937 rng(99);
  const std::vector<std::string> values = {"1",    "\"a b\"",        "[1, 2]", "{\"k\": null}",
                                           "true", "\"\\u00e9\\n\"", "-0.5"};
  for (int round = 0; round < 60; ++round) {
    std::vector<tool_call> calls;
    const int num_calls = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int i = 0; i < num_calls; ++i) {
      std::string args = "{";
      const int num_args = std::uniform_int_distribution<int>(0, 3)(rng);
      for (int a = 0; a < num_args; ++a) {
        if (a > 0) args += ", ";
        args += "\"p" + std::to_string(a) + "\": " +
                values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng)];
      }
      args += "}";
      calls.push_back({.id = "", .name = "fn_" + std::to_string(i), .arguments = args});
    }
    std::string hermes = "Plan.\n", llama = "<|python_tag|>", mistral = "[TOOL_CALLS][";
    for (std::size_t i = 0; i < calls.size(); ++i) {
      const std::string object =
          "{\"name\": \"" + calls[i].name + "\", \"arguments\": " + calls[i].arguments + "}";
      hermes += "<tool_call>\n" + object + "\n</tool_call>\n";
      llama += (i > 0 ? "; " : "") + object;
      mistral += (i > 0 ? ", " : "") + object;
    }
    mistral += "]";
    for (const auto& [name, text] : {std::pair<std::string_view, std::string>{"hermes", hermes},
                                     {"llama3_json", llama},
                                     {"mistral", mistral}}) {
      const parsed_output out = parse_text(by_name(name), text);
      ASSERT_EQ(out.calls.size(), calls.size()) << text;
      for (std::size_t i = 0; i < calls.size(); ++i) {
        EXPECT_EQ(out.calls[i].name, calls[i].name);
        EXPECT_EQ(out.calls[i].arguments, calls[i].arguments);
        EXPECT_EQ(nlohmann::json::parse(out.calls[i].arguments).dump(),
                  nlohmann::json::parse(calls[i].arguments).dump());
      }
      EXPECT_EQ(out.content, name == "hermes" ? "Plan.\n" : "");
      testing::expect_chunking_invariant(by_name(name), text, 2);
    }
  }
}

}  // namespace
}  // namespace actorllm::tool_calls

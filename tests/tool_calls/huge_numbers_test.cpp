// Numbers no double can hold (53E26305909, a 400-digit integer) in a call's arguments: the
// call comes back, its arguments text keeping the number exactly as the model wrote it.
#include <gtest/gtest.h>

#include "tests/tool_calls/stream_check.hpp"
#include "tool_calls/forced_calls_parser.hpp"
#include "tool_calls/hermes_parser.hpp"
#include "tool_calls/llama3_json_parser.hpp"
#include "tool_calls/mistral_parser.hpp"

namespace actorllm::tool_calls {
namespace {

using testing::expect_chunking_invariant;
using testing::parse_text;

template <class parser>
testing::parser_factory make() {
  return [] {
    tool_parser_options options;
    options.id_seed = 5;
    return std::make_unique<parser>(options);
  };
}

const std::string kArguments =
    "{\"x\": 53E26305909, \"y\": [-1e-99999999999, " + std::string(400, '9') + ".5e+1]}";

void expect_one_call(const testing::parser_factory& f, const std::string& text,
                     const std::string& name) {
  const parsed_output out = parse_text(f, text);
  EXPECT_EQ(out.content, "") << text;
  ASSERT_EQ(out.calls.size(), 1u) << text;
  EXPECT_EQ(out.calls[0].name, name);
  EXPECT_EQ(out.calls[0].arguments, kArguments);
  expect_chunking_invariant(f, text, 3);
}

TEST(huge_numbers, kept_as_written_by_every_json_format) {
  expect_one_call(make<hermes_parser>(),
                  "<tool_call>\n{\"name\": \"f\", \"arguments\": " + kArguments + "}\n</tool_call>",
                  "f");
  expect_one_call(make<llama3_json_parser>(),
                  "{\"name\": \"f\", \"parameters\": " + kArguments + "}", "f");
  expect_one_call(make<mistral_parser>(),
                  "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": " + kArguments + "}]", "f");
  expect_one_call(make<required_calls_parser>(),
                  "[{\"name\": \"f\", \"parameters\": " + kArguments + "}]", "f");
  const auto named = [] {
    tool_parser_options options;
    options.id_seed = 5;
    return std::make_unique<named_call_parser>("f", options);
  };
  expect_one_call(named, kArguments, "f");
}

}  // namespace
}  // namespace actorllm::tool_calls

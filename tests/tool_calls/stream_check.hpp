#pragma once
// Streaming equivalence: whatever the chunking, the concatenated events of a parser equal its
// whole-text result (ids included: parsers made by the same factory share a seed).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tool_calls/tool_call_parser.hpp"

namespace actorllm::tool_calls::testing {

using parser_factory = std::function<std::unique_ptr<tool_call_parser>()>;

inline parsed_output parse_chunks(const parser_factory& make,
                                  const std::vector<std::string_view>& chunks) {
  auto parser = make();
  parsed_output result;
  for (std::string_view chunk : chunks) apply_events(result, parser->feed(chunk));
  apply_events(result, parser->finish());
  return result;
}

inline parsed_output parse_text(const parser_factory& make, std::string_view text) {
  auto parser = make();
  return parse_whole(*parser, text);
}

// Checks every split into two pieces, every byte fed alone, and `num_random` random chunkings.
inline void expect_chunking_invariant(const parser_factory& make, std::string_view text,
                                      int num_random = 20) {
  const parsed_output whole = parse_text(make, text);
  for (std::size_t cut = 0; cut <= text.size(); ++cut) {
    ASSERT_EQ(parse_chunks(make, {text.substr(0, cut), text.substr(cut)}), whole)
        << "split at " << cut << " of: " << text;
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  ASSERT_EQ(parse_chunks(make, bytes), whole) << "byte by byte: " << text;
  std::mt19937 rng(static_cast<unsigned>(text.size()));
  for (int round = 0; round < num_random; ++round) {
    std::vector<std::string_view> chunks;
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 7)(rng);
      chunks.push_back(text.substr(at, n));
      at += std::min(n, text.size() - at);
    }
    ASSERT_EQ(parse_chunks(make, chunks), whole) << "random chunking of: " << text;
  }
}

}  // namespace actorllm::tool_calls::testing

namespace actorllm::tool_calls {
inline void PrintTo(const parsed_output& p, std::ostream* os) {
  *os << "{content: \"" << p.content << "\", calls: [";
  for (const tool_call& c : p.calls) {
    *os << "{id: " << c.id << ", name: " << c.name << ", arguments: " << c.arguments << "} ";
  }
  *os << "]}";
}
}  // namespace actorllm::tool_calls

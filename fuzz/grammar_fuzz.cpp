// The grammar compilers (GBNF, regex, JSON Schema, strict and not) on arbitrary text, then a
// matcher walked through what compiled. Input: byte 0 picks the source kind, byte 1 seeds the
// walk, the rest is the source. A compile either succeeds or throws grammar_error (a user's
// mistake, with a message); the automaton's own limits bound the work. Along the walk every
// token the mask allows must be accepted, every token it forbids refused, and a rollback
// must give back the mask it had.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_support.hpp"
#include "grammar/grammar.hpp"
#include "grammar/grammar_error.hpp"
#include "grammar/matcher.hpp"

namespace {

using namespace actorllm::grammar;

/// Every single byte, some multi-byte pieces a JSON or regex output is made of, an EOS (id 0)
/// and a special token: small enough that a whole-vocabulary check per step stays cheap.
std::shared_ptr<const vocabulary> fuzz_vocabulary() {
  static const auto vocab = [] {
    std::vector<std::string> bytes{""};
    std::vector<bool> special{true};
    for (int b = 0; b < 256; ++b) {
      bytes.emplace_back(1, static_cast<char>(b));
      special.push_back(false);
    }
    for (const char* piece : {"\": \"", "\":", "{\"", "\"}", "true", "false", "null", "  ", "\n ",
                              "ab", "abc", "12", "-0", "e+", "\xC3\xA9", "\xE2\x82\xAC", "\\u00"}) {
      bytes.emplace_back(piece);
      special.push_back(false);
    }
    bytes.emplace_back("<special>");
    special.push_back(true);
    return vocabulary::from_bytes(bytes, special, {0});
  }();
  return vocab;
}

bool allowed(const std::vector<uint32_t>& mask, int32_t id) {
  return (mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view source(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto vocab = fuzz_vocabulary();
  std::shared_ptr<const compiled_grammar> grammar;
  try {
    switch (data[0] % 4) {
      case 0:
        grammar = compile_gbnf(source, vocab);
        break;
      case 1:
        grammar = compile_regex(source, vocab);
        break;
      default:
        grammar =
            compile_json_schema(source, json_schema_options{.strict = data[0] % 4 == 2}, vocab);
        break;
    }
  } catch (const grammar_error&) {
    return 0;  // refused, with the parser's message
  }

  matcher m(grammar);
  std::vector<uint32_t> mask(m.mask_words()), before(m.mask_words());
  uint32_t walk = data[1];
  const auto num_ids = static_cast<int32_t>(vocab->mask_size());
  for (int step = 0; step < 24 && !m.is_terminated(); ++step) {
    m.fill_mask(mask);
    std::vector<int32_t> allowed_ids;
    for (int32_t id = 0; id < num_ids; ++id) {
      matcher probe = m;
      FUZZ_CHECK(probe.accept_token(id) == allowed(mask, id));
      if (allowed(mask, id)) allowed_ids.push_back(id);
    }
    if (allowed_ids.empty()) break;  // a dead end: the grammar can neither go on nor end
    walk = walk * 1103515245u + 12345u;
    const int32_t next = allowed_ids[(walk >> 8) % allowed_ids.size()];
    before = mask;
    FUZZ_CHECK(m.accept_token(next));
    FUZZ_CHECK(m.rollback(1));
    m.fill_mask(mask);
    FUZZ_CHECK(mask == before);
    FUZZ_CHECK(m.accept_token(next));
  }
  return 0;
}

// Random texts the grammar of a schema allows, checked by an independent validator:
// Python's jsonschema (with its format checker), when python3 can import it. Each sample is
// a random walk over single bytes that ends where the grammar may end.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "tests/grammar/grammar_test_util.hpp"

namespace actorllm::grammar {
namespace {

// A random text of `g` over the byte vocabulary, or "" when the walk runs too long.
std::string sample(const std::shared_ptr<const compiled_grammar>& g, std::mt19937& rng) {
  matcher m(g);
  std::string text;
  std::vector<uint32_t> mask(m.mask_words());
  for (int step = 0; step < 4000; ++step) {
    m.fill_mask(mask);
    std::vector<int32_t> allowed;
    for (int32_t id = 0; id < 257; ++id)
      if ((mask[id / 32] >> (id % 32)) & 1) allowed.push_back(id);
    if (allowed.empty()) return "";
    const bool can_stop = (mask[256 / 32] >> (256 % 32)) & 1;
    if (can_stop && rng() % 2) return text;
    // Past a few hundred bytes, close strings, arrays and objects when allowed.
    int32_t pick = allowed[rng() % allowed.size()];
    if (text.size() > 200 && rng() % 2) {
      for (int32_t closing : {'"', ']', '}'})
        if (std::count(allowed.begin(), allowed.end(), closing)) pick = closing;
    }
    if (pick == 256) return text;
    EXPECT_TRUE(m.accept_token(pick));
    text.push_back(static_cast<char>(pick));
  }
  return "";
}

const char* const schemas[] = {
    R"({"type": "object", "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 130},
        "when": {"type": "string", "format": "date-time"}, "day": {"type": "string", "format": "date"},
        "mail": {"type": "string", "format": "email"}, "id": {"type": "string", "format": "uuid"},
        "ip": {"type": "string", "format": "ipv4"}, "t": {"type": "string", "format": "time"}},
        "required": ["name", "age", "when", "day", "mail", "id", "ip", "t"]})",
    R"({"type": "array", "items": {"anyOf": [{"type": "integer", "exclusiveMinimum": -5, "maximum": 5},
        {"enum": ["x", null, true]}, {"type": "string", "pattern": "^[a-c]{2,3}\"?$"}]},
        "minItems": 2, "maxItems": 5})",
    R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type": "number"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["v"], "additionalProperties": false}}, "$ref": "#/$defs/node"})",
    R"({"type": "object", "properties": {"kind": {"const": "k"}}, "required": ["kind"],
        "additionalProperties": {"type": ["string", "null", "boolean"]}})",
    R"({"oneOf": [{"type": "object", "properties": {"t": {"const": "a"}, "x": {"type": "integer"}},
        "required": ["t", "x"]}, {"type": "object", "properties": {"t": {"const": "b"},
        "y": {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "string"}]}},
        "required": ["t"]}]})",
    R"({"allOf": [{"type": "object", "properties": {"a": {"type": "integer", "minimum": 2}}, "required": ["a"]},
        {"properties": {"a": {"maximum": 9}, "b": {"type": "string", "maxLength": 2}}}]})",
    R"({})",
};

/// Debian's python3, which scripts/setup.sh gives python3-jsonschema; ACTORLLM_PYTHON wins.
std::string python() {
  const char* env = std::getenv("ACTORLLM_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

TEST(schema_samples, python_jsonschema_accepts_every_sample) {
  // A missing validator is a failure, not a skip: the check must run wherever CI runs.
  ASSERT_EQ(std::system((python() + " -c 'import jsonschema' 2>/dev/null").c_str()), 0)
      << python() << " cannot import jsonschema (./scripts/setup.sh installs python3-jsonschema)";
  const auto dir =
      std::filesystem::temp_directory_path() / ("grammar_samples_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::mt19937 rng(11);
  std::ofstream cases(dir / "cases.jsonl");
  size_t total = 0;
  for (const char* s : schemas) {
    for (bool strict : {true, false}) {
      auto g = testing::schema(s, strict);
      for (int i = 0; i < 40; ++i) {
        std::string text = sample(g, rng);
        if (text.empty()) continue;
        cases << nlohmann::json{{"schema", nlohmann::json::parse(s)}, {"text", text}}.dump()
              << "\n";
        ++total;
      }
    }
  }
  cases.close();
  EXPECT_GT(total, 300u);
  std::ofstream script(dir / "check.py");
  script << R"(import json, sys, jsonschema
bad = 0
for line in open(sys.argv[1]):
    case = json.loads(line)
    try:
        value = json.loads(case["text"])
        jsonschema.Draft202012Validator(case["schema"], format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER).validate(value)
    except Exception as e:
        bad += 1
        print("INVALID:", repr(case["text"]), "against", json.dumps(case["schema"])[:200], "--", str(e)[:200])
sys.exit(1 if bad else 0)
)";
  script.close();
  const std::string command =
      python() + " " + (dir / "check.py").string() + " " + (dir / "cases.jsonl").string();
  EXPECT_EQ(std::system(command.c_str()), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace actorllm::grammar

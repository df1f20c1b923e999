// Structured output: the cost of an allowed-token mask per generated token, and of
// compiling a large JSON schema.
//
// For the Llama-2 (32k), Llama-3 (128k) and Qwen3 (152k) vocabularies: random walks through
// a JSON-schema grammar (strict, and with optional whitespace) and through any JSON object
// (recursive: stack-dependent tokens), picking a random allowed token at each step. "warm"
// times fill_mask after every state's token cache is computed (compiled_grammar::precompute,
// what a server does once per schema, or what repeated requests leave behind); "cold" is the
// first pass, where a state's first visit computes its cache. Then the compile time of a
// large schema (200 properties, nested objects, enums, arrays, formats).
//
// usage: grammar_bench [SHARED_DIR]   (default: $ACTORLLM_SHARED_DIR, else ../shared)
// Prints one JSON object, then a table.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_util.hpp"
#include "grammar/automaton_builder.hpp"
#include "grammar/grammar.hpp"

namespace {

namespace fs = std::filesystem;
using namespace actorllm;
using namespace actorllm::grammar;
using bench::now_seconds;

const char* const person_schema = R"({
  "type": "object",
  "properties": {
    "name": {"type": "string", "maxLength": 40},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "email": {"type": "string", "format": "email"},
    "address": {"type": "object", "properties": {
        "street": {"type": "string"}, "city": {"type": "string"},
        "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
      "required": ["street", "city"]},
    "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    "role": {"enum": ["admin", "user", "guest"]},
    "score": {"type": "number"},
    "active": {"type": "boolean"},
    "joined": {"type": "string", "format": "date"}
  },
  "required": ["name", "age", "role"]
})";

struct percentiles {
  double p50 = 0, p99 = 0, max = 0;
  size_t n = 0;
};

percentiles summarize(std::vector<double> us) {
  percentiles p;
  if (us.empty()) return p;
  std::sort(us.begin(), us.end());
  p.n = us.size();
  p.p50 = us[us.size() / 2];
  p.p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  p.max = us.back();
  return p;
}

// Mask times (µs) over `steps` tokens of random walks of at most 48 tokens each.
std::vector<double> walk(const std::shared_ptr<const compiled_grammar>& g, size_t steps,
                         uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<double> us;
  std::vector<uint32_t> mask(g->vocab().mask_words());
  std::vector<int32_t> allowed;
  while (us.size() < steps) {
    matcher m(g);
    for (int t = 0; t < 48 && us.size() < steps; ++t) {
      const double t0 = now_seconds();
      m.fill_mask(mask);
      us.push_back((now_seconds() - t0) * 1e6);
      allowed.clear();
      for (size_t w = 0; w < mask.size(); ++w)
        for (uint32_t bits = mask[w]; bits; bits &= bits - 1)
          allowed.push_back(static_cast<int32_t>(w * 32 + __builtin_ctz(bits)));
      if (allowed.empty() || m.must_end()) break;
      int32_t pick = allowed[rng() % allowed.size()];
      if (!g->vocab().is_text(pick)) break;  // EOS: start another walk
      m.accept_token(pick);
    }
  }
  return us;
}

struct mask_result {
  std::string tokenizer, grammar;
  size_t vocab = 0, states = 0;
  double vocab_s = 0, compile_ms = 0, precompute_ms = 0, cache_mb = 0;
  percentiles cold, warm;
};

mask_result measure(const std::string& tok_name, const std::shared_ptr<const vocabulary>& v,
                    const std::string& grammar_name, double vocab_s,
                    const std::function<std::shared_ptr<const compiled_grammar>()>& compile) {
  mask_result r;
  r.tokenizer = tok_name;
  r.grammar = grammar_name;
  r.vocab = v->mask_size();
  r.vocab_s = vocab_s;
  double t0 = now_seconds();
  auto g = compile();
  r.compile_ms = (now_seconds() - t0) * 1e3;
  r.states = g->states().num_states();
  r.cold = summarize(walk(g, 300, 1));
  auto fresh = compile();
  t0 = now_seconds();
  fresh->precompute();
  r.precompute_ms = (now_seconds() - t0) * 1e3;
  walk(fresh, 200, 2);  // warm the CPU caches
  r.warm = summarize(walk(fresh, 3000, 3));
  r.cache_mb = fresh->statistics().cache_bytes / 1e6;
  return r;
}

// A schema of `n` properties of mixed kinds, a third of them nested objects.
nlohmann::ordered_json large_schema(int n) {
  nlohmann::ordered_json props = nlohmann::ordered_json::object();
  nlohmann::ordered_json required = nlohmann::ordered_json::array();
  for (int i = 0; i < n; ++i) {
    const std::string name = "field_" + std::to_string(i);
    nlohmann::ordered_json p;
    switch (i % 6) {
      case 0:
        p = {{"type", "string"}, {"maxLength", 64}};
        break;
      case 1:
        p = {{"type", "integer"}, {"minimum", -1000}, {"maximum", 1000000}};
        break;
      case 2:
        p = {{"enum", {"alpha", "beta", "gamma", "delta", std::to_string(i)}}};
        break;
      case 3:
        p = {{"type", "array"}, {"items", {{"type", "number"}}}, {"maxItems", 10}};
        break;
      case 4:
        p = {{"type", "string"}, {"format", i % 12 == 4 ? "date-time" : "uuid"}};
        break;
      default:
        p = {{"type", "object"},
             {"properties",
              {{"x", {{"type", "number"}}},
               {"y", {{"type", "boolean"}}},
               {"label", {{"type", "string"}, {"pattern", "^[a-z]+(-[a-z]+)*$"}}}}},
             {"required", {"x"}}};
    }
    props[name] = p;
    if (i % 3 == 0) required.push_back(name);
  }
  return {{"type", "object"}, {"properties", props}, {"required", required}};
}

}  // namespace

int main(int argc, char** argv) {
  fs::path shared = argc > 1 ? fs::path(argv[1])
                    : std::getenv("ACTORLLM_SHARED_DIR")
                        ? fs::path(std::getenv("ACTORLLM_SHARED_DIR"))
                        : fs::path("../shared");
  try {
    std::vector<mask_result> results;
    std::shared_ptr<const vocabulary> llama3;
    for (const char* name : {"llama2", "llama3", "qwen3"}) {
      auto tok = tokenizer::load(shared / "tokenizers" / name);
      double t0 = now_seconds();
      auto v = vocabulary::from_tokenizer(tok);
      const double vocab_s = now_seconds() - t0;
      if (std::string(name) == "llama3") llama3 = v;
      results.push_back(measure(name, v, "schema strict", vocab_s, [&] {
        return compile_json_schema(std::string_view(person_schema), {.strict = true}, v);
      }));
      results.push_back(measure(name, v, "schema", vocab_s, [&] {
        return compile_json_schema(std::string_view(person_schema), {}, v);
      }));
      results.push_back(
          measure(name, v, "json_object", vocab_s, [&] { return compile_json_object({}, v); }));
    }
    // Compile time of a large schema (best of 3), and its caches on Llama-3.
    const std::string large = large_schema(200).dump();
    double best_ir = 1e9, best_automaton = 1e9;
    size_t large_states = 0;
    for (int i = 0; i < 3; ++i) {
      double t0 = now_seconds();
      grammar_ir ir = json_schema_ir(std::string_view(large), {});
      double t1 = now_seconds();
      automaton a = build_automaton(ir);
      double t2 = now_seconds();
      best_ir = std::min(best_ir, t1 - t0);
      best_automaton = std::min(best_automaton, t2 - t1);
      large_states = a.num_states();
    }
    // Long tuples (prefixItems): each tail level is a rule of its own, so the compile grows with
    // the length, where one nested expression grew with its square (24,000 items: 44 s).
    nlohmann::json tuples = nlohmann::json::array();
    for (const int items : {1000, 4000, 24000}) {
      std::string tuple = R"({"type":"array","prefixItems":[)";
      for (int i = 0; i < items; ++i) tuple += std::string(i ? "," : "") + R"({"type":"integer"})";
      tuple += "]}";
      const double start = now_seconds();
      compile_json_schema(std::string_view(tuple), {}, llama3);
      tuples.push_back({{"prefix_items", items}, {"compile_ms", (now_seconds() - start) * 1e3}});
    }
    auto g = compile_json_schema(std::string_view(large), {}, llama3);
    double t0 = now_seconds();
    g->precompute();
    const double large_precompute = now_seconds() - t0;

    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : results)
      out.push_back(
          {{"tokenizer", r.tokenizer},
           {"grammar", r.grammar},
           {"vocab", r.vocab},
           {"vocabulary_index_s", r.vocab_s},
           {"compile_ms", r.compile_ms},
           {"states", r.states},
           {"precompute_ms", r.precompute_ms},
           {"cache_mb", r.cache_mb},
           {"warm_mask_us",
            {{"p50", r.warm.p50}, {"p99", r.warm.p99}, {"max", r.warm.max}, {"n", r.warm.n}}},
           {"cold_mask_us",
            {{"p50", r.cold.p50}, {"p99", r.cold.p99}, {"max", r.cold.max}, {"n", r.cold.n}}}});
    nlohmann::json compile = {{"properties", 200},
                              {"schema_bytes", large.size()},
                              {"schema_to_ir_ms", best_ir * 1e3},
                              {"automaton_ms", best_automaton * 1e3},
                              {"states", large_states},
                              {"precompute_llama3_ms", large_precompute * 1e3},
                              {"cache_llama3_mb", g->statistics().cache_bytes / 1e6}};
    std::printf("%s\n\n", nlohmann::json{{"benchmark", "grammar"},
                                         {"masks", out},
                                         {"large_schema", compile},
                                         {"long_tuples", tuples}}
                              .dump()
                              .c_str());
    std::printf("%-7s %-14s %7s %7s %9s %11s %9s %9s %9s %10s %10s\n", "vocab", "grammar", "size",
                "states", "compile", "precompute", "warm p50", "warm p99", "warm max", "cold p50",
                "cold p99");
    for (const auto& r : results)
      std::printf(
          "%-7s %-14s %7zu %7zu %6.2f ms %8.1f ms %6.1f us %6.1f us %6.1f us %7.1f us %7.1f us\n",
          r.tokenizer.c_str(), r.grammar.c_str(), r.vocab, r.states, r.compile_ms, r.precompute_ms,
          r.warm.p50, r.warm.p99, r.warm.max, r.cold.p50, r.cold.p99);
    std::printf(
        "\nlarge schema (200 properties, %zu bytes): schema to rules %.1f ms, automaton "
        "%.1f ms (%zu states); all token caches on Llama-3 %.0f ms, %.1f MB\n",
        large.size(), best_ir * 1e3, best_automaton * 1e3, large_states, large_precompute * 1e3,
        g->statistics().cache_bytes / 1e6);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "grammar_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

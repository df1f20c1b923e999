// Encode throughput (MB/s) of the Llama-3 (byte-level BPE) and Llama-2 (SentencePiece BPE)
// tokenizers on about 1 MB of text: the TinyStories golden text and llama.cpp's tokenizer
// test texts (code, whitespace runs, many scripts), repeated.
//
// usage: tokenizer_bench [SHARED_DIR]   (default: $ACTORLLM_SHARED_DIR, else ../shared)
// Prints one JSON object, then a table.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string make_corpus(const fs::path& shared, size_t target_bytes) {
  auto golden = nlohmann::json::parse(read_file(shared / "models/stories260K/golden_greedy.json"));
  std::string story = golden["output_text"].get<std::string>() + "\n\n";
  std::string mixed;
  for (const char* name : {"llama-bpe.inp", "qwen2.inp"}) {
    std::string inp = read_file(shared / "tokenizers/reference" / name);
    for (size_t pos = 0; (pos = inp.find("__ggml_vocab_test__", pos)) != std::string::npos;)
      inp.replace(pos, 19, "\n");
    mixed += inp;
  }
  std::string corpus;
  while (corpus.size() < target_bytes)
    corpus += (corpus.size() / story.size()) % 4 == 3 ? mixed : story;
  return corpus.substr(0, target_bytes);
}

struct result {
  std::string name;
  size_t bytes = 0;
  size_t tokens = 0;
  double cold_mb_s = 0;  // first encode: empty word cache
  double warm_mb_s = 0;  // best of the following runs
  double decode_mb_s = 0;
};

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

result run(const std::string& name, const fs::path& path, const std::string& text) {
  result r{name, text.size()};
  auto tok = actorllm::tokenizer::load(path);
  auto t0 = clock_type::now();
  auto ids = tok.encode(text, false);
  r.cold_mb_s = text.size() / 1e6 / seconds_since(t0);
  r.tokens = ids.size();
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {
    auto t = clock_type::now();
    auto again = tok.encode(text, false);
    best = std::min(best, seconds_since(t));
    if (again != ids) throw std::runtime_error(name + ": encode is not deterministic");
  }
  r.warm_mb_s = text.size() / 1e6 / best;
  auto t = clock_type::now();
  std::string back = tok.decode(ids, false);
  r.decode_mb_s = back.size() / 1e6 / seconds_since(t);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  fs::path shared = argc > 1 ? fs::path(argv[1])
                    : std::getenv("ACTORLLM_SHARED_DIR")
                        ? fs::path(std::getenv("ACTORLLM_SHARED_DIR"))
                        : fs::path("../shared");
  try {
    std::string text = make_corpus(shared, 1 << 20);
    std::vector<result> results = {run("llama3", shared / "tokenizers/llama3", text),
                                   run("llama2", shared / "tokenizers/llama2", text)};
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : results)
      out.push_back({{"tokenizer", r.name},
                     {"bytes", r.bytes},
                     {"tokens", r.tokens},
                     {"encode_cold_mb_s", r.cold_mb_s},
                     {"encode_warm_mb_s", r.warm_mb_s},
                     {"decode_mb_s", r.decode_mb_s}});
    std::printf("%s\n\n",
                nlohmann::json{{"benchmark", "tokenizer"}, {"results", out}}.dump().c_str());
    std::printf("%-10s %10s %10s %14s %14s %12s\n", "tokenizer", "bytes", "tokens", "encode cold",
                "encode warm", "decode");
    for (const auto& r : results)
      std::printf("%-10s %10zu %10zu %9.1f MB/s %9.1f MB/s %7.1f MB/s\n", r.name.c_str(), r.bytes,
                  r.tokens, r.cold_mb_s, r.warm_mb_s, r.decode_mb_s);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

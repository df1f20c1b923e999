// serve_bench: load generator for an OpenAI-compatible server, after vLLM's benchmark_serving.
// Builds the workload, sends one test request, then sends every request (streaming) at the
// chosen rate or concurrency, and prints vLLM's result table and, with --result-json, JSON.
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "bench/serve_bench_client.hpp"
#include "bench/serve_bench_options.hpp"
#include "bench/serve_bench_workload.hpp"
#include "tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace actorllm::bench::serve;
using nlohmann::json;

namespace {

/// The name the server knows the model by: a model folder is served under its last part.
std::string served_name(const options& o) {
  if (!o.served_model_name.empty()) return o.served_model_name;
  const fs::path p(o.model);
  if (fs::is_directory(p)) return fs::canonical(p).filename().string();
  return o.model;
}

std::vector<sample_request> make_workload(const options& o, const actorllm::tokenizer& tok) {
  const encode_fn encode = [&](std::string_view text) { return tok.encode(text, false); };
  if (o.dataset_name == "sharegpt") {
    std::ifstream in(o.dataset_path);
    if (!in) throw std::runtime_error("cannot open " + o.dataset_path);
    sharegpt_options s;
    s.num_prompts = o.num_prompts;
    s.fixed_output_len = o.sharegpt_output_len;
    s.max_prompt_len = std::min(1024, o.max_model_len);
    s.max_total_len = o.max_model_len;
    s.seed = o.seed;
    return sharegpt_requests(json::parse(in), s, encode);
  }
  random_options r;
  r.num_prompts = o.num_prompts;
  r.input_len = o.random_input_len;
  r.output_len = o.random_output_len;
  r.range_ratio = o.random_range_ratio;
  r.vocab_size = static_cast<int>(tok.vocab_size());
  r.seed = o.seed;
  // Special tokens would end or restructure a prompt; plain tokens only.
  for (int32_t id = 0; id < r.vocab_size; ++id) {
    if (tok.is_special(id)) r.excluded_ids.insert(id);
  }
  for (int32_t id : {tok.bos_id(), tok.eos_id()}) r.excluded_ids.insert(id);
  for (int32_t id : tok.eos_ids()) r.excluded_ids.insert(id);
  if (o.endpoint == "/v1/completions") return random_requests(r);
  // Chat messages are text: decode the ids (the chat template adds its own tokens).
  const decode_fn decode = [&](const std::vector<int32_t>& ids) { return tok.decode(ids, true); };
  return random_requests(r, decode, encode);
}

/// The request body: streaming with usage, greedy, max_tokens from the sample.
std::string make_body(const options& o, const std::string& model, const sample_request& s) {
  json body = {{"model", model},
               {"temperature", 0.0},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}}};
  if (o.endpoint == "/v1/chat/completions") {
    body["messages"] = json::array({{{"role", "user"}, {"content", s.prompt_text}}});
    body["max_completion_tokens"] = s.output_len;
  } else {
    body["prompt"] = s.prompt_ids.empty() ? json(s.prompt_text) : json(s.prompt_ids);
    body["max_tokens"] = s.output_len;
  }
  if (o.ignore_eos) body["ignore_eos"] = true;
  if (!o.extra_body.empty()) {
    const json extra = json::parse(o.extra_body);
    if (!extra.is_object()) throw std::invalid_argument("--extra-body must be a JSON object");
    body.update(extra);
  }
  return body.dump();
}

/// Resolves --base-url (http://HOST[:PORT][/PREFIX]) plus --endpoint.
target make_target(const options& o, asio::io_context& io) {
  std::string rest = o.base_url;
  if (!rest.starts_with("http://"))
    throw std::invalid_argument("--base-url must start with http://");
  rest = rest.substr(7);
  const auto slash = rest.find('/');
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash);
  std::string authority = rest.substr(0, slash);
  if (prefix.ends_with('/')) prefix.pop_back();
  const auto colon = authority.rfind(':');
  std::string host = authority.substr(0, colon), port = "80";
  if (colon != std::string::npos) port = authority.substr(colon + 1);
  target t;
  t.host = authority;
  t.endpoints = tcp::resolver(io).resolve(host, port);
  t.path = prefix + o.endpoint;
  t.timeout = std::chrono::seconds(o.request_timeout_s);
  return t;
}

request_result fresh_result(const sample_request& s) {
  request_result r;
  r.prompt_len = s.prompt_len;
  r.expected_output_len = s.output_len;
  return r;
}

void print_table(const options& o, const summary& s) {
  auto line = [](const char* name, double v, int decimals) {
    std::printf("%-40s %-10.*f\n", name, decimals, v);
  };
  auto rule = [](const std::string& title, char fill) {
    const size_t pad = title.size() < 50 ? 50 - title.size() : 0;
    std::printf("%s%s%s\n", std::string(pad / 2, fill).c_str(), title.c_str(),
                std::string(pad - pad / 2, fill).c_str());
  };
  rule(" Serving Benchmark Result ", '=');
  line("Successful requests:", s.completed, 0);
  line("Failed requests:", s.failed, 0);
  if (o.max_concurrency > 0) line("Maximum request concurrency:", o.max_concurrency, 0);
  line("Benchmark duration (s):", s.duration, 2);
  line("Total input tokens:", static_cast<double>(s.total_input), 0);
  line("Total generated tokens:", static_cast<double>(s.total_output), 0);
  line("Request throughput (req/s):", s.request_throughput, 2);
  if (!o.goodput.empty()) line("Request goodput (req/s):", s.request_goodput, 2);
  line("Output token throughput (tok/s):", s.output_throughput, 2);
  line("Total Token throughput (tok/s):", s.total_token_throughput, 2);
  auto block = [&](const char* title, const char* name, const latency_stats& m) {
    rule(title, '-');
    const std::string n(name);
    line(("Mean " + n + " (ms):").c_str(), m.mean, 2);
    line(("Median " + n + " (ms):").c_str(), m.median, 2);
    line(("P90 " + n + " (ms):").c_str(), m.p90, 2);
    line(("P99 " + n + " (ms):").c_str(), m.p99, 2);
  };
  block("Time to First Token", "TTFT", s.ttft);
  block("Time per Output Token (excl. 1st token)", "TPOT", s.tpot);
  block("Inter-token Latency", "ITL", s.itl);
  block("End-to-end Latency", "E2EL", s.e2el);
  rule("", '=');
}

json result_json(const options& o, const std::string& model, const summary& s,
                 const std::vector<request_result>& results) {
  json j = to_json(s);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y%m%d-%H%M%S", std::localtime(&now));
  j["date"] = date;
  j["label"] = o.label;
  j["base_url"] = o.base_url;
  j["endpoint"] = o.endpoint;
  j["model_id"] = model;
  j["dataset_name"] = o.dataset_name;
  j["num_prompts"] = o.num_prompts;
  // JSON has no infinity; "inf" as vLLM's plots label it.
  j["request_rate"] = std::isinf(o.request_rate) ? json("inf") : json(o.request_rate);
  j["burstiness"] = o.burstiness;
  j["max_concurrency"] = o.max_concurrency > 0 ? json(o.max_concurrency) : json(nullptr);
  j["ignore_eos"] = o.ignore_eos;
  j["extra_body"] = o.extra_body.empty() ? json() : json::parse(o.extra_body);
  j["seed"] = o.seed;
  if (o.dataset_name == "random") {
    j["random_input_len"] = o.random_input_len;
    j["random_output_len"] = o.random_output_len;
    j["random_range_ratio"] = o.random_range_ratio;
  }
  json goodput = json::object();
  if (o.goodput.ttft_ms) goodput["ttft"] = *o.goodput.ttft_ms;
  if (o.goodput.tpot_ms) goodput["tpot"] = *o.goodput.tpot_ms;
  if (o.goodput.e2el_ms) goodput["e2el"] = *o.goodput.e2el_ms;
  j["goodput"] = goodput;
  for (const auto& r : results) {
    j["input_lens"].push_back(r.prompt_len);
    j["output_lens"].push_back(r.success ? r.output_tokens : 0);
    j["expected_output_lens"].push_back(r.expected_output_len);
    j["ttfts"].push_back(r.ttft);
    j["e2els"].push_back(r.latency);
    j["errors"].push_back(r.error);
  }
  return j;
}

int run(const options& o) {
  const std::string tokenizer_path = o.tokenizer.empty() ? o.model : o.tokenizer;
  const auto tok = [&] {
    try {
      return actorllm::tokenizer::load(tokenizer_path);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("tokenizer: ") + e.what() +
                               " (--tokenizer PATH when --model is not a model folder)");
    }
  }();
  const std::string model = served_name(o);
  const auto samples = make_workload(o, tok);
  std::vector<std::string> bodies;
  for (const auto& s : samples) bodies.push_back(make_body(o, model, s));
  const auto gaps = arrival_gaps(o.num_prompts, o.request_rate, o.burstiness, o.seed);

  asio::io_context io;  // one thread runs every connection
  connection_pool pool;
  target t = make_target(o, io);
  if (o.keep_alive) t.pool = &pool;

  std::printf("Starting initial single prompt test run...\n");
  request_result probe = fresh_result(samples[0]);
  asio::co_spawn(io, run_request(t, bodies[0], o.ignore_eos, probe), asio::detached);
  io.run();
  if (!probe.success) {
    std::fflush(stdout);
    std::fprintf(stderr, "Initial test run failed: %s\n", probe.error.c_str());
    return 1;
  }
  std::printf("Initial test run completed. Starting main benchmark run...\n");
  std::printf("Traffic request rate: %g\nBurstiness factor: %g\nMaximum request concurrency: %s\n",
              o.request_rate, o.burstiness,
              o.max_concurrency > 0 ? std::to_string(o.max_concurrency).c_str() : "None");

  std::vector<request_result> results;
  for (const auto& s : samples) results.push_back(fresh_result(s));
  concurrency_gate gate(o.max_concurrency);
  io.restart();
  const auto start = clock::now();
  asio::co_spawn(io, dispatch(t, bodies, gaps, o.ignore_eos, gate, results), asio::detached);
  io.run();
  const double duration = std::chrono::duration<double>(clock::now() - start).count();

  const summary s = summarize(results, duration, o.goodput);
  print_table(o, s);
  int shown = 0;
  for (size_t i = 0; i < results.size() && shown < 5; ++i) {
    if (results[i].success) continue;
    std::printf("request %zu failed: %s\n", i, results[i].error.c_str());
    ++shown;
  }
  if (!o.result_json.empty()) {
    std::ofstream out(o.result_json);
    out << result_json(o, model, s, results).dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + o.result_json);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
      std::printf("%s", usage_text());
      return 0;
    }
  }
  options o;
  try {
    o = parse_options(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_bench: %s\n\n%s", e.what(), usage_text());
    return 2;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_bench: %s\n", e.what());
    return 1;
  }
}

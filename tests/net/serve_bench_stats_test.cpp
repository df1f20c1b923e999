// The serving benchmark: statistics as vLLM computes them, SSE splitting and chunk timing,
// workloads and arrivals (no network, no tokenizer); then the client and its concurrency gate
// against the net layer's server with a fake engine.
#include "bench/serve_bench_stats.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "bench/serve_bench_client.hpp"
#include "bench/serve_bench_stream.hpp"
#include "bench/serve_bench_workload.hpp"
#include "net/http_server.hpp"
#include "testing/fake_engine.hpp"

using namespace actorllm::bench::serve;

TEST(ServeBenchStats, PercentileInterpolatesLikeNumpy) {
  const std::vector<double> v = {4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);
  EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
  EXPECT_DOUBLE_EQ(percentile({}, 99), 0);
}

TEST(ServeBenchStats, SummarizeMsIsInMilliseconds) {
  const latency_stats s = summarize_ms({0.001, 0.003});
  EXPECT_DOUBLE_EQ(s.mean, 2);
  EXPECT_DOUBLE_EQ(s.median, 2);
  EXPECT_NEAR(s.std, 1, 1e-12);  // population standard deviation, as numpy.std
}

request_result done(double ttft, double latency, int tokens, int prompt = 10) {
  request_result r;
  r.success = true;
  r.ttft = ttft;
  r.latency = latency;
  r.output_tokens = r.expected_output_len = tokens;
  r.prompt_len = prompt;
  for (int i = 1; i < tokens; ++i) r.itl.push_back((latency - ttft) / (tokens - 1));
  return r;
}

TEST(ServeBenchStats, SummaryCountsOnlyCompletedRequests) {
  request_result failed;
  failed.error = "HTTP 503";
  failed.prompt_len = 99;
  const std::vector<request_result> rs = {done(0.1, 1.1, 11), done(0.3, 0.3, 1), failed};
  const summary s = summarize(rs, 2.0, {});
  EXPECT_EQ(s.completed, 2);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.total_input, 20);
  EXPECT_EQ(s.total_output, 12);
  EXPECT_DOUBLE_EQ(s.request_throughput, 1.0);
  EXPECT_DOUBLE_EQ(s.output_throughput, 6.0);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 16.0);
  // TPOT = (E2E - TTFT) / (tokens - 1): 100 ms, and 0 for a one-token answer.
  EXPECT_DOUBLE_EQ(tpot_of(rs[0]), 0.1);
  EXPECT_DOUBLE_EQ(s.tpot.mean, 50);
  EXPECT_DOUBLE_EQ(s.ttft.mean, 200);
  EXPECT_NEAR(s.itl.median, 100, 1e-9);
  const auto j = to_json(s);
  EXPECT_EQ(j["completed"], 2);
  EXPECT_DOUBLE_EQ(j["mean_ttft_ms"].get<double>(), 200);
  EXPECT_TRUE(j.contains("p99_e2el_ms"));
  EXPECT_TRUE(j.contains("p90_itl_ms"));
}

TEST(ServeBenchStats, GoodputAppliesEveryObjective) {
  goodput_slo slo;
  EXPECT_EQ(parse_goodput_item("ttft:250", slo), "");
  EXPECT_EQ(parse_goodput_item("tpot:50", slo), "");
  EXPECT_NE(parse_goodput_item("ttft", slo), "");
  EXPECT_NE(parse_goodput_item("itl:5", slo), "");
  EXPECT_NE(parse_goodput_item("e2el:-1", slo), "");
  EXPECT_NE(parse_goodput_item("e2el:1x", slo), "");
  // Good; TTFT too high; TPOT too high (100 ms).
  const std::vector<request_result> rs = {done(0.2, 0.6, 11), done(0.3, 0.4, 3),
                                          done(0.1, 1.1, 11)};
  const summary s = summarize(rs, 1.0, slo);
  EXPECT_EQ(s.good_completed, 1);
  EXPECT_DOUBLE_EQ(s.request_goodput, 1.0);
  EXPECT_EQ(summarize(rs, 1.0, {}).good_completed, 3);
}

TEST(ServeBenchStream, SplitterHandlesCutsAndCrLf) {
  sse_splitter split;
  std::vector<std::string> got;
  auto collect = [&](std::string_view p) { got.emplace_back(p); };
  split.feed("data: {\"a\"", collect);
  EXPECT_TRUE(got.empty());
  split.feed(":1}\n\n: comment\nevent: x\r\ndata:[DONE]\r\n", collect);
  split.feed("\r\n", collect);
  EXPECT_EQ(got, (std::vector<std::string>{"{\"a\":1}", "[DONE]"}));
}

TEST(ServeBenchStream, TimesChunksAndPrefersUsage) {
  stream_accumulator acc;
  acc.on_data(R"({"choices":[{"index":0,"text":"a"}],"usage":null})", 0.5);
  acc.on_data(R"({"choices":[{"index":0,"text":""}],"usage":null})", 0.7);
  acc.on_data(R"({"choices":[{"index":0,"text":"c"}],"usage":null})", 1.0);
  acc.on_data(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}})", 1.1);
  acc.on_data("[DONE]", 1.1);
  request_result r;
  r.expected_output_len = 4;
  acc.finish(r, true);
  EXPECT_TRUE(r.success) << r.error;
  EXPECT_EQ(r.output_tokens, 4);  // usage, not the 3 chunks
  EXPECT_DOUBLE_EQ(r.ttft, 0.5);
  EXPECT_DOUBLE_EQ(r.latency, 1.0);  // the usage chunk is not a token
  ASSERT_EQ(r.itl.size(), 2u);
  EXPECT_NEAR(r.itl[0], 0.2, 1e-12);
  EXPECT_NEAR(r.itl[1], 0.3, 1e-12);
}

TEST(ServeBenchStream, CountsChunksWithoutUsageAndChecksTheCount) {
  stream_accumulator acc;
  for (int i = 0; i < 3; ++i) {
    acc.on_data(R"({"choices":[{"index":0,"delta":{"content":"x"}}]})", 0.1 * (i + 1));
  }
  acc.on_data("[DONE]", 0.4);
  request_result r;
  r.expected_output_len = 3;
  acc.finish(r, true);
  EXPECT_TRUE(r.success) << r.error;
  r.expected_output_len = 4;
  acc.finish(r, true);
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "expected 4 tokens, got 3");
  acc.finish(r, false);  // without ignore_eos an early stop is fine
  EXPECT_TRUE(r.success);
}

TEST(ServeBenchStream, ErrorsAndMissingEndFail) {
  request_result r;
  stream_accumulator no_done;
  no_done.on_data(R"({"choices":[{"text":"x"}]})", 0.1);
  no_done.finish(r, false);
  EXPECT_FALSE(r.success);
  stream_accumulator error;
  error.on_data(R"({"error":{"message":"boom","type":"internal_error"}})", 0.1);
  error.on_data("[DONE]", 0.1);
  error.finish(r, false);
  EXPECT_NE(r.error.find("boom"), std::string::npos);
  stream_accumulator empty;
  empty.on_data("[DONE]", 0.1);
  empty.finish(r, false);
  EXPECT_EQ(r.error, "no chunk with choices arrived");
}

TEST(ServeBenchStream, ChunkSummaryReadsOnlyTheTopLevel) {
  const auto read = chunk_summary_reader::read;
  const auto text =
      read(R"({"id":"x","choices":[{"index":0,"text":"a","logprobs":null}],"usage":null})");
  EXPECT_TRUE(text.is_object);
  EXPECT_TRUE(text.has_choice);
  EXPECT_FALSE(text.has_error);
  EXPECT_EQ(text.usage_tokens, -1);
  // usage with nested details; a "completion_tokens" inside a choice is not the usage.
  const auto usage = read(
      R"({"choices":[{"completion_tokens":99}],"usage":{"prompt_tokens":3,)"
      R"("prompt_tokens_details":{"completion_tokens":7},"completion_tokens":4,"total_tokens":7}})");
  EXPECT_TRUE(usage.has_choice);
  EXPECT_EQ(usage.usage_tokens, 4);
  const auto last = read(R"({"choices":[],"usage":{"completion_tokens":12}})");
  EXPECT_FALSE(last.has_choice);
  EXPECT_EQ(last.usage_tokens, 12);
  EXPECT_FALSE(read(R"({"choices":null})").has_choice);
  EXPECT_TRUE(read(R"({"choices":[1]})").has_choice);
  EXPECT_TRUE(read(R"({"error":{"message":"boom"}})").has_error);
  EXPECT_FALSE(read(R"({"data":{"error":1}})").has_error);
  EXPECT_FALSE(read("[1,2]").is_object);
  EXPECT_FALSE(read(R"({"choices":[)").is_object);  // cut short
  EXPECT_FALSE(read("not json").is_object);
}

TEST(ServeBenchStream, ChunkSummaryAgreesWithTheDom) {
  // The obvious reading, through a parsed object, as the oracle.
  const auto oracle = [](std::string_view payload) {
    chunk_summary s;
    const auto j = nlohmann::json::parse(payload, nullptr, false);
    if (!j.is_object()) return s;
    s.is_object = true;
    s.has_error = j.contains("error");
    const auto c = j.find("choices");
    s.has_choice = c != j.end() && c->is_array() && !c->empty();
    const auto u = j.find("usage");
    if (u != j.end() && u->is_object()) {
      const auto n = u->find("completion_tokens");
      if (n != u->end() && n->is_number_integer()) s.usage_tokens = n->get<int>();
    }
    return s;
  };
  for (const char* payload :
       {R"({"choices":[{"delta":{"content":"\"hi\" {}[]"}}],"model":"m"})",
        R"({"usage":{"completion_tokens":3},"choices":[]})",
        R"({"usage":{"completion_tokens":2.5},"choices":[{}]})",
        R"({"usage":[{"completion_tokens":3}]})", R"({"choices":{"0":1}})", R"({"error":null})",
        R"({})", R"("text")", R"({"a":[[{"choices":[1]}]]})"}) {
    const chunk_summary got = chunk_summary_reader::read(payload);
    const chunk_summary want = oracle(payload);
    EXPECT_EQ(got.is_object, want.is_object) << payload;
    EXPECT_EQ(got.has_error, want.has_error) << payload;
    EXPECT_EQ(got.has_choice, want.has_choice) << payload;
    EXPECT_EQ(got.usage_tokens, want.usage_tokens) << payload;
  }
}

TEST(ServeBenchWorkload, RandomIsSeededAndWithinRange) {
  random_options o;
  o.num_prompts = 200;
  o.input_len = 100;
  o.output_len = 20;
  o.range_ratio = 0.5;
  o.vocab_size = 50;
  o.excluded_ids = {0, 1, 2};
  o.seed = 3;
  const auto a = random_requests(o), b = random_requests(o);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt_ids, b[i].prompt_ids);
    EXPECT_GE(a[i].prompt_len, 50);
    EXPECT_LE(a[i].prompt_len, 150);
    EXPECT_EQ(a[i].prompt_len, static_cast<int>(a[i].prompt_ids.size()));
    EXPECT_GE(a[i].output_len, 10);
    EXPECT_LE(a[i].output_len, 30);
    for (int32_t id : a[i].prompt_ids) EXPECT_TRUE(id >= 3 && id < 50) << id;
  }
  o.seed = 4;
  EXPECT_NE(random_requests(o)[0].prompt_ids, a[0].prompt_ids);
  o.range_ratio = 0;
  for (const auto& r : random_requests(o)) {
    EXPECT_EQ(r.prompt_len, 100);
    EXPECT_EQ(r.output_len, 20);
  }
  o.range_ratio = 1;
  EXPECT_THROW(random_requests(o), std::invalid_argument);
}

TEST(ServeBenchWorkload, RandomAsTextForChat) {
  random_options o;
  o.num_prompts = 2;
  o.input_len = 5;
  o.vocab_size = 10;
  const auto rs = random_requests(
      o, [](const std::vector<int32_t>& ids) { return std::string(ids.size(), 'x'); },
      [](std::string_view text) { return std::vector<int32_t>(text.size() + 1, 7); });
  EXPECT_TRUE(rs[0].prompt_ids.empty());
  EXPECT_EQ(rs[0].prompt_text, "xxxxx");
  EXPECT_EQ(rs[0].prompt_len, 6);  // counted by encode
}

TEST(ServeBenchWorkload, ShareGptTakesFirstTurnsAndFilters) {
  // One token per word.
  const encode_fn words = [](std::string_view text) {
    return std::vector<int32_t>(std::count(text.begin(), text.end(), ' ') + 1, 5);
  };
  const auto data = nlohmann::json::parse(R"([
    {"id": "ok", "conversations": [{"from": "human", "value": "a b c d e"},
                                   {"from": "gpt", "value": "1 2 3 4 5 6"},
                                   {"from": "human", "value": "ignored"}]},
    {"id": "short prompt", "conversations": [{"from": "human", "value": "a b"},
                                             {"from": "gpt", "value": "1 2 3 4"}]},
    {"id": "one turn", "conversations": [{"from": "human", "value": "a b c d"}]},
    {"id": "long", "conversations": [{"from": "human", "value": "a b c d e f g h"},
                                     {"from": "gpt", "value": "1 2 3 4 5 6 7 8"}]}
  ])");
  sharegpt_options o;
  o.num_prompts = 1;
  o.max_total_len = 12;
  const auto rs = sharegpt_requests(data, o, words);
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].prompt_text, "a b c d e");
  EXPECT_EQ(rs[0].prompt_len, 5);
  EXPECT_EQ(rs[0].output_len, 6);
  o.fixed_output_len = 2;
  o.max_total_len = 100;
  o.num_prompts = 2;
  for (const auto& r : sharegpt_requests(data, o, words)) EXPECT_EQ(r.output_len, 2);
  o.num_prompts = 3;
  EXPECT_THROW(sharegpt_requests(data, o, words), std::invalid_argument);
  EXPECT_THROW(sharegpt_requests(nlohmann::json::object(), o, words), std::invalid_argument);
}

TEST(ServeBenchWorkload, ArrivalGapsHaveTheRequestedRate) {
  for (double g : arrival_gaps(5, std::numeric_limits<double>::infinity(), 1, 0)) EXPECT_EQ(g, 0);
  const auto gaps = arrival_gaps(20001, 50, 1, 1);
  EXPECT_EQ(gaps[0], 0);
  const double mean = std::accumulate(gaps.begin(), gaps.end(), 0.0) / 20000;
  EXPECT_NEAR(mean, 1.0 / 50, 0.001);
  EXPECT_EQ(gaps, arrival_gaps(20001, 50, 1, 1));
  // Lower burstiness: same mean, more spread (the gamma's CV is 1 / sqrt(shape)).
  const auto bursty = arrival_gaps(20001, 50, 0.25, 1);
  double var_poisson = 0, var_bursty = 0;
  for (size_t i = 1; i < gaps.size(); ++i) {
    var_poisson += (gaps[i] - 0.02) * (gaps[i] - 0.02);
    var_bursty += (bursty[i] - 0.02) * (bursty[i] - 0.02);
  }
  EXPECT_GT(var_bursty, 2 * var_poisson);
  EXPECT_THROW(arrival_gaps(3, -1, 1, 0), std::invalid_argument);
}

asio::awaitable<void> hold_slot(concurrency_gate& gate, int& in_flight, int& most) {
  co_await gate.acquire();
  most = std::max(most, ++in_flight);
  asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(2));
  co_await pause.async_wait(asio::use_awaitable);
  --in_flight;
  gate.release();
}

TEST(ServeBenchClient, GateCapsRequestsInFlight) {
  for (int limit : {1, 3, 0}) {
    asio::io_context io;
    concurrency_gate gate(limit);
    int in_flight = 0, most = 0;
    for (int i = 0; i < 10; ++i)
      asio::co_spawn(io, hold_slot(gate, in_flight, most), asio::detached);
    io.run();
    EXPECT_EQ(most, limit > 0 ? limit : 10);
    EXPECT_EQ(in_flight, 0);
  }
}

TEST(ServeBenchClient, StreamsFromTheNetServer) {
  actorllm::testing::fake_engine engine;
  engine.token_delay = std::chrono::milliseconds(1);
  actorllm::server_config config;
  config.host = "127.0.0.1";
  config.port = 0;
  actorllm::net::http_options http_options;
  http_options.access_log = false;
  actorllm::net::http_server server(config, engine, http_options);
  server.start();

  for (const std::string path : {"/v1/completions", "/v1/chat/completions"}) {
    asio::io_context io;
    connection_pool pool;
    target t;
    t.host = "127.0.0.1";
    t.endpoints = tcp::resolver(io).resolve("127.0.0.1", std::to_string(server.port()));
    t.path = path;
    t.pool = &pool;
    std::vector<std::string> bodies;
    std::vector<request_result> results(8);
    for (int i = 0; i < 8; ++i) {
      results[i].expected_output_len = 3 + i;
      nlohmann::json body = {{"model", "fake-model"},
                             {"stream", true},
                             {"ignore_eos", true},
                             {"stream_options", {{"include_usage", true}}}};
      if (path == "/v1/completions")
        body["prompt"] = {1, 2, 3};
      else
        body["messages"] = {{{"role", "user"}, {"content", "hi"}}};
      body[path == "/v1/completions" ? "max_tokens" : "max_completion_tokens"] = 3 + i;
      bodies.push_back(body.dump());
    }
    concurrency_gate gate(3);
    // dispatch() keeps references until io.run() ends: no temporaries (ASan caught one).
    const std::vector<double> gaps(8, 0.0);
    asio::co_spawn(io, dispatch(t, bodies, gaps, true, gate, results), asio::detached);
    io.run();
    size_t num_gaps = 0;
    for (const auto& r : results) {
      EXPECT_TRUE(r.success) << path << ": " << r.error;
      EXPECT_EQ(r.output_tokens, r.expected_output_len);
      // A busy server may merge tokens into one chunk (a slow, instrumented build may merge a
      // whole stream), and chat opens with a role chunk (a step for vLLM's benchmark too):
      // one gap per chunk, whatever the count.
      num_gaps += r.itl.size();
      EXPECT_LE(r.itl.size(), static_cast<size_t>(r.expected_output_len));
      EXPECT_GT(r.ttft, 0);
      EXPECT_GE(r.latency, r.ttft);
      EXPECT_GE(r.latency, 0.001 * r.expected_output_len);  // one token per ms at most
    }
    EXPECT_GT(num_gaps, 0u) << path << ": no stream came in more than one chunk";
    // Kept alive: 8 requests, at most 3 at a time, on at most 3 connections.
    EXPECT_GE(pool.num_opened, 1);
    EXPECT_LE(pool.num_opened, 3);
  }

  // An error status ends as a failure that quotes the server.
  asio::io_context io;
  target t;
  t.host = "127.0.0.1";
  t.endpoints = tcp::resolver(io).resolve("127.0.0.1", std::to_string(server.port()));
  t.path = "/v1/completions";
  request_result r;
  const std::string body = R"({"model":"nope","prompt":"x","stream":true})";  // outlives io.run
  asio::co_spawn(io, run_request(t, body, false, r), asio::detached);
  io.run();
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error.rfind("HTTP 404", 0), 0u) << r.error;
}

TEST(ServeBenchClient, SilentServerEndsInATimeout) {
  asio::io_context io;
  tcp::acceptor silent(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  tcp::socket accepted(io);
  silent.async_accept(accepted, [](const boost::system::error_code&) {});  // then says nothing
  target t;
  t.host = "127.0.0.1";
  t.endpoints =
      tcp::resolver(io).resolve("127.0.0.1", std::to_string(silent.local_endpoint().port()));
  t.path = "/v1/completions";
  t.timeout = std::chrono::seconds(1);
  request_result r;
  const std::string body = R"({"model":"m","prompt":"x","stream":true})";
  asio::co_spawn(io, run_request(t, body, false, r), asio::detached);
  const auto start = std::chrono::steady_clock::now();
  io.run();
  EXPECT_FALSE(r.success);
  EXPECT_EQ(r.error, "transport: timed out");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ServeBenchClient, AStaleKeptAliveConnectionIsRetriedOnANewOne) {
  actorllm::testing::fake_engine engine;
  actorllm::server_config config;
  config.host = "127.0.0.1";
  config.port = 0;
  actorllm::net::http_options http_options;
  http_options.access_log = false;
  http_options.idle_timeout_s = 0.1;  // the server drops idle connections quickly
  actorllm::net::http_server server(config, engine, http_options);
  server.start();

  asio::io_context io;
  connection_pool pool;
  target t;
  t.host = "127.0.0.1";
  t.endpoints = tcp::resolver(io).resolve("127.0.0.1", std::to_string(server.port()));
  t.path = "/v1/completions";
  t.pool = &pool;
  const std::string body =
      R"({"model":"fake-model","prompt":[1,2],"max_tokens":3,"stream":true,"ignore_eos":true,)"
      R"("stream_options":{"include_usage":true}})";
  for (int i = 0; i < 2; ++i) {
    request_result r;
    r.expected_output_len = 3;
    asio::co_spawn(io, run_request(t, body, true, r), asio::detached);
    io.restart();
    io.run();
    EXPECT_TRUE(r.success) << "request " << i << ": " << r.error;
    // The first connection went back to the pool; the server closes it while it waits.
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  EXPECT_EQ(pool.num_opened, 2);  // the stale one was tried, then a new one opened
}

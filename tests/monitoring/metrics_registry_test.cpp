// The rendered /metrics text: every metric with its type and labels, in text format 0.0.4.
#include "monitoring/metrics_registry.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "metrics_test_util.hpp"

namespace actorllm {
namespace {

struct expected_metric {
  const char* name;
  const char* type;
  const char* a_series;  // the rest of one line the text must contain, after the name
};

// Every metric the server exports, as a scraper sees it.
const expected_metric all_metrics[] = {
    {"num_requests_running", "gauge", "{model_name=\"stories260K\",replica=\"0\"} 5"},
    {"num_requests_waiting", "gauge", "{model_name=\"stories260K\",replica=\"0\"} 3"},
    {"num_requests_swapped", "gauge", "{model_name=\"stories260K\",replica=\"0\"} 1"},
    {"kv_cache_usage_perc", "gauge", "{model_name=\"stories260K\",replica=\"0\"} 0.75"},
    {"cpu_kv_cache_usage_perc", "gauge", "{model_name=\"stories260K\",replica=\"0\"} 0.25"},
    {"num_free_blocks", "gauge", "{model_name=\"stories260K\",pool=\"device\",replica=\"0\"} 1"},
    {"num_cached_blocks", "gauge", "{model_name=\"stories260K\",pool=\"cpu\",replica=\"0\"} 0"},
    {"num_preemptions_total", "counter", "{model_name=\"stories260K\",replica=\"0\"} 2"},
    {"prefix_cache_queries_total", "counter", "{model_name=\"stories260K\",replica=\"0\"} 100"},
    {"prefix_cache_hits_total", "counter", "{model_name=\"stories260K\",replica=\"0\"} 30"},
    {"prompt_tokens_total", "counter", "{model_name=\"stories260K\",replica=\"0\"} 4"},
    {"generation_tokens_total", "counter", "{model_name=\"stories260K\",replica=\"0\"} 2"},
    {"request_success_total", "counter",
     "{finished_reason=\"length\",model_name=\"stories260K\",replica=\"0\"} 1"},
    {"iteration_tokens_total", "histogram", "_count{model_name=\"stories260K\",replica=\"0\"} 1"},
    {"step_duration_seconds", "histogram", "_count{model_name=\"stories260K\",replica=\"0\"} 1"},
    {"time_to_first_token_seconds", "histogram",
     "_count{model_name=\"stories260K\",replica=\"0\"} 1"},
    {"inter_token_latency_seconds", "histogram",
     "_count{model_name=\"stories260K\",replica=\"0\"} 1"},
    {"e2e_request_latency_seconds", "histogram",
     "_count{model_name=\"stories260K\",replica=\"0\"} 1"},
    {"request_queue_time_seconds", "histogram",
     "_count{model_name=\"stories260K\",replica=\"0\"} 1"},
    {"request_prompt_tokens", "histogram", "_sum{model_name=\"stories260K\",replica=\"0\"} 4"},
    {"request_generation_tokens", "histogram", "_sum{model_name=\"stories260K\",replica=\"0\"} 2"},
    {"http_requests_total", "counter",
     "{model_name=\"stories260K\",path=\"/v1/completions\",status=\"200\"} 1"},
    {"actor_mailbox_depth", "gauge", "{actor=\"scheduler-0\",model_name=\"stories260K\"} 2"},
    {"worker_up", "gauge", "{model_name=\"stories260K\",worker=\"worker-0-0\"} 1"},
    {"cache_config_info", "gauge",
     "{block_size=\"16\",model_name=\"stories260K\",num_cpu_blocks=\"64\",num_gpu_blocks=\"8\","
     "replica=\"0\",swap_space=\"4\"} 1"},
};

TEST(metrics_registry, renders_every_metric_with_type_and_labels) {
  testing::populated_registry p;
  std::string text = p.registry.render();
  for (const auto& m : all_metrics) {
    std::string name = std::string(metric_prefix) + m.name;
    EXPECT_NE(text.find("# TYPE " + name + " " + m.type + "\n"), std::string::npos) << name;
    // The whole line: "} 5" must not pass for "} 50".
    EXPECT_NE(text.find("\n" + name + m.a_series + "\n"), std::string::npos) << name << m.a_series;
  }
}

TEST(metrics_registry, every_line_is_text_format_0_0_4) {
  testing::populated_registry p;
  std::string text = p.registry.render();
  // name{label="value",...} value, or # HELP / # TYPE.
  const std::regex sample(
      R"(actorllm:[a-z_][a-z0-9_]*(\{([a-z_]+="[^"]*",?)*\})? [-+0-9.eEinfNa]+)");
  const std::regex comment(R"(# (HELP|TYPE) actorllm:[a-z_][a-z0-9_]* .*)");
  std::size_t start = 0;
  int num_lines = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos) << "the text ends with a newline";
    std::string line = text.substr(start, end - start);
    EXPECT_TRUE(std::regex_match(line, sample) || std::regex_match(line, comment)) << line;
    start = end + 1;
    ++num_lines;
  }
  EXPECT_GT(num_lines, 100);
}

TEST(metrics_registry, families_merge_across_replicas) {
  metrics_registry registry;
  engine_metrics replica0(registry, {"m", 0, 128});
  engine_metrics replica1(registry, {"m", 1, 128});
  scheduler_stats s;
  s.num_running = 7;
  replica1.on_stats(s);
  EXPECT_EQ(testing::gauge_value(registry, "actorllm:num_requests_running", {{"replica", "0"}}), 0);
  EXPECT_EQ(testing::gauge_value(registry, "actorllm:num_requests_running", {{"replica", "1"}}), 7);
  std::string text = registry.render();
  EXPECT_EQ(text.find("# TYPE actorllm:num_requests_running gauge"),
            text.rfind("# TYPE actorllm:num_requests_running gauge"))
      << "one family, two series";
}

TEST(metrics_registry, a_name_registered_as_two_types_is_a_programming_error) {
  metrics_registry registry;
  registry.gauge("x", "a gauge");
  EXPECT_THROW(registry.counter("x", "a counter"), std::invalid_argument);
}

TEST(metrics_registry, render_shows_each_series_with_its_value_after_every_update) {
  metrics_registry registry;
  auto& gauge = registry.gauge("test_gauge", "A gauge of the test.").Add({{"pool", "device"}});
  auto& counter = registry.counter("test_total", "A counter of the test.").Add({{"path", "/x"}});
  gauge.Set(2.5);
  counter.Increment(3);
  std::string text = registry.render();
  EXPECT_NE(text.find("# HELP actorllm:test_gauge A gauge of the test.\n"
                      "# TYPE actorllm:test_gauge gauge\n"
                      "actorllm:test_gauge{pool=\"device\"} 2.5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# HELP actorllm:test_total A counter of the test.\n"
                      "# TYPE actorllm:test_total counter\n"
                      "actorllm:test_total{path=\"/x\"} 3\n"),
            std::string::npos)
      << text;

  gauge.Set(4);
  counter.Increment(3);
  text = registry.render();
  EXPECT_NE(text.find("\nactorllm:test_gauge{pool=\"device\"} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\nactorllm:test_total{path=\"/x\"} 6\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("2.5"), std::string::npos) << "the old gauge value is gone\n" << text;
}

TEST(metrics_registry, a_histogram_renders_cumulative_buckets_sum_and_count) {
  metrics_registry registry;
  auto& h = registry.histogram("test_seconds", "A histogram of the test.")
                .Add({}, prometheus::Histogram::BucketBoundaries{0.5, 2});
  for (double v : {0.25, 1.0, 1.5, 8.0}) h.Observe(v);
  const std::string text = registry.render();
  // Bucket le counts every observation <= le: 1 at 0.5, 3 at 2, all 4 at +Inf.
  EXPECT_NE(text.find("# TYPE actorllm:test_seconds histogram\n"
                      "actorllm:test_seconds_count 4\n"
                      "actorllm:test_seconds_sum 10.75\n"
                      "actorllm:test_seconds_bucket{le=\"0.5\"} 1\n"
                      "actorllm:test_seconds_bucket{le=\"2\"} 3\n"
                      "actorllm:test_seconds_bucket{le=\"+Inf\"} 4\n"),
            std::string::npos)
      << text;
}

TEST(metrics_registry, engine_gauges_and_counters_follow_each_step) {
  testing::populated_registry p;
  scheduler_stats s = testing::sample_stats();
  s.num_running = 9;
  s.num_preemptions = 5;  // the scheduler's running total: the counter shows 5, not 2 + 5
  p.engine.on_step(s, 0.03);
  const std::string text = p.registry.render();
  const std::string labels = "{model_name=\"stories260K\",replica=\"0\"}";
  EXPECT_NE(text.find("\nactorllm:num_requests_running" + labels + " 9\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nactorllm:num_preemptions_total" + labels + " 5\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\nactorllm:step_duration_seconds_count" + labels + " 2\n"),
            std::string::npos)
      << text;
}

TEST(metrics_registry, label_values_are_escaped_as_the_content_type_says) {
  // Text format 0.0.4 in UTF-8: a label value escapes backslash, double quote and newline, and
  // keeps every other character as it is.
  EXPECT_NE(metrics_content_type.find("version=0.0.4"), std::string_view::npos);
  EXPECT_NE(metrics_content_type.find("charset=utf-8"), std::string_view::npos);
  metrics_registry registry;
  registry.gauge("test_info", "Labels of the test.").Add({{"v", "a\\b\"c\nd é"}}).Set(1);
  const std::string text = registry.render();
  EXPECT_NE(text.find("\nactorllm:test_info{v=\"a\\\\b\\\"c\\nd é\"} 1\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace actorllm

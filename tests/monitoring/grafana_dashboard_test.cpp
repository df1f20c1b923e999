// monitoring/grafana/actorllm.json loads as a Grafana dashboard, and every metric its PromQL
// names is one the server exports (a renamed metric must not leave an empty panel behind).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "metrics_test_util.hpp"

namespace actorllm {
namespace {

using nlohmann::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json load_dashboard() {
  return json::parse(
      read_file(std::string(ACTORLLM_SOURCE_DIR) + "/monitoring/grafana/actorllm.json"));
}

// Every PromQL expression: the panels' targets and the template variables' queries.
std::vector<std::string> all_queries(const json& dashboard) {
  std::vector<std::string> queries;
  for (const auto& panel : dashboard["panels"])
    if (panel.contains("targets"))
      for (const auto& target : panel["targets"]) queries.push_back(target["expr"]);
  for (const auto& variable : dashboard["templating"]["list"])
    if (variable.contains("definition")) queries.push_back(variable["definition"]);
  return queries;
}

// Metric names in an expression, histogram series folded into their family.
std::set<std::string> metric_names(const std::string& expr) {
  static const std::regex name(R"(actorllm:[a-z_][a-z0-9_]*)");
  static const std::regex series_suffix(R"(_(bucket|sum|count)$)");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), name); it != std::sregex_iterator();
       ++it)
    names.insert(std::regex_replace(it->str(), series_suffix, ""));
  return names;
}

TEST(grafana_dashboard, is_a_grafana_dashboard_with_a_prometheus_input) {
  json d;
  ASSERT_NO_THROW(d = load_dashboard());
  EXPECT_EQ(d["title"], "actorllm");
  EXPECT_TRUE(d["uid"].is_string());
  EXPECT_TRUE(d["schemaVersion"].is_number_integer());
  EXPECT_TRUE(d["id"].is_null()) << "an importable dashboard has no database id";
  ASSERT_TRUE(d["__inputs"].is_array());
  EXPECT_EQ(d["__inputs"][0]["name"], "DS_PROMETHEUS");
  EXPECT_EQ(d["__inputs"][0]["type"], "datasource");
  EXPECT_EQ(d["__inputs"][0]["pluginId"], "prometheus");
  ASSERT_TRUE(d["panels"].is_array());
  ASSERT_TRUE(d["templating"]["list"].is_array());
  EXPECT_TRUE(d["time"].contains("from"));
}

TEST(grafana_dashboard, panels_are_well_formed) {
  json d = load_dashboard();
  const std::set<std::string> panel_types = {"row", "timeseries", "stat"};
  std::set<int> ids;
  for (const auto& panel : d["panels"]) {
    std::string title = panel.value("title", "");
    EXPECT_FALSE(title.empty());
    EXPECT_TRUE(panel_types.count(panel.value("type", ""))) << title;
    EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "duplicate id in " << title;
    const auto& grid = panel["gridPos"];
    for (const char* key : {"h", "w", "x", "y"}) EXPECT_TRUE(grid[key].is_number()) << title;
    EXPECT_LE(grid["x"].get<int>() + grid["w"].get<int>(), 24) << title;
    if (panel["type"] == "row") continue;
    EXPECT_EQ(panel["datasource"]["uid"], "${DS_PROMETHEUS}") << title;
    ASSERT_FALSE(panel["targets"].empty()) << title;
    std::set<std::string> refs;
    for (const auto& target : panel["targets"]) {
      EXPECT_FALSE(target["expr"].get<std::string>().empty()) << title;
      EXPECT_TRUE(refs.insert(target["refId"].get<std::string>()).second) << title;
      EXPECT_EQ(target["datasource"]["uid"], "${DS_PROMETHEUS}") << title;
    }
  }
  EXPECT_GE(ids.size(), 15u);
}

TEST(grafana_dashboard, every_query_names_an_exported_metric) {
  testing::populated_registry p;
  std::set<std::string> exported;
  for (const auto& family : p.registry.prometheus_registry()->Collect())
    exported.insert(family.name);

  std::set<std::string> used;
  for (const std::string& expr : all_queries(load_dashboard())) {
    auto names = metric_names(expr);
    EXPECT_FALSE(names.empty()) << "a query without an actorllm metric: " << expr;
    for (const auto& name : names) {
      EXPECT_TRUE(exported.count(name)) << name << " in " << expr;
      used.insert(name);
    }
  }
  // The subjects the dashboard exists for.
  for (const char* name :
       {"actorllm:num_requests_running", "actorllm:num_requests_waiting",
        "actorllm:num_requests_swapped", "actorllm:kv_cache_usage_perc",
        "actorllm:time_to_first_token_seconds", "actorllm:inter_token_latency_seconds",
        "actorllm:e2e_request_latency_seconds", "actorllm:prompt_tokens_total",
        "actorllm:generation_tokens_total", "actorllm:num_preemptions_total",
        "actorllm:prefix_cache_hits_total", "actorllm:actor_mailbox_depth", "actorllm:worker_up"})
    EXPECT_TRUE(used.count(name)) << name << " is not on the dashboard";
}

TEST(grafana_dashboard, latency_panels_show_p50_p90_p99) {
  std::string text =
      read_file(std::string(ACTORLLM_SOURCE_DIR) + "/monitoring/grafana/actorllm.json");
  for (const char* metric : {"time_to_first_token_seconds", "inter_token_latency_seconds",
                             "e2e_request_latency_seconds"})
    for (const char* q : {"0.5", "0.9", "0.99"}) {
      std::string expr = std::string("histogram_quantile(") + q +
                         ", sum by (le) (rate(actorllm:" + metric + "_bucket";
      EXPECT_NE(text.find(expr), std::string::npos) << expr;
    }
}

TEST(grafana_dashboard, metric_names_strip_histogram_series) {
  EXPECT_EQ(metric_names("rate(actorllm:ttft_bucket{a=\"b\"}[1m]) / actorllm:x_count"),
            (std::set<std::string>{"actorllm:ttft", "actorllm:x"}));
}

TEST(prometheus_config, scrapes_the_default_port_every_second) {
  std::string text = read_file(std::string(ACTORLLM_SOURCE_DIR) + "/monitoring/prometheus.yml");
  EXPECT_NE(text.find("job_name: actorllm"), std::string::npos);
  EXPECT_NE(text.find("scrape_interval: 1s"), std::string::npos);
  EXPECT_NE(text.find("metrics_path: /metrics"), std::string::npos);
  EXPECT_NE(text.find("\"127.0.0.1:8000\""), std::string::npos);
}

}  // namespace
}  // namespace actorllm

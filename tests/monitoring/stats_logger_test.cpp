// The periodic stats line: vLLM's wording, throughput over the interval, the interval itself.
#include "monitoring/stats_logger.hpp"

#include <gtest/gtest.h>

namespace actorllm {
namespace {

stats_snapshot at(double now, int64_t prompt, int64_t generation) {
  stats_snapshot s;
  s.now = now;
  s.num_prompt_tokens = prompt;
  s.num_generation_tokens = generation;
  return s;
}

TEST(stats_logger, line_has_vllm_wording) {
  stats_snapshot previous = at(10.0, 100, 50);
  stats_snapshot current = at(15.0, 612, 531);
  current.num_running = 4;
  current.num_swapped = 1;
  current.num_waiting = 2;
  current.gpu_kv_cache_usage = 0.375;
  current.cpu_kv_cache_usage = 0.0625;
  EXPECT_EQ(format_stats_line(previous, current),
            "Avg prompt throughput: 102.4 tokens/s, Avg generation throughput: 96.2 tokens/s, "
            "Running: 4 reqs, Swapped: 1 reqs, Pending: 2 reqs, GPU KV cache usage: 37.5%, "
            "CPU KV cache usage: 6.2%.");
}

TEST(stats_logger, speculative_decoding_adds_its_acceptance_over_the_interval) {
  stats_snapshot previous = at(10.0, 100, 50);
  stats_snapshot current = at(15.0, 100, 150);
  EXPECT_EQ(format_stats_line(previous, current).find("Speculative"), std::string::npos);
  previous.num_drafts = 10, previous.num_draft_tokens = 30, previous.num_accepted_tokens = 12;
  current.num_drafts = 50, current.num_draft_tokens = 150, current.num_accepted_tokens = 72;
  const std::string line = format_stats_line(previous, current);
  EXPECT_NE(line.find(" Speculative decoding: draft acceptance rate: 50.0%, mean acceptance "
                      "length: 2.50, drafted: 120 tokens, accepted: 60 tokens."),
            std::string::npos)
      << line;
}

TEST(stats_logger, a_line_every_interval) {
  stats_logger logger(5.0);
  EXPECT_FALSE(logger.on_snapshot(at(100.0, 0, 0))) << "the first snapshot starts the clock";
  EXPECT_FALSE(logger.on_snapshot(at(102.0, 10, 10)));
  auto line = logger.on_snapshot(at(105.0, 50, 100));
  ASSERT_TRUE(line);
  EXPECT_NE(line->find("Avg prompt throughput: 10.0 tokens/s"), std::string::npos) << *line;
  EXPECT_NE(line->find("Avg generation throughput: 20.0 tokens/s"), std::string::npos) << *line;
  EXPECT_FALSE(logger.on_snapshot(at(109.0, 60, 110)));
  // The next interval counts from the last line, not from the last snapshot.
  line = logger.on_snapshot(at(110.0, 50, 150));
  ASSERT_TRUE(line);
  EXPECT_NE(line->find("Avg prompt throughput: 0.0 tokens/s"), std::string::npos) << *line;
  EXPECT_NE(line->find("Avg generation throughput: 10.0 tokens/s"), std::string::npos) << *line;
}

TEST(stats_logger, an_idle_engine_reports_zero) {
  stats_logger logger(1.0);
  logger.on_snapshot(at(0.0, 7, 7));
  auto line = logger.on_snapshot(at(60.0, 7, 7));
  ASSERT_TRUE(line);
  EXPECT_EQ(line->rfind("Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0", 0),
            0u);
  EXPECT_NE(line->find("GPU KV cache usage: 0.0%"), std::string::npos);
}

TEST(stats_logger, interval_zero_is_off) {
  stats_logger logger(0.0);
  EXPECT_FALSE(logger.on_snapshot(at(0.0, 0, 0)));
  EXPECT_FALSE(logger.on_snapshot(at(1000.0, 10, 10)));
}

}  // namespace
}  // namespace actorllm

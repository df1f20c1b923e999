// The thread team: every member runs once per loop, ranges cover each index exactly once,
// nested loops run on the caller, helpers wake after sleeping, and the sliced GEMM equals an
// unsliced one for every team size.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

#include "kernels/cpu/ops.hpp"

namespace actorllm {
namespace {

/// Restores the configured thread count when a test ends.
struct threads_guard {
  int saved = cpu::num_threads();
  ~threads_guard() { cpu::set_num_threads(saved); }
};

TEST(thread_team, every_member_runs_once_on_a_thread_of_its_own) {
  cpu::thread_team team(3);
  ASSERT_EQ(team.size(), 3);
  std::vector<std::atomic<int>> runs(3);
  std::vector<std::thread::id> ids(3);
  team.run([&](int member) {
    ++runs[member];
    ids[member] = std::this_thread::get_id();
  });
  for (int m = 0; m < 3; ++m) EXPECT_EQ(runs[m].load(), 1) << "member " << m;
  EXPECT_EQ(ids[0], std::this_thread::get_id());
  EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 3u);
}

TEST(thread_team, helpers_wake_after_sleeping) {
  cpu::thread_team team(2);
  std::atomic<int> total{0};
  for (int round = 0; round < 5; ++round) {
    // Longer than the idle spin: the helper is asleep when the next loop starts.
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    team.run([&](int) { ++total; });
  }
  EXPECT_EQ(total.load(), 10);
}

TEST(thread_team, parallel_for_covers_each_index_once_for_any_team_size) {
  threads_guard guard;
  for (int threads : {1, 2, 3, 5}) {
    cpu::set_num_threads(threads);
    for (int64_t n : {1, 7, 16, 100, 1000}) {
      for (int64_t grain : {1, 16}) {
        std::vector<std::atomic<int>> hits(n);
        cpu::parallel_for(n, grain, 0, [&](int64_t begin, int64_t end) {
          EXPECT_LT(begin, end);
          for (int64_t i = begin; i < end; ++i) ++hits[i];
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " at " << i;
      }
    }
  }
}

TEST(thread_team, dynamic_loop_and_nested_loops_cover_everything) {
  threads_guard guard;
  cpu::set_num_threads(2);
  const int64_t n = 257;
  std::vector<std::atomic<int>> hits(n * 10);
  cpu::parallel_for_dynamic(n, 4, [&](int, int64_t i) {
    // A nested loop inside a member runs on that member alone, and still covers its range.
    cpu::parallel_for(10, 1, 0, [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) ++hits[i * 10 + j];
    });
  });
  for (int64_t i = 0; i < n * 10; ++i) ASSERT_EQ(hits[i].load(), 1) << "at " << i;
}

TEST(thread_team, sliced_linear_equals_one_thread_for_every_team_size) {
  threads_guard guard;
  const int64_t in = 96, out = 288 + 5;  // not a multiple of the slice grain
  std::vector<float> x(32 * in), w(out * in), bias(out);
  std::iota(x.begin(), x.end(), 0.0f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) - 6.0f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i);
  for (int64_t n : {1, 3, 32}) {
    cpu::set_num_threads(1);
    std::vector<float> want(n * out);
    cpu::linear(x.data(), w.data(), bias.data(), n, in, out, want.data());
    for (int threads : {2, 3, 4}) {
      cpu::set_num_threads(threads);
      std::vector<float> got(n * out, -1.0f);
      cpu::linear(x.data(), w.data(), bias.data(), n, in, out, got.data());
      EXPECT_EQ(got, want) << "n " << n << " threads " << threads;
    }
  }
}

}  // namespace
}  // namespace actorllm

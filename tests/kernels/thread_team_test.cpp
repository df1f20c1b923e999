// The thread team: every slot runs once per loop, a descheduled helper holds up nothing, ranges
// cover each index exactly once, nested loops run on the caller, helpers wake after sleeping,
// sleep as soon as their leader is off the cores and spin while it runs, and the sliced GEMM
// equals an unsliced one for every team size.
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
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

TEST(thread_team, every_slot_runs_once_and_the_caller_takes_slot_zero) {
  cpu::thread_team team(3);
  ASSERT_EQ(team.size(), 3);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::atomic<int>> runs(3);
    std::vector<std::thread::id> ids(3);
    team.run([&](int slot) {
      ++runs[slot];
      ids[slot] = std::this_thread::get_id();
    });
    for (int s = 0; s < 3; ++s) ASSERT_EQ(runs[s].load(), 1) << "slot " << s;
    ASSERT_EQ(ids[0], std::this_thread::get_id());
  }
}

/// Freezes every `actorllm.math` thread of the process inside a signal handler until
/// released: a deterministic stand-in for helpers that the OS has descheduled.
class frozen_helpers {
 public:
  frozen_helpers() {
    struct sigaction action {};
    action.sa_handler = [](int) {
      ++frozen;
      while (!released.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
      --frozen;
    };
    sigaction(SIGUSR1, &action, &saved_);
    released = false;
    int signalled = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      if (name != "actorllm.math") continue;
      syscall(SYS_tgkill, getpid(), std::stoi(task.path().filename().string()), SIGUSR1);
      ++signalled;
    }
    while (frozen.load() < signalled) std::this_thread::yield();
    count = signalled;
  }
  ~frozen_helpers() {
    released = true;
    while (frozen.load() > 0) std::this_thread::yield();
    sigaction(SIGUSR1, &saved_, nullptr);
  }
  int count = 0;

 private:
  static inline std::atomic<int> frozen{0};
  static inline std::atomic<bool> released{false};
  struct sigaction saved_ {};
};

TEST(thread_team, a_descheduled_helper_holds_up_nothing) {
  cpu::thread_team team(2);
  // Slot 0 waits (bounded) for the helper to take slot 1: then it is running and named.
  std::atomic<bool> helper_ran{false};
  team.run([&](int slot) {
    if (slot == 1) helper_ran = true;
    for (int i = 0; slot == 0 && i < 1000 && !helper_ran; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  ASSERT_TRUE(helper_ran.load());
  frozen_helpers frozen;
  ASSERT_GE(frozen.count, 1);
  // Without the caller claiming the helper's slot, the first of these loops would never end.
  for (int round = 0; round < 100; ++round) {
    std::vector<std::thread::id> ids(2);
    team.run([&](int slot) { ids[slot] = std::this_thread::get_id(); });
    ASSERT_EQ(ids[0], std::this_thread::get_id());
    ASSERT_EQ(ids[1], std::this_thread::get_id());
  }
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

/// One look at a 2-team's helper shortly after it ran a slot, while the leader either sleeps
/// (off the cores) or spins (on one).
struct helper_look {
  bool in_time;  // within 150 us of the helper's slot: inside its 200 us idle spin
  bool apart;    // the helper ran on another core than the one the leader looked from
  bool asleep;   // the helper was blocked
};

helper_look look_at_helper(cpu::thread_team& team, bool leader_sleeps) {
  using clock = std::chrono::steady_clock;
  std::atomic<bool> helper_ran{false};
  std::atomic<clock::rep> helper_done{0};
  std::atomic<int> helper_core{-1};
  team.run([&](int slot) {
    if (slot == 1) {
      helper_core = sched_getcpu();
      helper_done = clock::now().time_since_epoch().count();
      helper_ran = true;
      return;
    }
    // Slot 0 waits (bounded) for the helper to run slot 1: then it is awake and spinning.
    for (const auto until = clock::now() + std::chrono::milliseconds(100);
         !helper_ran && clock::now() < until;)
      std::this_thread::yield();
  });
  if (!helper_ran) return {false, false, false};
  if (leader_sleeps) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  } else {
    for (const auto until = clock::now() + std::chrono::microseconds(50); clock::now() < until;) {
    }
  }
  const bool apart = sched_getcpu() != helper_core;
  const bool asleep = team.num_sleeping() == 1;
  const auto since = clock::now() - clock::time_point(clock::duration(helper_done.load()));
  return {since < std::chrono::microseconds(150), apart, asleep};
}

TEST(thread_team, a_helper_sleeps_once_its_leader_is_off_the_cores) {
  cpu::thread_team team(2);
  int looks = 0, asleep = 0;
  for (int attempt = 0; attempt < 200 && asleep < 3; ++attempt) {
    const helper_look look = look_at_helper(team, /*leader_sleeps=*/true);
    looks += look.in_time;
    asleep += look.in_time && look.asleep;
  }
  if (looks == 0) GTEST_SKIP() << "the machine never let the test look in time";
  // With only the 200 us idle spin, no look this early would find the helper asleep.
  EXPECT_GT(asleep, 0) << looks << " looks in time";
}

TEST(thread_team, a_helper_keeps_spinning_while_its_leader_runs_on_another_core) {
  // (On the leader's own core a spinning helper would only delay the leader: it sleeps.)
  cpu::thread_team team(2);
  int looks = 0, awake = 0;
  for (int attempt = 0; attempt < 200 && awake < 3; ++attempt) {
    const helper_look look = look_at_helper(team, /*leader_sleeps=*/false);
    looks += look.in_time && look.apart;
    awake += look.in_time && look.apart && !look.asleep;
  }
  if (looks == 0) GTEST_SKIP() << "the helper never ran beside the leader in time";
  EXPECT_GT(awake, 0) << looks << " looks in time";  // spinning, ready for the next loop
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

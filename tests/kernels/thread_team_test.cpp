// The thread team: every slot runs once per loop, a descheduled helper holds up nothing, ranges
// cover each index exactly once, nested loops run on the caller, helpers wake after sleeping,
// sleep as soon as their leader is off the cores and spin while it runs, and the sliced GEMM
// equals an unsliced one for every team size. The sleep and spin checks read thread CPU
// clocks rather than racing the scheduler, so they hold (and never skip) on a loaded machine.
#include <gtest/gtest.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
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

/// Waits (bounded) until `pred` holds; false if it never did within `limit`.
template <class Pred>
bool wait_for(Pred pred, std::chrono::milliseconds limit) {
  for (const auto until = std::chrono::steady_clock::now() + limit; !pred();) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

TEST(thread_team, helpers_wake_after_sleeping) {
  cpu::thread_team team(2);
  for (int round = 0; round < 5; ++round) {
    // Past the idle spin the helper always sleeps; a broken wake-up would leave slot 1 to the
    // caller, which takes every slot no helper started.
    ASSERT_TRUE(wait_for([&] { return team.num_sleeping() == 1; }, std::chrono::seconds(5)))
        << "the helper never went to sleep";
    std::atomic<bool> helper_ran{false};
    std::thread::id slot1_thread;
    team.run([&](int slot) {
      if (slot == 1) {
        slot1_thread = std::this_thread::get_id();
        helper_ran = true;
        return;
      }
      // Slot 0 holds its claim back (bounded) so that only a woken helper can take slot 1.
      wait_for([&] { return helper_ran.load(); }, std::chrono::seconds(5));
    });
    ASSERT_NE(slot1_thread, std::this_thread::get_id()) << "round " << round;
  }
}

/// CPU time a thread has used, in microseconds, by its clock.
double cpu_us(clockid_t clock) {
  timespec ts{};
  EXPECT_EQ(clock_gettime(clock, &ts), 0);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/// CPU time of a 2-team's helper from the end of its slot until it sleeps, where the team's
/// leader (the thread that made it) blocks for good right after the loop. CPU time, not wall
/// time: a helper that the OS deschedules spends none, so a loaded machine does not make it
/// larger (a hypervisor's stolen time aside, see the test).
double helper_spin_after_leader_blocked() {
  std::atomic<bool> helper_ran{false};
  std::atomic<cpu::thread_team*> team{nullptr};
  clockid_t helper_clock{};
  double helper_cpu_at_slot_end = 0;
  std::promise<void> release;
  std::thread leader([&] {
    cpu::thread_team own(2);
    own.run([&](int slot) {
      if (slot == 1) {
        pthread_getcpuclockid(pthread_self(), &helper_clock);
        helper_cpu_at_slot_end = cpu_us(helper_clock);
        helper_ran = true;
        return;
      }
      wait_for([&] { return helper_ran.load(); }, std::chrono::seconds(5));
    });
    team = &own;
    release.get_future().wait();  // blocked: the leader's CPU clock stands still
  });
  const bool slept = wait_for([&] { return team.load() && team.load()->num_sleeping() == 1; },
                              std::chrono::seconds(5));
  const double spin = helper_ran && slept ? cpu_us(helper_clock) - helper_cpu_at_slot_end : -1;
  release.set_value();
  leader.join();
  EXPECT_TRUE(helper_ran.load()) << "the helper never ran slot 1";
  EXPECT_TRUE(slept) << "the helper never went to sleep";
  return spin;
}

TEST(thread_team, a_helper_sleeps_once_its_leader_is_off_the_cores) {
  // A helper whose leader is blocked sleeps after one or two 10 us checks of the leader's
  // clock; the plain 200 us idle spin alone would cost it about 200 us of CPU time on an idle
  // core. The median of nine trials, because a hypervisor that takes the helper's core away
  // mid-spin can charge it a trial's worth of CPU time now and then.
  std::vector<double> spins;
  for (int trial = 0; trial < 9; ++trial) spins.push_back(helper_spin_after_leader_blocked());
  std::nth_element(spins.begin(), spins.begin() + 4, spins.end());
  EXPECT_LT(spins[4], 100.0) << "us of CPU spun after the leader blocked (median)";
}

/// One look at a 2-team's helper while the team's leader spins on its core.
struct helper_look {
  bool valid;   // a helper ran slot 1, and the look shows what a running leader keeps awake
  bool asleep;  // the helper was blocked
};

/// The leader (this thread) runs a loop whose slot 1 a helper takes, spins on, and looks
/// whether the helper sleeps. A helper sleeps before its 200 us idle spin ends only after a
/// check interval of 10 us in which the leader's CPU clock stood still. So the look is `valid`
/// when a helper (not the leader) ran slot 1, the look came within 150 us of a moment before
/// that slot ended (the helper's spin started later), and the leader, by its own clock, was off
/// the cores for less than 10 us since that moment. A valid look should find the helper awake.
helper_look look_at_spinning_leader(cpu::thread_team& team) {
  using clock = std::chrono::steady_clock;
  struct moment {
    clock::time_point wall;
    double cpu;  // the leader's CPU time, read just after `wall`
  };
  clockid_t leader_clock{};
  pthread_getcpuclockid(pthread_self(), &leader_clock);
  const auto now = [&] { return moment{clock::now(), cpu_us(leader_clock)}; };
  const auto us_since = [](const moment& m) {
    return std::chrono::duration<double, std::micro>(clock::now() - m.wall).count();
  };
  std::atomic<bool> slot1_done{false};
  std::thread::id slot1_thread;
  const moment start = now();
  moment before_slot1_end = start;
  team.run([&](int slot) {
    if (slot == 1) {
      slot1_thread = std::this_thread::get_id();
      slot1_done = true;
      return;
    }
    // Spin (not yield: the leader must stay on its core) until the helper takes slot 1. The
    // moment read before the last check that saw slot 1 unfinished precedes the slot's end.
    for (moment checked = start; !slot1_done && us_since(start) < 5000;) {
      before_slot1_end = checked;
      checked = now();
    }
  });
  while (us_since(before_slot1_end) < 60) {
  }
  const bool asleep = team.num_sleeping() == 1;
  const moment look = now();
  const double wall =
      std::chrono::duration<double, std::micro>(look.wall - before_slot1_end.wall).count();
  const double off_cores = wall - (look.cpu - before_slot1_end.cpu);
  const bool helper_ran = slot1_thread != std::this_thread::get_id();
  return {helper_ran && wall < 150 && off_cores < 10, asleep};
}

TEST(thread_team, a_helper_keeps_spinning_while_its_leader_runs) {
  cpu::thread_team team(2);
  int valid = 0, asleep = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (valid < 50 && std::chrono::steady_clock::now() < until) {
    const helper_look look = look_at_spinning_leader(team);
    valid += look.valid;
    asleep += look.valid && look.asleep;
  }
  // Fails, rather than skips, on a machine that never kept the leader on its core that long.
  ASSERT_GE(valid, 10) << "looks with the leader on its core in 20 s";
  // A running thread's CPU clock, read from another core, can lag behind its own reading: on a
  // 2-core VM about 1 check interval in 5,000 sees it stand still, and 1 in 100 under a load of
  // 8 (in bursts, up to a third of the looks of a run). A helper that ignores its running
  // leader sleeps in every look.
  EXPECT_LT(2 * asleep, valid) << asleep << " of " << valid
                               << " looks with the leader on its core found the helper asleep";
}

/// The cores the calling thread may run on.
std::vector<int> cores_of_this_thread() {
  cpu_set_t set;
  std::vector<int> cores;
  if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return cores;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

// --cpu-bind cores: a bound team runs its leader on its first core and its helper on the
// second (slot 1 is made to run on the helper: slot 0, the leader's, waits for it); a team
// made without cores leaves its threads where the OS puts them. Run on a thread of its own, so
// that the test binary's main thread stays unbound (a main thread never binds itself).
TEST(thread_team, bound_teams_put_each_thread_on_a_core_of_its_own) {
  if (cpu::usable_cores() < 2) GTEST_SKIP() << "one core: nothing to bind apart";
  std::thread([] {
    const std::vector<int> process = cores_of_this_thread();
    cpu::thread_team bound(2, {process[0], process[1]});
    EXPECT_EQ(bound.cores(), (std::vector<int>{process[0], process[1]}));
    EXPECT_EQ(cores_of_this_thread(), (std::vector<int>{process[0]})) << "the leader's core";
    for (int round = 0; round < 20; ++round) {
      std::atomic<bool> helper_ran{false};
      std::vector<int> helper_cores;
      bound.run([&](int slot) {
        if (slot == 1) {
          helper_cores = cores_of_this_thread();
          helper_ran.store(true);
          return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!helper_ran.load() && std::chrono::steady_clock::now() < deadline)
          std::this_thread::yield();
      });
      ASSERT_TRUE(helper_ran.load());
      EXPECT_EQ(helper_cores, (std::vector<int>{process[1]})) << "round " << round;
    }
  }).join();
  std::thread([] {
    const std::vector<int> before = cores_of_this_thread();
    cpu::thread_team unbound(2);
    EXPECT_TRUE(unbound.cores().empty());
    std::vector<int> helper_cores;
    unbound.run([&](int slot) {
      if (slot == 1) helper_cores = cores_of_this_thread();
    });
    EXPECT_EQ(cores_of_this_thread(), before);
    if (!helper_cores.empty()) {
      EXPECT_EQ(helper_cores, before);
    }
  }).join();
}

// The team of a thread that runs ops takes its cores from the process's mask once binding is
// on (this_thread_team, as a worker's thread makes it).
TEST(thread_team, this_thread_team_binds_when_binding_is_on) {
  if (cpu::usable_cores() < 2) GTEST_SKIP() << "one core: nothing to bind apart";
  const threads_guard guard;
  cpu::set_num_threads(2);
  std::thread([] {
    cpu::set_core_binding(true);
    const std::vector<int>& cores = cpu::this_thread_team().cores();
    cpu::set_core_binding(false);
    ASSERT_EQ(cores.size(), 2u);
    EXPECT_NE(cores[0], cores[1]);
    EXPECT_EQ(cores_of_this_thread(), (std::vector<int>{cores[0]}));
  }).join();
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

// Every item once, for every team size, chunk and length; each slot takes the items of its own
// share from the front, in order, and all of them before any other share's.
TEST(thread_team, stealing_loop_covers_everything_each_share_in_order) {
  threads_guard guard;
  for (int threads : {1, 2, 3, 4}) {
    cpu::set_num_threads(threads);
    for (int64_t n : {1, 5, 64, 257, 1000})
      for (int64_t chunk : {1, 3, 16}) {
        std::vector<std::atomic<int>> hits(n);
        std::vector<std::vector<int64_t>> taken(threads);
        cpu::parallel_for_stealing(n, chunk, [&](int slot, int64_t i) {
          ++hits[i];
          taken[slot].push_back(i);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << chunk << " at " << i;
        const int64_t chunks = (n + chunk - 1) / chunk;
        for (int slot = 0; slot < threads; ++slot) {
          const int64_t own_begin = chunks * slot / threads * chunk;
          const int64_t own_end = std::min(n, chunks * (slot + 1) / threads * chunk);
          int64_t next_own = own_begin;
          bool took_another = false;
          for (int64_t i : taken[slot]) {
            if (i >= own_begin && i < own_end) {
              ASSERT_FALSE(took_another) << "slot " << slot << " item " << i;
              ASSERT_EQ(i, next_own++) << "slot " << slot;
            } else {
              took_another = true;
            }
          }
        }
      }
  }
}

// A member held in an item of its share leaves the rest of that share to the other: item
// n / 2 (the first of the second share) is held until every other item is done, which only
// stealing can do while it is held. (Without stealing it waits out the safety limit.)
TEST(thread_team, stealing_loop_takes_a_held_members_share) {
  threads_guard guard;
  cpu::set_num_threads(2);
  const int64_t n = 64;
  std::atomic<int64_t> done{0};
  bool released_by_the_others = false;
  cpu::parallel_for_stealing(n, 1, [&](int, int64_t i) {
    if (i == n / 2) {
      const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (done.load() < n - 1 && std::chrono::steady_clock::now() < limit)
        std::this_thread::yield();
      released_by_the_others = done.load() == n - 1;
    }
    ++done;
  });
  EXPECT_EQ(done.load(), n);
  EXPECT_TRUE(released_by_the_others);
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

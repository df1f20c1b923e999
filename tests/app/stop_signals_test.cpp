// The bounded shutdown of serve and worker, each case in a forked child (it ends the process):
// a shutdown that hangs ends at the bound with status 1, and a second stop signal ends it at
// once.
#include "app/stop_signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>

namespace actorllm::app {
namespace {

using clock_type = std::chrono::steady_clock;

/// Waits for `child` and returns its exit status, or -1 if it did not exit normally.
int exit_status_of(pid_t child) {
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

TEST(stop_signals, a_shutdown_that_hangs_ends_at_the_bound) {
  const auto start = clock_type::now();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    catch_stop_signals();
    bound_shutdown("stop_signals_test", std::chrono::seconds(1));
    for (;;) pause();  // the shutdown that never finishes
  }
  EXPECT_EQ(exit_status_of(child), 1);
  const auto elapsed = clock_type::now() - start;
  EXPECT_GE(elapsed, std::chrono::milliseconds(900));
  EXPECT_LT(elapsed, std::chrono::seconds(30));
}

TEST(stop_signals, a_second_signal_ends_the_shutdown_at_once) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    catch_stop_signals();
    std::raise(SIGTERM);  // the first signal: a shutdown begins
    if (!stop_requested()) _exit(3);
    bound_shutdown("stop_signals_test", std::chrono::seconds(600));
    const char go = 1;
    if (write(ready[1], &go, 1) != 1) _exit(4);
    for (;;) pause();
  }
  char go = 0;
  ASSERT_EQ(read(ready[0], &go, 1), 1);
  const auto start = clock_type::now();
  kill(child, SIGTERM);  // the second
  EXPECT_EQ(exit_status_of(child), 1);
  EXPECT_LT(clock_type::now() - start, std::chrono::seconds(30));  // not the 600 s bound
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace actorllm::app

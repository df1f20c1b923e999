#include "app/stop_signals.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace actorllm::app {
namespace {

std::atomic<int> num_stop_signals{0};  // lock-free: written from the signal handler

void on_stop_signal(int) {
  num_stop_signals.fetch_add(1);
}

}  // namespace

void catch_stop_signals() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

bool stop_requested() {
  return num_stop_signals.load() > 0;
}

void bound_shutdown(const char* who, std::chrono::seconds limit) {
  const int signals_so_far = num_stop_signals.load();
  std::thread([who, limit, signals_so_far] {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      if (num_stop_signals.load() > signals_so_far) {
        std::fprintf(stderr, "%s: a second stop signal: exiting now\n", who);
        std::_Exit(1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::fprintf(stderr, "%s: the shutdown did not finish within %lld s: exiting now\n", who,
                 static_cast<long long>(limit.count()));
    std::_Exit(1);
  }).detach();
}

}  // namespace actorllm::app

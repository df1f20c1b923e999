// tcp_floor_bench: what the kernel alone charges for streaming one token to each of many
// clients over loopback TCP, the floor under any HTTP server's per-token cost on this machine.
//
// A writer thread sends one SSE-sized payload to each of --streams connections per round (a
// served step at one token per chunk), one send() per connection, then sleeps until the next
// round (--step-us, a served step's length). A reader thread waits in epoll_wait and reads each
// ready connection once per wake-up, as a client that reads whatever has arrived. No HTTP, no
// JSON, no actors: each thread's CPU time (CLOCK_THREAD_CPUTIME_ID) per payload is the kernel's
// send and receive path plus one syscall each, and is what bench/cpu_ratios.sh sets against
// the model's own CPU per token for figure (c).
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.hpp"
#include "config/flag_parser.hpp"

namespace {

struct options {
  int streams = 32;
  int rounds = 2000;
  int bytes = 225;  // a stories260K completion chunk (219 bytes) in its HTTP chunk framing
  int step_us = 1000;
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string(what) + ": " + std::strerror(errno));
}

/// `n` connected loopback TCP pairs: first the writer's ends, then the reader's.
std::pair<std::vector<int>, std::vector<int>> connect_pairs(int n) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  check(listener >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "bind");
  check(listen(listener, n) == 0, "listen");
  socklen_t len = sizeof addr;
  check(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0, "getsockname");
  std::vector<int> writers, readers;
  const int one = 1;
  for (int i = 0; i < n; ++i) {
    const int reader = socket(AF_INET, SOCK_STREAM, 0);
    check(reader >= 0, "socket");
    check(connect(reader, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0, "connect");
    const int writer = accept(listener, nullptr, nullptr);
    check(writer >= 0, "accept");
    setsockopt(writer, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // as the server sets it
    fcntl(reader, F_SETFL, fcntl(reader, F_GETFL) | O_NONBLOCK);
    writers.push_back(writer);
    readers.push_back(reader);
  }
  close(listener);
  return {writers, readers};
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  actorllm::flag_parser flags("usage: tcp_floor_bench [options]",
                              "The kernel's CPU per streamed token over loopback TCP: one send "
                              "per connection per round, one read per ready connection.");
  flags.add_number("--streams", "connections, each sent one payload per round", o.streams);
  flags.add_number("--rounds", "rounds (served steps)", o.rounds);
  flags.add_number("--bytes", "payload bytes per send", o.bytes);
  flags.add_number("--step-us", "microseconds from one round's start to the next", o.step_us);
  if (const auto error = flags.parse(argc, argv)) {
    std::fprintf(stderr, "tcp_floor_bench: %s\n", error->c_str());
    return 2;
  }
  if (flags.help_requested()) {
    std::printf("%s", flags.help().c_str());
    return 0;
  }
  try {
    auto [writers, readers] = connect_pairs(o.streams);
    const int64_t expected = int64_t(o.streams) * o.rounds * o.bytes;

    const int epoll = epoll_create1(0);
    check(epoll >= 0, "epoll_create1");
    for (int fd : readers) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      check(epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &ev) == 0, "epoll_ctl");
    }
    double reader_cpu = 0;  // written by the reader, read after it is joined
    int64_t reads = 0, wakeups = 0;
    std::thread reader([&] {
      std::vector<epoll_event> events(readers.size());
      std::vector<char> buffer(1 << 16);
      int64_t received = 0;
      const double cpu0 = thread_cpu_seconds();
      while (received < expected) {
        const int ready = epoll_wait(epoll, events.data(), static_cast<int>(events.size()), -1);
        if (ready < 0 && errno == EINTR) continue;
        check(ready >= 0, "epoll_wait");
        ++wakeups;
        for (int i = 0; i < ready; ++i) {
          const ssize_t got = recv(events[i].data.fd, buffer.data(), buffer.size(), 0);
          if (got > 0) received += got, ++reads;
        }
      }
      reader_cpu = thread_cpu_seconds() - cpu0;
    });

    const std::string payload(o.bytes, 'x');
    const double cpu0 = thread_cpu_seconds();
    const double wall0 = actorllm::bench::now_seconds();
    auto next = std::chrono::steady_clock::now();
    for (int r = 0; r < o.rounds; ++r) {
      for (int fd : writers)
        check(send(fd, payload.data(), payload.size(), MSG_NOSIGNAL) == o.bytes, "send");
      next += std::chrono::microseconds(o.step_us);
      std::this_thread::sleep_until(next);
    }
    const double writer_cpu = thread_cpu_seconds() - cpu0;
    reader.join();
    const double wall = actorllm::bench::now_seconds() - wall0;
    for (int fd : writers) close(fd);
    for (int fd : readers) close(fd);
    close(epoll);

    const double payloads = double(o.streams) * o.rounds;
    nlohmann::json row = {
        {"streams", o.streams},
        {"rounds", o.rounds},
        {"bytes", o.bytes},
        {"step_us", o.step_us},
        {"writer_us_per_token", 1e6 * writer_cpu / payloads},
        {"reader_us_per_token", 1e6 * reader_cpu / payloads},
        {"kernel_us_per_token", 1e6 * (writer_cpu + reader_cpu) / payloads},
        {"reads_per_token", double(reads) / payloads},
        {"tokens_per_wakeup", payloads / double(wakeups)},
        {"wall_s", wall},
    };
    actorllm::bench::print_report("loopback TCP floor: CPU per streamed token (sender + receiver)",
                                  {"streams", "bytes", "writer_us_per_token", "reader_us_per_token",
                                   "kernel_us_per_token", "tokens_per_wakeup"},
                                  nlohmann::json::array({row}));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tcp_floor_bench: %s\n", e.what());
    return 1;
  }
}

#include "kernels/cpu/thread_team.hpp"

#include <immintrin.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>

namespace actorllm::cpu {

namespace {

/// How long an idle helper spins before it sleeps. Longer than any gap between the loops of
/// one forward pass (a few microseconds of serial code), much shorter than the gap between
/// two steps of the actor engine, where the other threads of the process need the core.
constexpr auto idle_spin = std::chrono::microseconds(200);

/// How long the caller spins for slots still running on helpers before it also yields its
/// core: a helper that was preempted mid-slot needs a core back to finish.
constexpr auto finish_spin = std::chrono::microseconds(50);

/// How often a spinning helper checks that the leader is running (one syscall each).
constexpr auto leader_check = std::chrono::microseconds(10);

thread_local bool inside_team_body = false;

/// Set once at start-up (engine setup, a benchmark's flags), read by every thread that leads a
/// team.
std::atomic<int> configured_threads{0};

std::vector<int> affinity_cores() {
  std::vector<int> cores;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cores.push_back(c);
  return cores;
}

/// The cores this process may run on, in order: read once at load, on the main thread before
/// any thread is bound (a bound thread's own mask is its one core).
const std::vector<int> process_cores = affinity_cores();

std::atomic<bool> bind_to_cores{false};
std::atomic<int> next_bound_core{0};  // the first of process_cores the next bound team takes

/// Binds the calling thread to `core` (where the OS allows: a failure leaves it unbound).
void bind_this_thread(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/// `count` cores for a new team when binding is on, else none.
std::vector<int> cores_for_team(int count) {
  if (!bind_to_cores.load() || process_cores.empty()) return {};
  const int first = next_bound_core.fetch_add(count);
  std::vector<int> cores(count);
  for (int i = 0; i < count; ++i)
    cores[i] = process_cores[(first + i) % static_cast<int>(process_cores.size())];
  return cores;
}

/// OpenBLAS (the OpenMP build) takes its thread count from the caller's OpenMP setting: one,
/// so that a GEMM called from a slot works on that slot's share alone.
void make_blas_single_threaded() {
  omp_set_num_threads(1);
}

/// Spins until pred() holds or `budget` has passed; true if pred() held.
template <class Pred>
bool spin_until(Pred pred, std::chrono::microseconds budget) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      _mm_pause();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

}  // namespace

thread_team::thread_team(int num_threads, std::vector<int> cores) : cores_(std::move(cores)) {
  if (pthread_getcpuclockid(pthread_self(), &leader_clock_) != 0) leader_clock_ = clockid_t(-1);
  if (static_cast<int>(cores_.size()) != num_threads) cores_.clear();
  // The process's main thread stays unbound: the threads it starts later (the actors', the
  // network's) would inherit its one core.
  if (!cores_.empty() && gettid() != getpid()) bind_this_thread(cores_[0]);
  for (int member = 1; member < num_threads; ++member)
    helpers_.emplace_back([this, member] { helper_loop(cores_.empty() ? -1 : cores_[member]); });
}

thread_team::~thread_team() {
  stopping_.store(true);
  const uint64_t next = (state_.load() >> slot_bits) + 1;
  state_.store(next << slot_bits | slot_mask);  // a new generation with nothing to claim
  state_.notify_all();
  for (auto& t : helpers_) t.join();
}

void thread_team::run(function_ref<void(int)> body) {
  if (helpers_.empty() || inside_team_body) {
    for (int slot = 0; slot < size(); ++slot) body(slot);
    return;
  }
  const uint64_t generation = (state_.load(std::memory_order_relaxed) >> slot_bits) + 1;
  body_.store(&body, std::memory_order_relaxed);
  slots_done_.store(0, std::memory_order_relaxed);
  state_.store(generation << slot_bits | 1);  // seq_cst: publishes body_, orders num_sleeping_
  if (num_sleeping_.load() > 0) state_.notify_all();
  inside_team_body = true;
  body(0);
  work_on(generation);
  inside_team_body = false;
  const int helper_slots = size() - 1;
  auto all_done = [&] { return slots_done_.load(std::memory_order_acquire) == helper_slots; };
  while (!spin_until(all_done, finish_spin)) std::this_thread::yield();
}

int64_t thread_team::leader_cpu_ns() const {
  timespec ts{};
  if (leader_clock_ == clockid_t(-1) || clock_gettime(leader_clock_, &ts) != 0) return -1;
  return int64_t(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void thread_team::work_on(uint64_t generation) {
  uint64_t state = state_.load(std::memory_order_acquire);
  while ((state >> slot_bits) == generation && static_cast<int>(state & slot_mask) < size()) {
    // Read before the claim: if the claim succeeds the run is still unfinished, so the body
    // cannot have been replaced by a later run's.
    const auto* body = body_.load(std::memory_order_acquire);
    if (!state_.compare_exchange_weak(state, state + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      continue;
    (*body)(static_cast<int>(state & slot_mask));
    slots_done_.fetch_add(1, std::memory_order_release);
    state = state_.load(std::memory_order_acquire);
  }
}

template <class Pred>
bool thread_team::spin_while_leader_runs(Pred pred) const {
  int64_t leader_cpu = leader_cpu_ns();
  if (leader_cpu < 0) return spin_until(pred, idle_spin);  // no clock: the plain idle spin
  // The idle spin in slices of one check interval, with the leader's clock read between them.
  for (auto spun = std::chrono::microseconds(0); spun < idle_spin; spun += leader_check) {
    if (spin_until(pred, leader_check)) return true;
    const int64_t cpu = leader_cpu_ns();
    if (cpu == leader_cpu) return pred();  // the leader has not run since the last check
    leader_cpu = cpu;
  }
  return pred();
}

void thread_team::helper_loop(int core) {
  pthread_setname_np(pthread_self(), "actorllm.math");  // what `top -H` shows
  if (core >= 0) bind_this_thread(core);
  make_blas_single_threaded();
  inside_team_body = true;  // a helper never leads a team of its own
  uint64_t seen = 0;        // the generation last worked on
  for (;;) {
    auto started = [&] { return (state_.load(std::memory_order_acquire) >> slot_bits) != seen; };
    if (!spin_while_leader_runs(started)) {
      num_sleeping_.fetch_add(1);
      // Dekker pair with run(): either run() sees the sleeper and notifies, or this loop sees
      // the new generation and does not wait.
      for (uint64_t state = state_.load(); (state >> slot_bits) == seen; state = state_.load())
        state_.wait(state);
      num_sleeping_.fetch_sub(1);
    }
    if (stopping_.load()) return;
    seen = state_.load(std::memory_order_acquire) >> slot_bits;
    work_on(seen);
  }
}

int usable_cores() {
  if (!process_cores.empty()) return static_cast<int>(process_cores.size());
  return std::max(1u, std::thread::hardware_concurrency());
}

void set_core_binding(bool bind) {
  bind_to_cores.store(bind);
}

void set_num_threads(int num_threads) {
  configured_threads.store(num_threads > 0 ? num_threads : usable_cores());
}

int num_threads() {
  const int configured = configured_threads.load();
  return configured > 0 ? configured : usable_cores();
}

thread_team& this_thread_team() {
  thread_local std::unique_ptr<thread_team> team;
  const int wanted = num_threads();
  if (!team || team->size() != wanted) {
    team.reset();
    make_blas_single_threaded();
    team = std::make_unique<thread_team>(wanted, cores_for_team(wanted));
  }
  return *team;
}

void parallel_for(int64_t n, int64_t grain, int64_t serial_below,
                  function_ref<void(int64_t, int64_t)> body) {
  if (n <= 0) return;
  if (n <= serial_below || inside_team_body) return body(0, n);
  thread_team& team = this_thread_team();
  const int64_t num_chunks = (n + grain - 1) / grain;
  const int64_t chunks_per_slot = (num_chunks + team.size() - 1) / team.size();
  team.run([&](int slot) {
    const int64_t begin = slot * chunks_per_slot * grain;
    const int64_t end = std::min(n, begin + chunks_per_slot * grain);
    if (begin < end) body(begin, end);
  });
}

namespace {

/// A slot's share of parallel_for_stealing's chunks: the next one from the front (its owner's)
/// and the end (a thief takes from there, downwards), in one word so that both move by one
/// compare-and-swap. On a line of its own.
struct alignas(64) chunk_share {
  std::atomic<uint64_t> bounds;
  static uint64_t pack(uint32_t front, uint32_t back) { return uint64_t(front) << 32 | back; }
  static uint32_t front(uint64_t b) { return static_cast<uint32_t>(b >> 32); }
  static uint32_t back(uint64_t b) { return static_cast<uint32_t>(b); }

  /// The owner's next chunk from the front, or false once none is left.
  bool take_front(uint32_t& chunk) {
    uint64_t b = bounds.load(std::memory_order_relaxed);
    while (front(b) < back(b))
      if (bounds.compare_exchange_weak(b, pack(front(b) + 1, back(b)), std::memory_order_relaxed)) {
        chunk = front(b);
        return true;
      }
    return false;
  }
  /// A thief's chunk from the back, or false once none is left.
  bool take_back(uint32_t& chunk) {
    uint64_t b = bounds.load(std::memory_order_relaxed);
    while (front(b) < back(b))
      if (bounds.compare_exchange_weak(b, pack(front(b), back(b) - 1), std::memory_order_relaxed)) {
        chunk = back(b) - 1;
        return true;
      }
    return false;
  }
  uint32_t left() const {
    const uint64_t b = bounds.load(std::memory_order_relaxed);
    return front(b) < back(b) ? back(b) - front(b) : 0;
  }
};

/// Slots beyond this share parallel_for_dynamic's counter instead.
constexpr int max_stealing_slots = 64;

}  // namespace

void parallel_for_stealing(int64_t n, int64_t chunk, function_ref<void(int, int64_t)> body) {
  if (n <= 0) return;
  const int64_t num_chunks = (n + chunk - 1) / chunk;
  if (inside_team_body || num_chunks > int64_t(std::numeric_limits<uint32_t>::max()))
    return parallel_for_dynamic(n, chunk, body);
  thread_team& team = this_thread_team();
  if (team.size() > max_stealing_slots) return parallel_for_dynamic(n, chunk, body);
  const int slots = team.size();
  chunk_share shares[max_stealing_slots];
  for (int s = 0; s < slots; ++s)
    shares[s].bounds.store(chunk_share::pack(static_cast<uint32_t>(num_chunks * s / slots),
                                             static_cast<uint32_t>(num_chunks * (s + 1) / slots)),
                           std::memory_order_relaxed);
  const auto run_chunk = [&](int slot, uint32_t c) {
    const int64_t begin = int64_t(c) * chunk;
    for (int64_t i = begin; i < std::min(n, begin + chunk); ++i) body(slot, i);
  };
  team.run([&](int slot) {
    uint32_t c;
    while (shares[slot].take_front(c)) run_chunk(slot, c);
    for (;;) {
      int victim = -1;
      uint32_t most = 0;
      for (int s = 0; s < slots; ++s)
        if (const uint32_t left = shares[s].left(); left > most) {
          most = left;
          victim = s;
        }
      if (victim < 0) return;
      if (shares[victim].take_back(c)) run_chunk(slot, c);
    }
  });
}

void parallel_for_dynamic(int64_t n, int64_t chunk, function_ref<void(int, int64_t)> body) {
  if (n <= 0) return;
  if (inside_team_body) {
    for (int64_t i = 0; i < n; ++i) body(0, i);
    return;
  }
  std::atomic<int64_t> next{0};
  this_thread_team().run([&](int slot) {
    for (;;) {
      const int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) return;
      for (int64_t i = begin; i < std::min(n, begin + chunk); ++i) body(slot, i);
    }
  });
}

}  // namespace actorllm::cpu

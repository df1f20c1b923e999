#pragma once
/// The CPU math's own threads. Every thread that runs ops (a worker actor's thread, the
/// spine's main thread) leads a team of its own: the caller takes the first share of each loop
/// and the helpers are parked threads that wake for the others. Between the back-to-back loops of
/// one forward pass the helpers spin; after a short idle they sleep, so that between steps the
/// cores belong to the actors, the network and the detokenizer again. A helper also sleeps as
/// soon as its leader has been off the cores for a few microseconds (preempted by the network
/// or the load generator on a full machine, or blocked between steps): the next loop cannot
/// start before the leader runs, so spinning then only keeps the leader from a core. In a
/// served stories260K run this halved the helpers' spinning (10.5 % to 4.7 % of the server's
/// samples); alone on the machine the leader never stops, and nothing changes.
///
/// Why not OpenMP's pool: libgomp cuts its spin to about a hundred iterations whenever it
/// manages more threads than the machine has cores. That is always the case once a thread
/// other than main() runs parallel regions on every core (main counts as one already), and
/// then every loop of the forward pays a futex sleep and wake per thread: on two cores the
/// actor engine lost a third of its throughput to that. Here the spin policy is ours.
///
/// OpenBLAS is called single-threaded from each thread on its slice of the work, so it
/// never starts an OpenMP team of its own.
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace actorllm::cpu {

/// A non-owning reference to a callable, for the loop bodies of the ops: a std::function
/// would allocate for a lambda that captures more than two pointers, on every op of every
/// step. The callable must outlive the call it is passed to (always so for a loop body).
template <class Signature>
class function_ref;

template <class R, class... Args>
class function_ref<R(Args...)> {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, function_ref>>>
  function_ref(F&& f)  // NOLINT: implicit, as std::function is
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

/// Below this many multiply-adds in one op, a wake-up of the helpers costs more than it saves.
constexpr int64_t min_parallel_macs = int64_t(1) << 15;

class thread_team {
 public:
  /// num_threads slots in all, the calling thread's included (so num_threads - 1 helpers).
  /// With `cores` (num_threads of them), the calling thread is bound to cores[0] (unless it is
  /// the process's main thread, whose later threads would inherit the binding) and helper i to
  /// cores[i]; empty: the OS places them.
  explicit thread_team(int num_threads, std::vector<int> cores = {});
  ~thread_team();
  thread_team(const thread_team&) = delete;
  thread_team& operator=(const thread_team&) = delete;

  int size() const { return static_cast<int>(helpers_.size()) + 1; }
  /// The cores the team's threads are bound to (empty: not bound), the leader's first.
  const std::vector<int>& cores() const { return cores_; }
  /// Helpers blocked until the next run (for tests).
  int num_sleeping() const { return num_sleeping_.load(); }

  /// Runs body(slot) once for every slot in [0, size()) and returns when all are done. The
  /// caller runs slot 0, then claims every slot that no helper has started yet: on a machine
  /// shared with the network and the actors, a helper that the OS has descheduled delays
  /// nothing, its share runs on the caller instead. Each slot runs on one thread, which one is
  /// not fixed. A body that calls run() again (a nested loop) runs that loop on its own thread
  /// alone.
  void run(function_ref<void(int slot)> body);

 private:
  void helper_loop(int core);
  /// Spins until pred() holds (true), or returns false once the idle spin is over or the
  /// leader has been off every core for a whole check interval: then the helper should sleep,
  /// for its spinning only keeps the leader, or the network, from a core.
  template <class Pred>
  bool spin_while_leader_runs(Pred pred) const;
  /// Claims and runs slots of run number `generation` until none is left or a newer run began.
  void work_on(uint64_t generation);

  static constexpr int slot_bits = 16;
  static constexpr uint64_t slot_mask = (uint64_t(1) << slot_bits) - 1;

  /// The leader's CPU time in ns, or -1 where its clock cannot be read.
  int64_t leader_cpu_ns() const;

  clockid_t leader_clock_{};  // the CPU clock of the thread that made the team: the leader
  std::vector<int> cores_;
  std::vector<std::thread> helpers_;
  // The body of the current run. Written before the run's generation is published, read by a
  // helper before it claims a slot: a successful claim proves the read was of this run's body.
  std::atomic<const function_ref<void(int)>*> body_{nullptr};
  std::atomic<uint64_t> state_{0};    // generation << slot_bits | next unclaimed slot
  std::atomic<int> slots_done_{0};    // slots 1.. of the current run that have finished
  std::atomic<int> num_sleeping_{0};  // helpers blocked in state_.wait()
  std::atomic<bool> stopping_{false};
};

/// Number of threads the CPU ops use per calling thread. 0: all cores.
void set_num_threads(int num_threads);
int num_threads();
/// The cores this process may run on (its affinity mask at load, as `taskset` leaves it; not
/// the calling thread's, which binding narrows).
int usable_cores();

/// Whether each team made from now on binds its threads to cores (--cpu-bind cores), as
/// vLLM's CPU backend binds its OpenMP threads: the leader to the team's first core, each
/// helper to one of the others. Teams take consecutive cores of the process's affinity mask
/// (usable_cores'), in the order they are made, wrapping around: one
/// worker's team on a machine of its own gets every core once. Off by default: on a machine
/// shared with other processes the OS's placement moves a math thread off a busy core, which a
/// bound thread cannot.
void set_core_binding(bool bind);

/// The calling thread's team, made on first use with num_threads() slots (and remade if
/// that number changed since).
thread_team& this_thread_team();

/// Splits [0, n) into one contiguous range per slot, each a multiple of `grain` long
/// except the last, and calls body(begin, end) for every non-empty range. Runs on the caller
/// alone when n is at most `serial_below` (a loop too small to be worth a wake-up).
void parallel_for(int64_t n, int64_t grain, int64_t serial_below,
                  function_ref<void(int64_t begin, int64_t end)> body);

/// Hands out [0, n) in chunks of `chunk` from a shared counter, for items of uneven cost;
/// body(slot, i) is called once per item.
void parallel_for_dynamic(int64_t n, int64_t chunk, function_ref<void(int slot, int64_t i)> body);

/// As parallel_for_dynamic, with each slot owning a contiguous share of [0, n): a slot takes
/// its own chunks in order from the front, so that its items follow one another (where items
/// lie end to end in memory, one stream a slot, which the prefetchers follow from chunk to
/// chunk), and once its share is done takes chunks from the back of the share with the most
/// left, so a preempted or slower member still takes fewer. body(slot, i) is called once per
/// item.
void parallel_for_stealing(int64_t n, int64_t chunk, function_ref<void(int slot, int64_t i)> body);

}  // namespace actorllm::cpu

#pragma once
/// CAF 0.17 keeps, per thread, a reference to the logger of the last actor system that thread
/// spawned an actor in (a scoped_actor is one), and an actor_system's destructor waits until
/// every reference to its logger is gone. A thread outside the actors (the server's I/O
/// threads, the model loader, main) that spawns into an engine must drop that reference when
/// done, or that engine can never be destroyed while the thread lives: a server of several
/// models would hang unloading one. Hold one of these for the span of such a call.
#include <caf/logger.hpp>

namespace actorllm {

struct actor_thread_release {
  actor_thread_release() = default;
  actor_thread_release(const actor_thread_release&) = delete;
  actor_thread_release& operator=(const actor_thread_release&) = delete;
  ~actor_thread_release() { caf::logger::set_current_actor_system(nullptr); }
};

}  // namespace actorllm

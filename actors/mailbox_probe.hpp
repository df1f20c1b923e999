#pragma once
/// An actor's mailbox depth, sampled by the actor itself on a timer: only the owner may read
/// its mailbox, so each actor sends itself `sample` every `every` and reports the depth it
/// sees. A gauge fed this way follows a mailbox that fills between the actor's own events
/// (a gateway under a burst, a worker behind a queue of plans); an actor busy in one long
/// handler reports when that handler returns.
///
///   state.probe = probe;  probe.start(self);        // at spawn
///   [self](sample_atom) { self->state.probe.sample(self); }
#include <chrono>
#include <cstddef>
#include <functional>

#include "actors/messages.hpp"

namespace actorllm {

struct mailbox_probe {
  std::function<void(size_t depth)> report;  ///< empty: the actor reports nothing
  std::chrono::milliseconds every{500};

  template <class Self>
  void start(Self* self) const {
    if (report) self->send(self, sample_atom::value);
  }
  template <class Self>
  void sample(Self* self) const {
    if (!report) return;
    report(self->mailbox().size());
    self->delayed_send(self, every, sample_atom::value);
  }
};

}  // namespace actorllm

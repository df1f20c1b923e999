#include "actors/cache_engine/cache_engine_actor.hpp"

namespace actorllm {

cache_engine_actor::behavior_type cache_engine(
    cache_engine_actor::stateful_pointer<cache_engine_state> self,
    std::function<void(const cache_report&, size_t mailbox_depth)> publish, mailbox_probe probe) {
  self->state.publish = std::move(publish);
  self->state.probe = std::move(probe);
  self->state.probe.start(self);
  return {
      [self](cache_atom, const cache_report& report) {
        auto& s = self->state;
        s.last = report;
        s.num_blocks_swapped_in += report.num_swapped_in;
        s.num_blocks_swapped_out += report.num_swapped_out;
        s.num_blocks_copied += report.num_copied;
        if (s.publish) s.publish(report, self->mailbox().size());
      },
      [self](stats_atom) { return self->state.last; },
      [self](sample_atom) { self->state.probe.sample(self); },
  };
}

}  // namespace actorllm

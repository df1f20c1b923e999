#include "actors/request_router/stream_coalescer.hpp"

#include <utility>

#include "common/output_merge.hpp"

namespace actorllm {

std::optional<request_output> stream_coalescer::add(request_output delta) {
  if (interval_ <= 1) return delta;
  if (choices_.size() <= static_cast<size_t>(delta.index)) choices_.resize(delta.index + 1);
  choice_state& c = choices_[delta.index];
  const auto tokens = static_cast<int32_t>(delta.token_ids.size());
  if (c.held) {
    merge_delta(*c.held, delta);
  } else {
    c.held = std::move(delta);
  }
  c.held_tokens += tokens;
  const bool last = c.held->finish != finish_reason::none;
  if (c.started && !last && c.held_tokens < interval_) return std::nullopt;
  c.started = true;
  c.held_tokens = 0;
  return std::exchange(c.held, std::nullopt);
}

}  // namespace actorllm

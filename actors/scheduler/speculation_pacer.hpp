#pragma once
/// When a sequence speculates (speculative decoding): drafts cost a forward slot each, so a
/// sequence whose drafts keep being rejected stops asking for them for a while, then tries
/// again; each failed try doubles the pause.
#include <algorithm>
#include <cstdint>

namespace actorllm {

class speculation_pacer {
 public:
  static constexpr int32_t evidence = 16;    ///< drafts judged at a time
  static constexpr int32_t first_pause = 8;  ///< steps
  static constexpr int32_t longest_pause = 256;

  /// Whether the sequence asks for drafts this step; counts the step of a pause.
  bool speculate_now() {
    if (paused_steps_ == 0) return true;
    --paused_steps_;
    return false;
  }

  /// A verification's outcome: `num_drafts` verified, `num_accepted` of them accepted.
  void record(int32_t num_drafts, int32_t num_accepted, double min_acceptance_rate) {
    drafted_ += num_drafts;
    accepted_ += num_accepted;
    if (drafted_ < evidence) return;
    if (accepted_ < min_acceptance_rate * drafted_) {
      paused_steps_ = next_pause_;
      next_pause_ = std::min(2 * next_pause_, longest_pause);
    } else {
      next_pause_ = first_pause;
    }
    drafted_ = accepted_ = 0;
  }

  bool paused() const { return paused_steps_ > 0; }

 private:
  int32_t drafted_ = 0, accepted_ = 0;  // since the last judgement
  int32_t paused_steps_ = 0;
  int32_t next_pause_ = first_pause;
};

}  // namespace actorllm

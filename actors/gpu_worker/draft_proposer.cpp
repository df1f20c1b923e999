#include "actors/gpu_worker/draft_proposer.hpp"

namespace actorllm {

std::vector<proposal_request> proposals_wanted(const std::vector<batch_sequence>& work,
                                               step_result& result) {
  // Samples come in plan order, one per sampling sequence.
  std::vector<proposal_request> wanted;
  size_t next = 0;
  for (const batch_sequence& s : work) {
    if (s.num_samples <= 0) continue;
    while (next < result.seqs.size() && result.seqs[next].seq != s.seq) ++next;
    if (next == result.seqs.size()) break;
    if (s.num_lookahead > 0) wanted.push_back({&s, &result.seqs[next]});
  }
  return wanted;
}

}  // namespace actorllm

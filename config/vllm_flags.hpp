#pragma once
/// vLLM's launch flags (`vllm serve --help`) that actorllm does not implement as flags of its
/// own, each handled one of two ways so that a script written for vLLM either runs unchanged
/// or stops with a line saying why:
///
///   accepted  the flag, or the values of it, that mean what actorllm does anyway (a note on
///             stderr where the flag asks for something it cannot tune); another value is
///             refused, naming the one that would do;
///   refused   what actorllm does not do, with the reason and what to use instead.
///
/// The flags actorllm implements (--max-num-seqs, --data-parallel-size, ...) are in
/// engine_flags.cpp; README.md's "vLLM's launch flags" lists every one of the three kinds.
#include <string>
#include <vector>

#include "config/flag_parser.hpp"

namespace actorllm {

struct vllm_flag {
  std::string name;
  bool takes_value = false;
  bool refused = false;
  /// Accepted: the values that mean what actorllm does (empty: any value, or a switch).
  std::vector<std::string> values;
  /// Accepted: what actorllm does instead, printed on stderr when given (empty: nothing
  /// to say). Refused: why, and what to use instead.
  std::string note;
};

/// Every vLLM flag handled this way, in `vllm serve --help`'s order of groups.
const std::vector<vllm_flag>& vllm_flags();

/// Adds every one of them to `parser`.
void add_vllm_compatibility_flags(flag_parser& parser);

}  // namespace actorllm

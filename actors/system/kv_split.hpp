#pragma once
/// How the device KV memory of a server's models is split, the rule its startup log states:
/// the models load in order, and each one's pools get an even share of the budget still left
/// among the models still to load (left / models left); what its pools really take is then
/// deducted, so that what one model leaves unused goes to those after it. A model whose own
/// flags fix its pools (--num-gpu-blocks-override, --kv-cache-memory-bytes) takes that much,
/// and is refused, with the numbers, when that is more than is left. Pure bookkeeping.
#include <cstdint>
#include <string>

namespace actorllm {

class kv_split {
 public:
  /// `budget_bytes` for `num_models` models (both >= 0).
  kv_split(int64_t budget_bytes, int32_t num_models);

  /// Bytes the next model's pools may take: an even share of what is left.
  int64_t share() const;
  /// The next model's pools take `bytes`: empty, or why they cannot (nothing is taken then,
  /// and the model counts as done).
  std::string take(int64_t bytes);
  /// The next model does not load: it takes nothing.
  void skip();

  int64_t budget() const { return budget_; }
  int64_t left() const { return left_; }
  int32_t models_left() const { return models_left_; }

 private:
  int64_t budget_;
  int64_t left_;
  int32_t models_left_;
};

/// Bytes as the log shows them: "12.5 MiB".
std::string mib(int64_t bytes);

}  // namespace actorllm

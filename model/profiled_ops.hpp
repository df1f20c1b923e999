#pragma once
/// Where a forward's time goes, op by op: profiled_ops wraps a backend's forward_ops and adds
/// each call's wall time to an op_profile, by what the op is (the projections, attention,
/// norms, the MLP, the LM head). Only for backends whose ops finish when they return (the
/// CPU's): a CUDA op returns once queued.
///
/// An op_profile may be shared by threads (workers of several replicas): its counters are
/// atomic, and a profile is read by snapshot().
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "kernels/forward_ops.hpp"

namespace actorllm {

enum class op_phase {
  embed,         ///< the embedding rows (and those given as embeddings)
  norms,         ///< add_rms_norm, rms_norm
  qkv,           ///< the q, k, v projection, q/k norms, rotary and the KV cache write
  attention,     ///< attention over the paged cache
  o_projection,  ///< the attention output's projection
  mlp,           ///< gate, up, activation, down (or the experts)
  all_reduce,    ///< tensor parallelism's sums
  logits,        ///< the final norm and the LM head (and final hidden rows)
};
inline constexpr std::size_t num_op_phases = 8;

/// "embed", "norms", "qkv", ... as the profile's reports name them.
std::string_view to_string(op_phase phase);

class op_profile {
 public:
  struct snapshot_t {
    std::array<int64_t, num_op_phases> nanoseconds{};
    std::array<int64_t, num_op_phases> calls{};
    int64_t steps = 0;  ///< forwards profiled
  };

  void add(op_phase phase, int64_t nanoseconds) {
    const auto i = static_cast<std::size_t>(phase);
    nanoseconds_[i].fetch_add(nanoseconds, std::memory_order_relaxed);
    calls_[i].fetch_add(1, std::memory_order_relaxed);
  }
  void add_step() { steps_.fetch_add(1, std::memory_order_relaxed); }
  snapshot_t snapshot() const;
  void reset();

 private:
  std::array<std::atomic<int64_t>, num_op_phases> nanoseconds_{};
  std::array<std::atomic<int64_t>, num_op_phases> calls_{};
  std::atomic<int64_t> steps_{0};
};

class profiled_ops final : public forward_ops {
 public:
  profiled_ops(forward_ops& inner, op_profile& profile) : inner_(inner), profile_(profile) {}

  void begin_step(const step_rows& rows) override;
  void embed(op_weight table, float multiplier) override;
  void set_rows(const int32_t* rows, const float* values, int64_t count) override;
  void add_rms_norm(op_weight weight, float eps) override;
  void rms_norm(act_buffer b, op_weight weight, float eps) override;
  void qkv_to_cache(int64_t layer, const op_linear& qkv, const qkv_params& params) override;
  void attention(int64_t layer, const attention_params& params) override;
  void linear(act_buffer in, const op_linear& w, act_buffer out, op_loras lora) override;
  void mlp(const mlp_params& params) override;
  void experts(const experts_params& params, gate_activation activation) override;
  void all_reduce() override;
  void logits(op_weight final_norm, float eps, const op_linear& head, float softcap) override;
  void final_hidden(op_weight final_norm, float eps) override;
  void end_step() override;
  void write(act_buffer b, const float* rows, int64_t count) override;
  void read(act_buffer b, float* rows, int64_t count) override;
  void read_logits(float* out) override;

 private:
  template <class Call>
  void timed(op_phase phase, Call call);

  forward_ops& inner_;
  op_profile& profile_;
};

}  // namespace actorllm

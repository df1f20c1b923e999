#include "model/profiled_ops.hpp"

#include <chrono>

namespace actorllm {

std::string_view to_string(op_phase phase) {
  switch (phase) {
    case op_phase::embed:
      return "embed";
    case op_phase::norms:
      return "norms";
    case op_phase::qkv:
      return "qkv_rotary_cache";
    case op_phase::attention:
      return "attention";
    case op_phase::o_projection:
      return "o_projection";
    case op_phase::mlp:
      return "mlp";
    case op_phase::all_reduce:
      return "all_reduce";
    case op_phase::logits:
      return "lm_head";
  }
  return "?";
}

op_profile::snapshot_t op_profile::snapshot() const {
  snapshot_t out;
  for (std::size_t i = 0; i < num_op_phases; ++i) {
    out.nanoseconds[i] = nanoseconds_[i].load(std::memory_order_relaxed);
    out.calls[i] = calls_[i].load(std::memory_order_relaxed);
  }
  out.steps = steps_.load(std::memory_order_relaxed);
  return out;
}

void op_profile::reset() {
  for (std::size_t i = 0; i < num_op_phases; ++i) {
    nanoseconds_[i].store(0, std::memory_order_relaxed);
    calls_[i].store(0, std::memory_order_relaxed);
  }
  steps_.store(0, std::memory_order_relaxed);
}

template <class Call>
void profiled_ops::timed(op_phase phase, Call call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  profile_.add(phase, std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count());
}

void profiled_ops::begin_step(const step_rows& rows) {
  profile_.add_step();
  inner_.begin_step(rows);
}

void profiled_ops::embed(op_weight table, float multiplier) {
  timed(op_phase::embed, [&] { inner_.embed(table, multiplier); });
}

void profiled_ops::add_rms_norm(op_weight weight, float eps) {
  timed(op_phase::norms, [&] { inner_.add_rms_norm(weight, eps); });
}

void profiled_ops::rms_norm(act_buffer b, op_weight weight, float eps) {
  timed(op_phase::norms, [&] { inner_.rms_norm(b, weight, eps); });
}

void profiled_ops::qkv_to_cache(int64_t layer, const op_linear& qkv, const qkv_params& params) {
  timed(op_phase::qkv, [&] { inner_.qkv_to_cache(layer, qkv, params); });
}

void profiled_ops::attention(int64_t layer, const attention_params& params) {
  timed(op_phase::attention, [&] { inner_.attention(layer, params); });
}

void profiled_ops::linear(act_buffer in, const op_linear& w, act_buffer out, op_loras lora) {
  timed(op_phase::o_projection, [&] { inner_.linear(in, w, out, lora); });
}

void profiled_ops::mlp(const mlp_params& params) {
  timed(op_phase::mlp, [&] { inner_.mlp(params); });
}

void profiled_ops::experts(const experts_params& params, gate_activation activation) {
  timed(op_phase::mlp, [&] { inner_.experts(params, activation); });
}

void profiled_ops::all_reduce() {
  timed(op_phase::all_reduce, [&] { inner_.all_reduce(); });
}

void profiled_ops::logits(op_weight final_norm, float eps, const op_linear& head, float softcap) {
  timed(op_phase::logits, [&] { inner_.logits(final_norm, eps, head, softcap); });
}

void profiled_ops::final_hidden(op_weight final_norm, float eps) {
  timed(op_phase::logits, [&] { inner_.final_hidden(final_norm, eps); });
}

void profiled_ops::end_step() {
  inner_.end_step();
}

void profiled_ops::set_rows(const int32_t* rows, const float* values, int64_t count) {
  timed(op_phase::embed, [&] { inner_.set_rows(rows, values, count); });
}

void profiled_ops::write(act_buffer b, const float* rows, int64_t count) {
  inner_.write(b, rows, count);
}

void profiled_ops::read(act_buffer b, float* rows, int64_t count) {
  inner_.read(b, rows, count);
}

void profiled_ops::read_logits(float* out) {
  inner_.read_logits(out);
}

}  // namespace actorllm

#pragma once
/// The forward ops of one CUDA device with its plain decode steps through CUDA graphs, as vLLM
/// runs them (decode_graphs.hpp has the plan): such a step is padded to its shape; the
/// shape's first step runs op by op (growing every scratch its launches use); the next is
/// captured as the forward issues its ops and launched as one graph at end_step; every later
/// step of the shape stages its rows and launches the graph, and the ops it is then issued do
/// nothing. Any other step goes straight to the ops underneath. Knows no architecture: it
/// records whatever sequence of ops the forward issues.
///
/// A forward whose ops wait on the host inside the step (host routing of experts) must not
/// be captured: give it limits with max_batch 0. Ops on the legacy default stream are never
/// captured (it cannot be).
///
/// Not yet run on a device: the backend-ops table's decode_steps rows through graphs
/// (tests/cuda/backend_ops_cuda_test.cpp) are its proof.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include "kernels/cuda/cuda_forward_ops.cuh"
#include "kernels/cuda/decode_graphs.hpp"
#include "kernels/cuda/device.cuh"
#include "kernels/forward_ops.hpp"

namespace actorllm::cuda {

/// A capture the runtime refused (reported at its end): the step did not run.
struct graph_capture_failed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class graph_forward_ops final : public forward_ops {
 public:
  graph_forward_ops(cuda_forward_ops& ops, const decode_graph_limits& limits);

  void begin_step(const step_rows& rows) override;
  void embed(op_weight table, float multiplier) override;
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
  /// Launches the graph the step captured or replays (a capture that does not instantiate
  /// throws graph_capture_failed; see abandon_capture).
  void end_step() override;
  void write(act_buffer b, const float* rows, int64_t count) override;
  void read(act_buffer b, float* rows, int64_t count) override;
  /// The step's own rows (num_logits of the rows begun), not the padding's.
  void read_logits(float* out) override;

  /// After a step that threw: where it was being captured (an op that cannot be captured, or
  /// a graph that did not instantiate), ends the capture, runs the shape op by op from now on
  /// and returns true; the step did not run and must be issued again. False where no capture
  /// was under way (the step's error is the caller's).
  bool abandon_capture();

  /// The step's logits (its own rows first, then the padding's), float32 on the device.
  float* device_logits() { return ops_.device_logits(); }

  struct counts {
    int64_t captured = 0, replayed = 0;
  };
  counts graphs() const { return counts_; }

 private:
  enum class mode { direct, warm_up, capture, replay };
  bool issuing() const { return mode_ != mode::replay; }

  cuda_forward_ops& ops_;
  decode_graph_limits limits_;
  mode mode_ = mode::direct;
  decode_graph_shape shape_;
  int64_t num_logits_ = 0;  // the step's own
  std::optional<padded_decode_batch> padded_;

  struct captured_graph {
    graph_exec exec;
    std::vector<const void*> addresses;  // cuda_forward_ops::addresses at capture
  };
  std::map<decode_graph_shape, captured_graph> graphs_;
  /// Shapes run once, with the addresses their launches left: captured on the next step of
  /// the shape where nothing has moved since (so the capture allocates nothing).
  std::map<decode_graph_shape, std::vector<const void*>> warm_;
  std::set<decode_graph_shape> uncapturable_;
  counts counts_;
};

}  // namespace actorllm::cuda

#pragma once
/// The feed-forward halves of a layer on the device: a gated MLP, and a mixture of experts
/// routed on the host (one wait for the router's float32 logits per layer: such a step is
/// never captured in a CUDA graph), each expert one GEMM over the rows routed to it, combined
/// on the device. The routing rule is the caller's (the model's).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "kernels/cuda/device.cuh"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/projector.cuh"
#include "kernels/forward_ops.hpp"

namespace actorllm::cuda {

/// out(m, dim) = down(act(gate) * up) of x (m, dim); gate_up rows the gate's then the up's;
/// scratch of (m, 2 width) and (m, width), all of type t. out may be x.
void gated_mlp(projector& p, const void* x, int64_t m, int64_t dim, int64_t width,
               const linear_weight& gate_up, const linear_weight& down, gate_activation activation,
               void* gate_up_scratch, void* act_scratch, void* out, dtype t);

/// One mixture-of-experts layer's weights on the device, all of the activations' type.
struct experts_on_device {
  const void* router = nullptr;            ///< (num_experts, dim)
  const linear_weight* gate_up = nullptr;  ///< (num_experts): (2 width, dim) each
  const linear_weight* down = nullptr;     ///< (num_experts): (dim, width) each
  int64_t num_experts = 0, top_k = 0, width = 0;
  linear_weight shared_gate_up, shared_down;  ///< shared_width 0: no shared expert
  int64_t shared_width = 0;
  const void* shared_gate = nullptr;  ///< (dim)
};

/// Runs experts over x in place, with its scratch (grown on demand) and the host's side of the
/// routing (reused).
class expert_dispatch {
 public:
  /// x (n, dim) = sum over each token's top_k choices of weight * expert(x row), plus the
  /// shared expert scaled by sigmoid(x . shared_gate); `route` picks the choices from the
  /// router's float32 logits. Throws std::invalid_argument on a choice outside the layer.
  void run(projector& p, const experts_on_device& w, const expert_router& route,
           gate_activation activation, void* x, int64_t n, int64_t dim, dtype t);

 private:
  device_buffer router_, router_f32_, rows_, gate_up_, act_, out_, tokens_, row_of_, weights_;
  device_buffer shared_gate_up_, shared_act_, shared_out_, shared_logit_;
  std::vector<float> host_router_, choice_weights_;
  std::vector<int32_t> choice_experts_, grouped_tokens_, row_of_choice_, expert_rows_, next_row_;
};

}  // namespace actorllm::cuda

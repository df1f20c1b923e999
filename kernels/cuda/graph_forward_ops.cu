#include <cuda_runtime_api.h>

#include <stdexcept>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/graph_forward_ops.cuh"

namespace actorllm::cuda {

graph_forward_ops::graph_forward_ops(cuda_forward_ops& ops, const decode_graph_limits& limits)
    : ops_(ops), limits_(limits) {
  // The legacy default stream cannot be captured: on it every step runs op by op.
  if (ops.stream() == nullptr) limits_.max_batch = 0;
}

void graph_forward_ops::begin_step(const step_rows& rows) {
  abandon_capture();  // a capture the last step left open (its caller did not retry)
  mode_ = mode::direct;
  num_logits_ = rows.num_logits;
  const int64_t block_size = ops_.block_size();
  shape_ = decode_graph_shape_of(rows, block_size, limits_);
  if (shape_.num_seqs == 0 || uncapturable_.count(shape_)) return ops_.begin_step(rows);
  // Every launch size comes from the shape: attention is sized for a context filling the
  // padded block table, and reads each sequence's real length on the device.
  padded_.emplace(rows, shape_, block_size);
  ops_.stage(padded_->view(), shape_.blocks_per_seq * block_size);
  const std::vector<const void*> at = ops_.addresses();
  if (auto it = graphs_.find(shape_); it != graphs_.end() && it->second.addresses == at) {
    mode_ = mode::replay;
    return;
  }
  if (auto it = warm_.find(shape_); it != warm_.end() && it->second == at) {
    CUDA_CHECK(cudaStreamBeginCapture(ops_.stream(), cudaStreamCaptureModeThreadLocal));
    mode_ = mode::capture;
    return;
  }
  mode_ = mode::warm_up;
}

void graph_forward_ops::embed(op_weight table, float multiplier) {
  if (issuing()) ops_.embed(table, multiplier);
}

void graph_forward_ops::add_rms_norm(op_weight weight, float eps) {
  if (issuing()) ops_.add_rms_norm(weight, eps);
}

void graph_forward_ops::rms_norm(act_buffer b, op_weight weight, float eps) {
  if (issuing()) ops_.rms_norm(b, weight, eps);
}

void graph_forward_ops::qkv_to_cache(int64_t layer, const op_linear& qkv,
                                     const qkv_params& params) {
  if (issuing()) ops_.qkv_to_cache(layer, qkv, params);
}

void graph_forward_ops::attention(int64_t layer, const attention_params& params) {
  if (issuing()) ops_.attention(layer, params);
}

void graph_forward_ops::linear(act_buffer in, const op_linear& w, act_buffer out, op_loras lora) {
  if (issuing()) ops_.linear(in, w, out, lora);
}

void graph_forward_ops::mlp(const mlp_params& params) {
  if (issuing()) ops_.mlp(params);
}

void graph_forward_ops::experts(const experts_params& params, gate_activation activation) {
  if (issuing()) ops_.experts(params, activation);
}

void graph_forward_ops::all_reduce() {
  if (issuing()) ops_.all_reduce();
}

void graph_forward_ops::logits(op_weight final_norm, float eps, const op_linear& head,
                               float softcap) {
  if (issuing()) ops_.logits(final_norm, eps, head, softcap);
}

void graph_forward_ops::final_hidden(op_weight final_norm, float eps) {
  if (issuing()) ops_.final_hidden(final_norm, eps);
}

void graph_forward_ops::end_step() {
  const cudaStream_t stream = ops_.stream();
  switch (mode_) {
    case mode::direct:
      ops_.end_step();
      return;
    case mode::warm_up:
      ops_.end_step();
      warm_[shape_] = ops_.addresses();
      return;
    case mode::capture: {
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      cudaError_t captured = cudaStreamEndCapture(stream, &graph);
      if (captured == cudaSuccess) captured = cudaGraphInstantiate(&exec, graph, 0);
      if (graph) cudaGraphDestroy(graph);
      if (captured != cudaSuccess) {
        // An unsupported call is reported only here: nothing ran; abandon_capture.
        cudaGetLastError();
        throw graph_capture_failed(std::string("decode graph capture: ") +
                                   cudaGetErrorString(captured));
      }
      captured_graph& g = graphs_[shape_];
      g.exec = graph_exec(exec);
      g.addresses = ops_.addresses();
      ++counts_.captured;
      mode_ = mode::replay;
      [[fallthrough]];
    }
    case mode::replay:
      CUDA_CHECK(cudaGraphLaunch(graphs_.at(shape_).exec.get(), stream));
      ++counts_.replayed;
      return;
  }
}

bool graph_forward_ops::abandon_capture() {
  if (mode_ != mode::capture) return false;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(ops_.stream(), &status) == cudaSuccess &&
      status != cudaStreamCaptureStatusNone) {
    cudaGraph_t broken = nullptr;
    if (cudaStreamEndCapture(ops_.stream(), &broken) == cudaSuccess && broken)
      cudaGraphDestroy(broken);
  }
  cudaGetLastError();
  uncapturable_.insert(shape_);
  graphs_.erase(shape_);
  mode_ = mode::direct;
  return true;
}

void graph_forward_ops::write(act_buffer b, const float* rows, int64_t count) {
  ops_.write(b, rows, count);
}

void graph_forward_ops::read(act_buffer b, float* rows, int64_t count) {
  ops_.read(b, rows, count);
}

void graph_forward_ops::read_logits(float* out) {
  const size_t bytes = static_cast<size_t>(num_logits_ * ops_.vocab()) * sizeof(float);
  if (bytes > 0)
    CUDA_CHECK(
        cudaMemcpyAsync(out, ops_.device_logits(), bytes, cudaMemcpyDeviceToHost, ops_.stream()));
  CUDA_CHECK(cudaStreamSynchronize(ops_.stream()));
}

}  // namespace actorllm::cuda

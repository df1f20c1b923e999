// llama_runner's decode graphs (decode_graphs.hpp): a plain decode step padded to its shape,
// replayed from the graph captured on the shape's first step.
#include <cuda_runtime_api.h>

#include <vector>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/llama_runner.cuh"

namespace actorllm::cuda {

std::vector<const void*> llama_runner::workspace_signature(const device_kv_cache& cache) const {
  std::vector<const void*> addresses = {ws_.x.get(),
                                        ws_.residual.get(),
                                        ws_.qkv.get(),
                                        ws_.q.get(),
                                        ws_.attn.get(),
                                        ws_.gate_up.get(),
                                        ws_.act.get(),
                                        ws_.last_x.get(),
                                        ws_.last_residual.get(),
                                        ws_.logits.get(),
                                        ws_.logits_f32.get(),
                                        ws_.batch.get(),
                                        ws_.attention.get(),
                                        cache.k(0)};
  for (const void* p : projector_.scratch_addresses()) addresses.push_back(p);
  return addresses;
}

float* llama_runner::run_graph(const llama_host_batch& b, const decode_graph_shape& shape,
                               device_kv_cache& cache) {
  const int64_t block_size = cache.layout().block_size;
  const padded_decode_batch padded(b, shape, block_size);
  const llama_host_batch& p = padded.view();
  // Every launch size comes from the shape: the attention is sized for a context filling the
  // padded block table, and reads each sequence's real length on the device.
  const int64_t context_bound = shape.blocks_per_seq * block_size;
  // The graph holds no wait on the cache's copy stream: every move is in place before it runs.
  cache.wait_for_moves(stream_);
  ensure_workspace(p.num_tokens);
  const device_batch batch = stage_batch(p, p.positions);
  if (auto it = graphs_.find(shape);
      it != graphs_.end() && it->second.workspace == workspace_signature(cache)) {
    CUDA_CHECK(cudaGraphLaunch(it->second.exec.get(), stream_));
    ++graph_counts_.replayed;
    return it->second.logits;
  }
  // The shape's first step (or its scratch moved since the capture): run it eagerly, which
  // also grows every scratch the launches use, then capture the same launches, which does
  // not run them.
  float* logits = enqueue(p, batch, 1, context_bound, cache);
  captured_graph g;
  CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  float* captured_logits = nullptr;
  try {
    captured_logits = enqueue(p, batch, 1, context_bound, cache);
  } catch (...) {
    // A launch that cannot be captured: this shape runs eagerly from now on.
    cudaGraph_t broken = nullptr;
    if (cudaStreamEndCapture(stream_, &broken) == cudaSuccess && broken) cudaGraphDestroy(broken);
    cudaGetLastError();
    uncapturable_.insert(shape);
    graphs_.erase(shape);
    return logits;
  }
  // A capture the runtime invalidated (an unsupported call reports it only here), or one that
  // does not instantiate, leaves the shape eager too; the eager run's logits stand.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaError_t captured = cudaStreamEndCapture(stream_, &graph);
  if (captured == cudaSuccess) captured = cudaGraphInstantiate(&exec, graph, 0);
  if (graph) cudaGraphDestroy(graph);
  if (captured != cudaSuccess) {
    cudaGetLastError();
    uncapturable_.insert(shape);
    graphs_.erase(shape);
    return logits;
  }
  g.exec = graph_exec(exec);
  g.logits = captured_logits;
  g.workspace = workspace_signature(cache);
  graphs_[shape] = std::move(g);
  ++graph_counts_.captured;
  return logits;
}

}  // namespace actorllm::cuda

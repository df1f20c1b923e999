// The backend-ops table's CUDA rows: every forward op (tests/support/backend_ops_cases.hpp) on
// cuda_forward_ops in float32, float16 and bfloat16 activations, over a cache of the
// activations' type and of float8 E4M3, against the float64 reference; and the same cases
// through graph_forward_ops, whose decode_steps rows are a step run op by op, one captured and
// one replayed. Dense weights; the quantized projections have their own tests
// (quantized_linear_test). Skipped without a device.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_forward_ops.cuh"
#include "kernels/cuda/graph_forward_ops.cuh"
#include "kernels/cuda/kv_cache.cuh"
#include "kernels/cuda/projector.cuh"
#include "tests/cuda/cuda_test_util.hpp"
#include "tests/support/backend_ops_cases.hpp"

namespace actorllm::cuda::testing {
namespace {

using actorllm::testing::backend_under_test;
using actorllm::testing::backend_ops::op_cases;
using actorllm::testing::backend_ops::verdict;

/// cuda_forward_ops with activations (and dense weights) of type t over a cache of `format`;
/// with `graphs`, behind graph_forward_ops (decode graphs of up to 8 sequences), on a stream
/// of their own (the legacy stream cannot be captured).
class cuda_backend_under_test final : public backend_under_test {
 public:
  cuda_backend_under_test(dtype t, kv_format format, bool graphs = false)
      : t_(t), format_(format), graphs_(graphs) {}

  std::string name() const override {
    return std::string(dtype_name(t_)) + " activations, " +
           (format_ == kv_format::fp8_e4m3 ? "fp8" : dtype_name(t_)) + " cache" +
           (graphs_ ? ", graphs" : "");
  }
  /// Graphs captured and launched so far (graphs only).
  graph_forward_ops::counts graphs() const {
    return graph_ops_ ? graph_ops_->graphs() : graph_forward_ops::counts{};
  }
  op_weight vector(const std::vector<float>& values) override {
    return tensors_.emplace_back(std::make_unique<device_tensor>(values, t_))->get();
  }
  op_weight rotary(const std::vector<float>& table) override {
    return tensors_.emplace_back(std::make_unique<device_tensor>(table, dtype::f32))->get();
  }
  op_linear linear(const std::vector<float>& w, int64_t, int64_t, const std::vector<float>* bias,
                   std::vector<float>& effective) override {
    effective = w;
    round_to(effective, t_);
    auto& lw = *linears_.emplace_back(std::make_unique<linear_weight>());
    lw.dense = vector(w);
    return {&lw, bias ? vector(*bias) : nullptr};
  }
  op_weight embedding(const std::vector<float>& table, int64_t, int64_t,
                      std::vector<float>& effective) override {
    effective = table;
    round_to(effective, t_);
    return vector(table);
  }
  forward_ops& ops(const forward_dims& dims, int64_t num_layers, int64_t num_blocks,
                   int64_t block_size) override {
    kv_cache_layout layout;
    layout.num_layers = num_layers;
    layout.num_blocks = num_blocks;
    layout.block_size = block_size;
    layout.num_kv_heads = dims.num_kv_heads;
    layout.head_dim = dims.head_dim;
    layout.type = t_;
    layout.format = format_;
    graph_ops_.reset();
    ops_.reset();
    cache_ = std::make_unique<device_kv_cache>(layout, 0);
    for (int64_t l = 0; l < num_layers; ++l) {
      CUDA_CHECK(cudaMemset(cache_->k(l), 0, layer_bytes()));
      CUDA_CHECK(cudaMemset(cache_->v(l), 0, layer_bytes()));
    }
    if (!projector_) projector_ = std::make_unique<projector>(stream_.get());
    ops_ = std::make_unique<cuda_forward_ops>(dims, 16, t_, *cache_, *projector_);
    if (!graphs_) return *ops_;
    graph_ops_ = std::make_unique<graph_forward_ops>(*ops_, decode_graph_limits{8, 4096});
    return *graph_ops_;
  }
  std::vector<float> read_cache(int64_t layer, bool value) override {
    std::vector<uint8_t> bytes(layer_bytes());
    CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    CUDA_CHECK(cudaMemcpy(bytes.data(), value ? cache_->v(layer) : cache_->k(layer), bytes.size(),
                          cudaMemcpyDeviceToHost));
    if (format_ == kv_format::activations) return from_storage(bytes, t_);
    std::vector<float> out(bytes.size());
    for (size_t i = 0; i < bytes.size(); ++i) out[i] = cpu::float8_e4m3::decode(bytes[i]);
    return out;
  }
  void write_cache(int64_t layer, bool value, const std::vector<float>& values) override {
    const auto bytes = format_ == kv_format::activations ? to_storage(values, t_) : to_e4m3(values);
    CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
    CUDA_CHECK(cudaMemcpy(value ? cache_->v(layer) : cache_->k(layer), bytes.data(), bytes.size(),
                          cudaMemcpyHostToDevice));
  }
  bool serves_lora() const override { return false; }
  double tolerance(bool through_cache, bool) const override {
    // Every op rounds its output to t; 16-bit activations carry that rounding through.
    double tol = t_ == dtype::f32 ? 1e-4 : t_ == dtype::f16 ? 1e-2 : 6e-2;
    if (through_cache && format_ == kv_format::fp8_e4m3) tol = std::max(tol, 2.5e-1);
    return tol;
  }

 private:
  size_t layer_bytes() const {
    const kv_cache_layout& l = cache_->layout();
    return static_cast<size_t>(l.num_blocks * l.block_bytes());
  }

  dtype t_;
  kv_format format_;
  bool graphs_;
  device_stream stream_;
  std::vector<std::unique_ptr<device_tensor>> tensors_;
  std::vector<std::unique_ptr<linear_weight>> linears_;
  std::unique_ptr<device_kv_cache> cache_;
  std::unique_ptr<projector> projector_;
  std::unique_ptr<cuda_forward_ops> ops_;
  std::unique_ptr<graph_forward_ops> graph_ops_;
};

TEST(backend_ops, every_op_on_every_cuda_type_and_cache_matches_the_reference) {
  REQUIRE_CUDA_DEVICE();
  int rows = 0, failures = 0;
  for (const dtype t : {dtype::f32, dtype::f16, dtype::bf16})
    for (const kv_format format : {kv_format::activations, kv_format::fp8_e4m3})
      for (const bool graphs : {false, true})
        for (const auto& [op, run] : op_cases()) {
          cuda_backend_under_test backend(t, format, graphs);
          for (const verdict& v : run(backend)) {
            ++rows;
            const bool ok = v.error <= v.bound;
            failures += !ok;
            EXPECT_LE(v.error, v.bound) << op << " on " << backend.name();
            std::printf("%-14s cuda %-28s err/rms %.2e (bound %.0e)%s\n", op.c_str(),
                        backend.name().c_str(), v.error, v.bound, ok ? "" : "  FAIL");
          }
        }
  std::printf("backend_ops: %d rows on CUDA, %d failed\n", rows, failures);
}

// The decode_steps rows above match the reference through graphs only if the graph was really
// captured and replayed: the first step runs op by op, the second is captured and launched,
// the third launches it again.
TEST(backend_ops, decode_steps_through_graphs_capture_once_and_replay) {
  REQUIRE_CUDA_DEVICE();
  for (const auto& [op, run] : op_cases()) {
    if (op != "decode_steps") continue;
    cuda_backend_under_test backend(dtype::f32, kv_format::activations, /*graphs=*/true);
    for (const verdict& v : run(backend)) EXPECT_LE(v.error, v.bound);
    EXPECT_EQ(backend.graphs().captured, 1);
    EXPECT_EQ(backend.graphs().replayed, 2);
  }
}

}  // namespace
}  // namespace actorllm::cuda::testing

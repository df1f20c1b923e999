#include <algorithm>

#include "kernels/cuda/projector.cuh"

namespace actorllm::cuda {

projector::projector(cudaStream_t stream) : stream_(stream) {}

void projector::prepare(const quantized_matrix& w) {
  if (w.code == weight_code::fp8 && !fp8_tensor_cores_) fp8_tensor_cores_ = fp8_gemm_supported();
  max_quantized_elems_ = std::max(max_quantized_elems_, w.out_features * w.in_features);
}

void projector::linear(const linear_weight& w, const void* x, const void* bias, int64_t n,
                       int64_t in_features, int64_t out_features, void* y, dtype t) {
  if (w.quantized.empty()) {
    gemm_.linear(x, w.dense, bias, n, in_features, out_features, y, t, stream_);
    return;
  }
  const size_t es = static_cast<size_t>(dtype_size(t));
  if (w.quantized.input_order) {
    permuted_.grow(static_cast<size_t>(n * in_features) * es);
    gather_columns(x, w.quantized.input_order, n, in_features, permuted_.get(), t, stream_);
    x = permuted_.get();
  }
  if (n <= quantized_gemv_max_rows) {
    quantized_gemv(x, w.quantized, bias, n, y, t, stream_);
    return;
  }
  if (fp8_tensor_cores_ && fp8_gemm_takes(w.quantized)) {
    // Float8 weights on a prefill-sized batch: W8A8 on the tensor cores (sm_89+).
    if (!fp8_) fp8_ = std::make_unique<fp8_gemm>();
    fp8_->linear(x, w.quantized, bias, n, y, t, stream_);
    return;
  }
  const int64_t elems = std::max(max_quantized_elems_, out_features * in_features);
  dequantized_.grow(static_cast<size_t>(elems) * es);
  dequantize(w.quantized, dequantized_.get(), t, stream_);
  gemm_.linear(x, dequantized_.get(), bias, n, in_features, out_features, y, t, stream_);
}

std::vector<const void*> projector::scratch_addresses() const {
  std::vector<const void*> addresses = {permuted_.get(), dequantized_.get(), gemm_.scratch()};
  if (fp8_)
    for (const void* p : fp8_->buffers()) addresses.push_back(p);
  return addresses;
}

}  // namespace actorllm::cuda

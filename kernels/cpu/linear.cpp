// y = x w^T + b through OpenBLAS: one pass over the weights for the whole batch. The output
// features are split across the calling thread's team; each member runs a single-threaded
// GEMM (or GEMV for one row) on its slice of the weight rows.
#include <cblas.h>

#include "kernels/cpu/ops.hpp"

namespace actorllm::cpu {

namespace {

/// Output features per slice are a multiple of this: whole cache lines of y, and fine
/// enough that small projections (288 features) still split evenly between members.
constexpr int64_t feature_grain = 16;

void linear_slice(const float* x, const float* w, const float* bias, int64_t n, int64_t in_features,
                  int64_t out_features, int64_t begin, int64_t end, float* y) {
  const int64_t width = end - begin;
  const float* w_slice = w + begin * in_features;
  if (n == 1) {
    // Matrix-vector: gemv streams the weights once at the memory-bandwidth bound.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, width, in_features, 1.0f, w_slice, in_features, x, 1,
                0.0f, y + begin, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, width, in_features, 1.0f, x,
                in_features, w_slice, in_features, 0.0f, y + begin, out_features);
  }
  if (!bias) return;
  for (int64_t i = 0; i < n; ++i) {
    float* row = y + i * out_features;
#pragma omp simd
    for (int64_t j = begin; j < end; ++j) row[j] += bias[j];
  }
}

}  // namespace

void linear(const float* x, const float* w, const float* bias, int64_t n, int64_t in_features,
            int64_t out_features, float* y) {
  const bool small = n * in_features * out_features < min_parallel_macs;
  parallel_for(out_features, feature_grain, small ? out_features : 0,
               [&](int64_t begin, int64_t end) {
                 linear_slice(x, w, bias, n, in_features, out_features, begin, end, y);
               });
}

}  // namespace actorllm::cpu

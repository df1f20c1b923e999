// y = x w^T + b through OpenBLAS: one pass over the weights for the whole batch.
#include <cblas.h>
#include <omp.h>

#include "kernels/cpu/ops.hpp"

extern "C" void openblas_set_num_threads(int num_threads);

namespace actorllm::cpu {

namespace {
int configured_threads = 0;
}

void set_num_threads(int num_threads) {
  if (num_threads <= 0) num_threads = omp_get_num_procs();
  configured_threads = num_threads;
  omp_set_num_threads(num_threads);
  openblas_set_num_threads(num_threads);
}

int num_threads() {
  return configured_threads > 0 ? configured_threads : omp_get_max_threads();
}

void use_configured_threads() {
  thread_local bool applied = false;
  if (applied || configured_threads <= 0) return;
  omp_set_num_threads(configured_threads);
  applied = true;
}

void linear(const float* x, const float* w, const float* bias, int64_t n, int64_t in_features,
            int64_t out_features, float* y) {
  if (n == 1) {
    // Matrix-vector: gemv streams the weights once at the memory-bandwidth bound.
    cblas_sgemv(CblasRowMajor, CblasNoTrans, out_features, in_features, 1.0f, w, in_features, x, 1,
                0.0f, y, 1);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out_features, in_features, 1.0f, x,
                in_features, w, in_features, 0.0f, y, out_features);
  }
  if (bias) {
    for (int64_t i = 0; i < n; ++i) {
      float* row = y + i * out_features;
#pragma omp simd
      for (int64_t j = 0; j < out_features; ++j) row[j] += bias[j];
    }
  }
}

}  // namespace actorllm::cpu

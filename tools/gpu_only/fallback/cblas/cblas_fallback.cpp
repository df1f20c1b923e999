// Plain loops behind the CBLAS names (see cblas.h beside this file).
#include <cstdint>

#include "cblas.h"

namespace {

/// Element (i, j) of op(A), where op(A) is rows x cols, in the given storage order.
inline float at(const float* a, int lda, bool row_major, bool trans, int64_t i, int64_t j) {
  if (trans) {
    const int64_t t = i;
    i = j;
    j = t;
  }
  return row_major ? a[i * lda + j] : a[i + j * int64_t(lda)];
}

}  // namespace

extern "C" void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a,
                            enum CBLAS_TRANSPOSE trans_b, int m, int n, int k, float alpha,
                            const float* a, int lda, const float* b, int ldb, float beta, float* c,
                            int ldc) {
  const bool row_major = order == CblasRowMajor;
  const bool ta = trans_a != CblasNoTrans, tb = trans_b != CblasNoTrans;
#pragma omp parallel for
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int p = 0; p < k; ++p)
        sum += at(a, lda, row_major, ta, i, p) * at(b, ldb, row_major, tb, p, j);
      float& dst = row_major ? c[int64_t(i) * ldc + j] : c[i + int64_t(j) * ldc];
      dst = alpha * sum + (beta == 0.0f ? 0.0f : beta * dst);
    }
}

extern "C" void cblas_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, int m, int n,
                            float alpha, const float* a, int lda, const float* x, int incx,
                            float beta, float* y, int incy) {
  const bool row_major = order == CblasRowMajor;
  const bool t = trans != CblasNoTrans;
  // op(A) is (t ? n x m : m x n); y has as many entries as op(A) has rows.
  const int rows = t ? n : m, cols = t ? m : n;
#pragma omp parallel for
  for (int i = 0; i < rows; ++i) {
    float sum = 0.0f;
    for (int j = 0; j < cols; ++j) sum += at(a, lda, row_major, t, i, j) * x[int64_t(j) * incx];
    float& dst = y[int64_t(i) * incy];
    dst = alpha * sum + (beta == 0.0f ? 0.0f : beta * dst);
  }
}

extern "C" void openblas_set_num_threads(int) {}

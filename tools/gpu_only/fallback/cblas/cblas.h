#pragma once
// Plain-loop stand-in for the CBLAS calls the CPU reference ops make, where OpenBLAS is
// missing (gpu-only builds only). Same names and argument lists as OpenBLAS's cblas.h.
#ifdef __cplusplus
extern "C" {
#endif

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 };
typedef enum CBLAS_ORDER CBLAS_LAYOUT;

void cblas_sgemm(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans_a, enum CBLAS_TRANSPOSE trans_b,
                 int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
                 float beta, float* c, int ldc);
void cblas_sgemv(enum CBLAS_ORDER order, enum CBLAS_TRANSPOSE trans, int m, int n, float alpha,
                 const float* a, int lda, const float* x, int incx, float beta, float* y, int incy);
void openblas_set_num_threads(int num_threads);

#ifdef __cplusplus
}
#endif

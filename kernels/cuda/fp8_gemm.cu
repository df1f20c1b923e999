#include <array>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.cuh"
#include "kernels/cuda/fp8_gemm.cuh"

namespace actorllm::cuda {

namespace {

constexpr float kE4m3Max = 448.0f;

void lt_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuBLASLt ") + what + ": status " +
                             std::to_string(static_cast<int>(status)));
}

/// bits[0] = max over x of |x|, as float bits (non-negative floats order as their bits).
template <typename T>
__global__ void absmax_kernel(const T* __restrict__ x, int64_t n, unsigned* __restrict__ bits) {
  float local = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    local = fmaxf(local, fabsf(to_float(x[i])));
  for (int o = 16; o > 0; o >>= 1) local = fmaxf(local, __shfl_xor_sync(0xffffffffu, local, o));
  if ((threadIdx.x & 31) == 0) atomicMax(bits, __float_as_uint(local));
}

/// x8 = E4M3(x / scale), scale = max / 448 (1 for an all-zero x); block 0 stores the scale
/// over the max (the matmul reads it there).
template <typename T>
__global__ void quantize_kernel(const T* __restrict__ x, int64_t n, float* __restrict__ scale,
                                __nv_fp8_e4m3* __restrict__ x8) {
  const float max = __uint_as_float(*reinterpret_cast<const unsigned*>(scale));
  const float s = max > 0.0f ? max / kE4m3Max : 1.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x8[i] = from_float<__nv_fp8_e4m3>(to_float(x[i]) / s);
  // The scale goes to the second word (the matmul reads it there); the first keeps the max
  // that every block reads.
  if (blockIdx.x == 0 && threadIdx.x == 0) scale[1] = s;
}

/// y[t][o] = product[t][o] * row_scale[o] (+ bias[o]), in T.
template <typename T>
__global__ void scale_columns_kernel(const float* __restrict__ product, int64_t n, int64_t out,
                                     const float* __restrict__ scales, int64_t num_groups,
                                     const T* __restrict__ bias, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * out;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = i % out;
    float v = product[i] * scales[o * num_groups];
    if (bias) v += to_float(bias[o]);
    y[i] = from_float<T>(v);
  }
}

unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + 255) / 256, 4096));
}

}  // namespace

/// One shape's cuBLASLt descriptors and chosen algorithm, made on the shape's first call.
struct fp8_gemm::plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~plan() {
    if (d) cublasLtMatrixLayoutDestroy(d);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

bool fp8_gemm_supported() {
  return compute_capability() >= 89;
}

bool fp8_gemm_takes(const quantized_matrix& w) {
  return !w.empty() && w.code == weight_code::fp8 && w.num_groups() == 1 && !w.input_order &&
         w.out_features % 16 == 0 && w.in_features % 16 == 0;
}

float fp8_activation_scale(const float* x, int64_t n) {
  float max = 0.0f;
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, std::fabs(x[i]));
  return max > 0.0f ? max / kE4m3Max : 1.0f;
}

fp8_gemm::fp8_gemm(size_t workspace_bytes) : workspace_(workspace_bytes), scale_(8) {
  lt_check(cublasLtCreate(&handle_), "cublasLtCreate");
}

fp8_gemm::~fp8_gemm() {
  plans_.clear();  // before the handle
  if (handle_) cublasLtDestroy(handle_);
}

const fp8_gemm::plan& fp8_gemm::plan_for(int64_t n, int64_t in, int64_t out) {
  const std::array<int64_t, 3> shape{n, in, out};
  if (auto it = plans_.find(shape); it != plans_.end()) return *it->second;
  // Bounded: a prefill's row counts vary with the token budget's chunks.
  if (plans_.size() >= 64) plans_.clear();
  // Column-major: D (out x n) = A^T B, A the codes as stored, (in x out); B x8 (in x n).
  auto p = std::make_unique<plan>();
  lt_check(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  lt_check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &transpose,
                                          sizeof(transpose)),
           "transa");
  lt_check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)),
           "transb");
  const float* x_scale = scale_.as<float>() + 1;  // fixed: scale_ never grows
  lt_check(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale,
                                          sizeof(x_scale)),
           "b scale");
  lt_check(cublasLtMatrixLayoutCreate(&p->a, CUDA_R_8F_E4M3, static_cast<uint64_t>(in),
                                      static_cast<uint64_t>(out), in),
           "layout a");
  lt_check(cublasLtMatrixLayoutCreate(&p->b, CUDA_R_8F_E4M3, static_cast<uint64_t>(in),
                                      static_cast<uint64_t>(n), in),
           "layout b");
  lt_check(cublasLtMatrixLayoutCreate(&p->d, CUDA_R_32F, static_cast<uint64_t>(out),
                                      static_cast<uint64_t>(n), out),
           "layout d");
  cublasLtMatmulPreference_t preference = nullptr;
  lt_check(cublasLtMatmulPreferenceCreate(&preference), "preference");
  const size_t workspace_bytes = workspace_.size();
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  const cublasStatus_t set =
      cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &workspace_bytes, sizeof(workspace_bytes));
  const cublasStatus_t asked =
      set == CUBLAS_STATUS_SUCCESS
          ? cublasLtMatmulAlgoGetHeuristic(handle_, p->op, p->a, p->b, p->d, p->d, preference, 1,
                                           &best, &found)
          : set;
  cublasLtMatmulPreferenceDestroy(preference);
  lt_check(asked, "heuristic");
  if (found == 0) throw std::runtime_error("cuBLASLt: no float8 algorithm for this shape");
  p->algo = best.algo;
  return *plans_.emplace(shape, std::move(p)).first->second;
}

void fp8_gemm::linear(const void* x, const quantized_matrix& w, const void* bias, int64_t n,
                      void* y, dtype t, cudaStream_t stream) {
  if (!fp8_gemm_takes(w))
    throw std::invalid_argument(
        "fp8_gemm: float8 codes with one scale per row, sizes multiples of 16, no reordering");
  if (n == 0) return;
  const int64_t in = w.in_features, out = w.out_features;
  x8_.grow(static_cast<size_t>(n * in));
  product_.grow(static_cast<size_t>(n * out) * sizeof(float));
  auto* scale = scale_.as<float>();  // [0]: max |x| as bits, [1]: the scale
  CUDA_CHECK(cudaMemsetAsync(scale, 0, sizeof(float), stream));
  ACTORLLM_DISPATCH_DTYPE(t, T, {
    const T* xt = static_cast<const T*>(x);
    absmax_kernel<T>
        <<<grid_for(n * in), 256, 0, stream>>>(xt, n * in, reinterpret_cast<unsigned*>(scale));
    CUDA_CHECK_LAUNCH();
    quantize_kernel<T>
        <<<grid_for(n * in), 256, 0, stream>>>(xt, n * in, scale, x8_.as<__nv_fp8_e4m3>());
    CUDA_CHECK_LAUNCH();
  });

  const plan& p = plan_for(n, in, out);
  const float alpha = 1.0f, beta = 0.0f;
  lt_check(cublasLtMatmul(handle_, p.op, &alpha, w.codes, p.a, x8_.get(), p.b, &beta,
                          product_.get(), p.d, product_.get(), p.d, &p.algo, workspace_.get(),
                          workspace_.size(), stream),
           "matmul");

  ACTORLLM_DISPATCH_DTYPE(t, T, {
    scale_columns_kernel<T><<<grid_for(n * out), 256, 0, stream>>>(
        product_.as<float>(), n, out, w.scales, w.num_groups(), static_cast<const T*>(bias),
        static_cast<T*>(y));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace actorllm::cuda

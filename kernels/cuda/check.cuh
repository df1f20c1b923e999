#pragma once
/// Error checks for every CUDA and cuBLAS call. A failed call throws cuda_error, whose
/// message names the expression, the file and the line; the worker turns it into an error
/// value, so a device fault is never a silent wrong answer.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace actorllm::cuda {

/// A failed CUDA runtime or cuBLAS call, or a failed kernel launch.
class cuda_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws cuda_error("<what>: <expr> at <file>:<line>").
[[noreturn]] void throw_cuda_error(const char* what, const char* expr, const char* file, int line);

/// Whether `status` is one of the errors that leave the process's context on the device
/// unusable ("sticky": a kernel's illegal address, misaligned access, trap or failed launch;
/// every later call returns it again). Memory on that device is lost; only cudaDeviceReset
/// gives a fresh context, and a worker that owns the device alone may then start again.
bool is_sticky_error(cudaError_t status);

}  // namespace actorllm::cuda

#define CUDA_CHECK(expr)                                                                   \
  do {                                                                                     \
    const cudaError_t actorllm_cuda_status_ = (expr);                                      \
    if (actorllm_cuda_status_ != cudaSuccess)                                              \
      ::actorllm::cuda::throw_cuda_error(cudaGetErrorString(actorllm_cuda_status_), #expr, \
                                         __FILE__, __LINE__);                              \
  } while (0)

#define CUBLAS_CHECK(expr)                                                                      \
  do {                                                                                          \
    const cublasStatus_t actorllm_cublas_status_ = (expr);                                      \
    if (actorllm_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                       \
      ::actorllm::cuda::throw_cuda_error(cublasGetStatusString(actorllm_cublas_status_), #expr, \
                                         __FILE__, __LINE__);                                   \
  } while (0)

/// Checks the launch just made (bad configuration, missing kernel image).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

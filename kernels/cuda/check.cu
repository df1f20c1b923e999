#include "kernels/cuda/check.cuh"

namespace actorllm::cuda {

void throw_cuda_error(const char* what, const char* expr, const char* file, int line) {
  // A failed runtime call also records its error as the "last error"; clear it so that the
  // next launch check does not report this failure a second time, against an unrelated kernel.
  cudaGetLastError();
  throw cuda_error(std::string(what) + ": " + expr + " at " + file + ":" + std::to_string(line));
}

bool is_sticky_error(cudaError_t status) {
  switch (status) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorECCUncorrectable:
      return true;
    default:
      return false;
  }
}

}  // namespace actorllm::cuda

#include "kernels/cuda/check.cuh"

namespace actorllm::cuda {

void throw_cuda_error(const char* what, const char* expr, const char* file, int line) {
  throw cuda_error(std::string(what) + ": " + expr + " at " + file + ":" + std::to_string(line));
}

}  // namespace actorllm::cuda

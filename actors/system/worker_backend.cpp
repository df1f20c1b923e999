#include "actors/system/worker_backend.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "actors/system/device_slots.hpp"
#if ACTORLLM_HAS_CUDA
#include "actors/gpu_worker/cuda_backend.hpp"
#include "kernels/cuda/device.cuh"
#endif

namespace actorllm {

int num_cuda_devices() {
#if ACTORLLM_HAS_CUDA
  return cuda::cuda_device_count();
#else
  return 0;
#endif
}

std::shared_ptr<const backend_provider> select_backend(const engine_config& config) {
  const std::string& device = config.parallel.device;
  if (device == "cpu" || (device == "auto" && num_cuda_devices() == 0))
    return std::make_shared<cpu_backend_provider>();
  if (device != "cuda" && device != "auto")
    throw std::runtime_error("--device: must be auto, cpu or cuda (got '" + device + "')");
#if ACTORLLM_HAS_CUDA
  const int32_t devices = num_cuda_devices();
  if (devices == 0) throw std::runtime_error("--device cuda: no CUDA device is visible");
  // One worker per device: the replicas that start at once must each find theirs.
  const int32_t replicas = std::max(config.parallel.replicas, config.autoscale.min_replicas);
  if (auto why = device_fit_error(devices, replicas, config.parallel.tensor_parallel_size,
                                  std::getenv("CUDA_VISIBLE_DEVICES"));
      !why.empty())
    throw std::runtime_error("--replicas: " + why);
  try {
    return std::make_shared<cuda_backend_provider>(devices, config.model.dtype);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
#else
  throw std::runtime_error(
      "--device cuda: this build has no CUDA backend (configured with ACTORLLM_CUDA=OFF)");
#endif
}

}  // namespace actorllm

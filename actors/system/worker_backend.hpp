#pragma once
/// The workers' backend for --device, chosen once per process. Here in the shell library
/// because it is the one that links the CUDA kernels when the build has them.
#include <memory>

#include "actors/gpu_worker/forward_backend.hpp"
#include "config/engine_config.hpp"

namespace actorllm {

/// config.parallel.device: "cpu"; "cuda": every visible device, one worker on each, an error
/// when this build has no CUDA backend, no device is visible, or the replicas that start at
/// once (--replicas, --autoscale's minimum) times --tensor-parallel-size exceed the devices;
/// "auto": CUDA when a device is visible, else the CPU. On CUDA, --dtype picks the device's
/// storage type (cuda_storage_for). Throws std::runtime_error with one line when the device
/// asked for cannot be had.
std::shared_ptr<const backend_provider> select_backend(const engine_config& config);

/// CUDA devices this process can use; 0 in a build without CUDA or on any error.
int num_cuda_devices();

}  // namespace actorllm

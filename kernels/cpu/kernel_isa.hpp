#pragma once
/// The instruction sets the CPU kernels come in (the packed GEMM and paged attention). The
/// best one the CPU runs is used unless set_kernel_isa picks another; every set computes the
/// same products (the order of the sums aside), so the choice is one of speed only.
#include <cstdint>

namespace actorllm::cpu {

enum class kernel_isa {
  avx2,    ///< AVX2, FMA, F16C: 8-float registers
  avx512,  ///< AVX-512 F/BW/VL/DQ besides: 16-float registers
};
const char* to_string(kernel_isa isa);
/// Whether this CPU runs `isa`'s kernels.
bool cpu_runs(kernel_isa isa);
/// The instruction set the kernels use now (process-wide).
kernel_isa kernel_isa_in_use();
/// Uses `isa` from now on, for every thread (benchmarks and tests compare the sets). Throws
/// std::invalid_argument where the CPU does not run it.
void set_kernel_isa(kernel_isa isa);

}  // namespace actorllm::cpu

#pragma once
/// Runs the CPU kernels in one instruction set for a scope (kernels/cpu/kernel_isa.hpp).
#include "kernels/cpu/kernel_isa.hpp"

namespace actorllm::testing {

/// Uses one instruction set while it lives, then the one before.
class scoped_kernel_isa {
 public:
  explicit scoped_kernel_isa(cpu::kernel_isa isa) : saved_(cpu::kernel_isa_in_use()) {
    cpu::set_kernel_isa(isa);
  }
  ~scoped_kernel_isa() { cpu::set_kernel_isa(saved_); }
  scoped_kernel_isa(const scoped_kernel_isa&) = delete;
  scoped_kernel_isa& operator=(const scoped_kernel_isa&) = delete;

 private:
  cpu::kernel_isa saved_;
};

/// The fastest set the CPU runs that keeps x in float32 (avx512, else avx2): where a test
/// needs the packed GEMM's exact products rather than avx512_vnni's 8-bit activations.
inline cpu::kernel_isa best_float_isa() {
  return cpu::cpu_runs(cpu::kernel_isa::avx512) ? cpu::kernel_isa::avx512 : cpu::kernel_isa::avx2;
}

}  // namespace actorllm::testing

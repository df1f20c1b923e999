#include "kernels/cpu/kernel_isa.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "kernels/cpu/vector_math.hpp"

namespace actorllm::cpu {

namespace {

/// Whether this CPU and OS run the AMX bf16 tiles (packed_tiles_amx.cpp): AVX-512 BF16, AMX
/// tiles and AMX-BF16, and the tiles' state granted to this process (asked for once).
bool cpu_has_amx_bf16() {
  static const bool yes = [] {
    if (!cpu_has_avx512_bf16()) return false;
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    constexpr unsigned amx_bf16 = 1u << 22, amx_tile = 1u << 24;
    if ((edx & amx_bf16) == 0 || (edx & amx_tile) == 0) return false;
    // Linux hands out the tiles' 8 KB of state only to a process that asks
    // (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a kernel without it refuses.
    constexpr long arch_req_xcomp_perm = 0x1023, xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, arch_req_xcomp_perm, xfeature_xtiledata) == 0;
  }();
  return yes;
}

/// The widest set the CPU runs. avx512_bf16 rounds x to bf16 where bf16 weights meet batches
/// of more than one row, as vLLM's bf16 models keep their activations in bf16 (and as
/// avx512_vnni rounds x to 8 bits for int8 and int4 weights): 1.6x a 32-stream decode step
/// of the 110M model in bf16 (bench/README section 25). amx multiplies the same bf16 x in
/// the tiles.
std::atomic<kernel_isa>& chosen_isa() {
  static std::atomic<kernel_isa> isa{cpu_runs(kernel_isa::amx)           ? kernel_isa::amx
                                     : cpu_runs(kernel_isa::avx512_bf16) ? kernel_isa::avx512_bf16
                                     : cpu_runs(kernel_isa::avx512_vnni) ? kernel_isa::avx512_vnni
                                     : cpu_runs(kernel_isa::avx512)      ? kernel_isa::avx512
                                                                         : kernel_isa::avx2_int8};
  return isa;
}

}  // namespace

const char* to_string(kernel_isa isa) {
  switch (isa) {
    case kernel_isa::avx2:
      return "avx2";
    case kernel_isa::avx2_int8:
      return "avx2_int8";
    case kernel_isa::avx512:
      return "avx512";
    case kernel_isa::avx512_vnni:
      return "avx512_vnni";
    case kernel_isa::avx512_bf16:
      return "avx512_bf16";
    case kernel_isa::amx:
      return "amx";
  }
  return "?";
}

kernel_isa kernel_isa_named(const std::string& name) {
  for (kernel_isa isa : {kernel_isa::avx2, kernel_isa::avx2_int8, kernel_isa::avx512,
                         kernel_isa::avx512_vnni, kernel_isa::avx512_bf16, kernel_isa::amx})
    if (name == to_string(isa)) return isa;
  throw std::invalid_argument(
      "unknown CPU kernel set '" + name +
      "' (choose avx2, avx2_int8, avx512, avx512_vnni, avx512_bf16 or amx)");
}

bool cpu_runs(kernel_isa isa) {
  switch (isa) {
    case kernel_isa::avx2:
    case kernel_isa::avx2_int8:
      return cpu_has_avx2();
    case kernel_isa::avx512:
      return cpu_has_avx512();
    case kernel_isa::avx512_vnni:
      return cpu_has_avx512_vnni();
    case kernel_isa::avx512_bf16:
      return cpu_has_avx512_bf16();
    case kernel_isa::amx:
      return cpu_has_amx_bf16();
  }
  return false;
}

bool uses_avx512(kernel_isa isa) {
  return isa == kernel_isa::avx512 || isa == kernel_isa::avx512_vnni ||
         isa == kernel_isa::avx512_bf16 || isa == kernel_isa::amx;
}

bool rounds_activations(kernel_isa isa) {
  return isa == kernel_isa::avx2_int8 || isa == kernel_isa::avx512_vnni ||
         isa == kernel_isa::avx512_bf16 || isa == kernel_isa::amx;
}

bool rounds_activations_to_bf16(kernel_isa isa) {
  return isa == kernel_isa::avx512_bf16 || isa == kernel_isa::amx;
}

kernel_isa kernel_isa_in_use() {
  return chosen_isa().load(std::memory_order_relaxed);
}

void set_kernel_isa(kernel_isa isa) {
  if (!cpu_runs(isa))
    throw std::invalid_argument(std::string("this CPU does not run the ") + to_string(isa) +
                                " kernels");
  chosen_isa().store(isa, std::memory_order_relaxed);
}

}  // namespace actorllm::cpu

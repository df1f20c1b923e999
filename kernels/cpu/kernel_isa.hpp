#pragma once
/// The instruction sets the CPU kernels come in (the packed GEMM and paged attention). The
/// best one the CPU runs is used unless set_kernel_isa picks another. avx2 and avx512 compute
/// the same products (the order of the sums aside); avx2_int8, avx512_vnni, avx512_bf16 and
/// amx round the activations that meet int8 and int4 weights to 8 bits, and avx512_bf16 and
/// amx those that meet bf16 weights in batches to bf16.
#include <cstdint>
#include <string>

namespace actorllm::cpu {

enum class kernel_isa {
  avx2,  ///< AVX2, FMA, F16C: 8-float registers
  /// The same, but int8 and int4 weights meet x quantized to int8 per block of 32 input
  /// features in integer dot products (vpmaddubsw), in batches of any size, four rows at a
  /// time, as llama.cpp's AVX2 Q8_0 and Q4_0 kernels do. Not exact: x is rounded to 8 bits.
  avx2_int8,
  avx512,  ///< AVX-512 F/BW/VL/DQ besides: 16-float registers
  /// AVX-512 VNNI and VBMI besides: the integer dot products of avx2_int8 through vpdpbusd;
  /// the rest as avx512. Not exact: x is rounded to 8 bits.
  avx512_vnni,
  /// AVX-512 BF16 besides: bf16 weights in batches of more than one row meet x rounded to
  /// bf16 in vdpbf16ps (twice the multiply-adds of an FMA); the rest as avx512_vnni. Not
  /// exact: x keeps 8 significant bits where it applies, as in vLLM's bf16 models. One row (a
  /// single stream, bound by memory either way) keeps x in float32.
  avx512_bf16,
  /// AMX tiles besides (AMX-TILE, AMX-BF16, granted by the OS): bf16 weights in batches of
  /// more than one row meet x rounded to bf16 in tdpbf16ps, 16 x 16 x 32 multiply-adds an
  /// instruction, where in_features is a multiple of 32; so do per-channel int8 batches of 4
  /// rows or more, against the codes themselves (exact in bf16; each feature's scale meets its
  /// sums), and other int8 and int4 batches of 32 rows or more, against the weights rounded to
  /// bf16; the rest as avx512_bf16.
  amx,
};
const char* to_string(kernel_isa isa);
/// The set named "avx2", "avx2_int8", "avx512", "avx512_vnni", "avx512_bf16" or "amx"; throws
/// std::invalid_argument naming the choices on another name.
kernel_isa kernel_isa_named(const std::string& name);
/// Whether this CPU runs `isa`'s kernels.
bool cpu_runs(kernel_isa isa);
/// Whether isa's float kernels (tiles, attention) are the AVX-512 ones.
bool uses_avx512(kernel_isa isa);
/// Whether isa rounds x to int8 where it meets int8 and int4 weights (avx2_int8,
/// avx512_vnni, avx512_bf16, amx).
bool rounds_activations(kernel_isa isa);
/// Whether isa rounds x to bf16 where it meets bf16 weights in batches (avx512_bf16, amx).
bool rounds_activations_to_bf16(kernel_isa isa);
/// The instruction set the kernels use now (process-wide).
kernel_isa kernel_isa_in_use();
/// Uses `isa` from now on, for every thread (benchmarks and tests compare the sets). Throws
/// std::invalid_argument where the CPU does not run it.
void set_kernel_isa(kernel_isa isa);

}  // namespace actorllm::cpu

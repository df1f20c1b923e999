// Resident memory of a loaded model against its checkpoint's bytes: the 110M-parameter random
// Llama in bf16 (220 MB), loaded as bf16 (--dtype auto) and as int8 (--quantization int8),
// and as GPTQ and AWQ 4-bit checkpoints, holds its matrices once, as packed panels, and the
// mapped checkpoint is released after load.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kernels/cpu/thread_team.hpp"
#include "model/llama_model.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/sanitizers.hpp"

namespace actorllm {
namespace {

// Under AddressSanitizer resident memory counts the loader's temporaries (the allocator's
// quarantine keeps them) and says nothing about what the model holds: these tests skip there.
using testing::address_sanitized;

/// This process's resident bytes (/proc/self/statm's second field, in pages).
int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

/// /proc/self/status's resident lines and the huge page policy, printed beside a failure.
std::string memory_report() {
  std::string report;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Rss", 0) == 0 || line.rfind("VmHWM", 0) == 0) report += line + "\n";
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string policy;
  std::getline(thp, policy);
  return report + "transparent huge pages: " + policy + "\n";
}

/// Resident bytes the model adds while loaded, on 4 KB pages: with transparent huge pages on
/// "always", the kernel backs and refills the heap 2 MB at a time (khugepaged fills a range
/// whose pages were handed back if one page in it is still used), which measures its policy,
/// not what the model holds. The heap's free pages go back to the system first: a model loaded
/// before leaves them resident (glibc raises its mmap threshold once large blocks are freed,
/// so later ones come from the heap), and reusing them would hide what this model takes.
int64_t resident_bytes_of(const std::filesystem::path& dir, const weight_options& options,
                          int64_t* panel_bytes = nullptr) {
  prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
  malloc_trim(0);
  const int64_t before = resident_bytes();
  const llama_model model(dir, {}, options);
  const int64_t added = resident_bytes() - before;
  prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
  if (panel_bytes) *panel_bytes = model.cpu_weights() ? model.cpu_weights()->bytes() : 0;
  return added;
}

TEST(weight_memory, bf16_and_int8_models_hold_their_weights_once) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  if (address_sanitized()) GTEST_SKIP() << "AddressSanitizer's quarantine holds freed memory";
  testing::random_model ckpt("memory-110M", "--shape 110M --dtype bf16");
  const double checkpoint =
      static_cast<double>(std::filesystem::file_size(ckpt.dir() / "model.safetensors"));
  // The thread team and its stacks exist before the first measurement.
  cpu::this_thread_team();
  const int64_t bf16 = resident_bytes_of(ckpt.dir(), {"auto", "none"});
  EXPECT_LE(bf16, 1.15 * checkpoint) << bf16 / 1e6 << " MB for " << checkpoint / 1e6 << " MB";
  // int8 against what an int8 checkpoint of the same model would be: half the bf16 one.
  const int64_t int8 = resident_bytes_of(ckpt.dir(), {"auto", "int8"});
  // int4 at load (Q4_0, every matrix): 4 bits, a float32 scale and a zero byte per 32
  // weights, 0.66 bytes a weight, recorded against the bf16 checkpoint's 2.
  const int64_t int4 = resident_bytes_of(ckpt.dir(), {"auto", "int4"});
  RecordProperty("int4_at_load_resident_MB", std::to_string(int4 / 1e6));
  EXPECT_LE(int4, 1.15 * checkpoint * 0.66 / 2) << int4 / 1e6 << " MB";
  RecordProperty("checkpoint_MB", std::to_string(checkpoint / 1e6));
  RecordProperty("bf16_resident_MB", std::to_string(bf16 / 1e6));
  RecordProperty("int8_resident_MB", std::to_string(int8 / 1e6));
  EXPECT_LE(int8, 1.15 * checkpoint / 2) << int8 / 1e6 << " MB for " << checkpoint / 2e6 << " MB";
}

TEST(weight_memory, int4_checkpoints_hold_their_weights_once) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  if (address_sanitized()) GTEST_SKIP() << "AddressSanitizer's quarantine holds freed memory";
  cpu::this_thread_team();
  for (const char* quantize : {"gptq4", "awq4"}) {
    // Groups of 128; the tied embedding and LM head stay bf16 (49 of about 95 MB).
    testing::random_model ckpt(std::string("memory-110M-") + quantize,
                               std::string("--shape 110M --dtype bf16 --quantize ") + quantize);
    const double checkpoint =
        static_cast<double>(std::filesystem::file_size(ckpt.dir() / "model.safetensors"));
    int64_t panels = 0;
    const int64_t resident = resident_bytes_of(ckpt.dir(), {"auto", "none"}, &panels);
    // What the model holds by its own count: the codes as shipped (4 bits), a float32 scale
    // and a zero byte per group against the file's 16-bit scale and packed zero.
    EXPECT_LE(panels, 1.05 * checkpoint) << quantize << ": " << panels / 1e6 << " MB of panels";
    RecordProperty(std::string(quantize) + "_checkpoint_MB", std::to_string(checkpoint / 1e6));
    RecordProperty(std::string(quantize) + "_resident_MB", std::to_string(resident / 1e6));
    std::printf("%s: %.1f MB resident for a %.1f MB checkpoint\n", quantize, resident / 1e6,
                checkpoint / 1e6);
    EXPECT_LE(resident, 1.15 * checkpoint)
        << quantize << ": " << resident / 1e6 << " MB for " << checkpoint / 1e6 << " MB\n"
        << memory_report();
  }
}

}  // namespace
}  // namespace actorllm

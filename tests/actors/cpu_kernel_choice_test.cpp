// The CPU backend's kernel set: the startup log's weights line names it, and ACTORLLM_CPU_ISA
// picks another at prepare (a name it does not know is refused, naming the choices).
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "actors/gpu_worker/cpu_backend.hpp"
#include "kernels/cpu/kernel_isa.hpp"
#include "model/llama_model.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/test_data.hpp"

namespace actorllm {
namespace {

/// Sets ACTORLLM_CPU_ISA while it lives.
class scoped_isa_variable {
 public:
  explicit scoped_isa_variable(const char* value) { ::setenv("ACTORLLM_CPU_ISA", value, 1); }
  ~scoped_isa_variable() { ::unsetenv("ACTORLLM_CPU_ISA"); }
  scoped_isa_variable(const scoped_isa_variable&) = delete;
  scoped_isa_variable& operator=(const scoped_isa_variable&) = delete;
};

TEST(cpu_kernel_choice, the_weights_line_names_the_set_in_use) {
  const llama_model model(testing::stories260k_dir());
  const std::string line = cpu_backend_provider().describe_weights(model);
  EXPECT_NE(line.find(model.storage().description), std::string::npos) << line;
  EXPECT_NE(line.find(std::string("CPU kernels ") + cpu::to_string(cpu::kernel_isa_in_use())),
            std::string::npos)
      << line;
}

// Where an integer path applies, the line says what it does to x and which set keeps it float.
TEST(cpu_kernel_choice, the_weights_line_says_when_x_is_rounded) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx2)) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const llama_model plain(testing::stories260k_dir());
  const llama_model int8(testing::stories260k_dir(), {}, {"auto", "int8"});
  const std::pair<cpu::kernel_isa, const char*> sets[] = {
      {cpu::kernel_isa::avx2_int8, "ACTORLLM_CPU_ISA=avx2 keeps"},
      {cpu::kernel_isa::avx512_vnni, "ACTORLLM_CPU_ISA=avx512 keeps"}};
  for (const auto& [isa, float_set] : sets) {
    if (!cpu::cpu_runs(isa)) continue;
    const testing::scoped_kernel_isa use(isa);
    EXPECT_EQ(cpu_backend_provider().describe_weights(plain).find("rounded to 8 bits"),
              std::string::npos);
    const std::string line = cpu_backend_provider().describe_weights(int8);
    EXPECT_NE(line.find("rounded to 8 bits"), std::string::npos) << line;
    EXPECT_NE(line.find(float_set), std::string::npos) << line;
  }
  const testing::scoped_kernel_isa exact(cpu::kernel_isa::avx2);
  EXPECT_EQ(cpu_backend_provider().describe_weights(int8).find("rounded to 8 bits"),
            std::string::npos);
}

TEST(cpu_kernel_choice, the_environment_picks_a_set_and_unknown_names_are_refused) {
  if (!cpu::cpu_runs(cpu::kernel_isa::avx2)) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const testing::scoped_kernel_isa restore(cpu::kernel_isa_in_use());
  const llama_model model(testing::stories260k_dir());
  const cpu_backend_provider provider;
  {
    const scoped_isa_variable avx2("avx2");
    provider.prepare(model);
    EXPECT_EQ(cpu::kernel_isa_in_use(), cpu::kernel_isa::avx2);
    EXPECT_NE(provider.describe_weights(model).find("CPU kernels avx2"), std::string::npos);
  }
  const scoped_isa_variable unknown("sse2");
  try {
    provider.prepare(model);
    ADD_FAILURE() << "sse2 was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "choose avx2, avx2_int8, avx512, avx512_vnni, avx512_bf16 or amx"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace actorllm

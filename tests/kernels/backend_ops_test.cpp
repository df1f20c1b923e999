// The backend-ops table: every forward op (kernels/forward_ops.hpp) on the CPU backend, in
// every instruction set this CPU runs, every weight format (float32 rows through OpenBLAS,
// packed float32, bf16, f16, int8 and int4 panels) and every KV cache element (float32,
// float16, float8), against the float64 reference of tests/support/backend_ops_harness.hpp.
// A row per (op, ISA, format, cache) is printed; the CUDA backend's rows join from tests/cuda.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_forward_ops.hpp"
#include "kernels/cpu/float8.hpp"
#include "kernels/cpu/kernel_isa.hpp"
#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/packed_linear.hpp"
#include "tests/support/backend_ops_cases.hpp"
#include "tests/support/kernel_isa.hpp"

namespace actorllm::testing {
namespace {

using cpu::weight_format;

/// The CPU backend with weights in one format over a cache of one element type.
class cpu_backend_under_test final : public backend_under_test {
 public:
  /// format f32 with `rows_only`: float32 rows and no panels (OpenBLAS for every batch).
  cpu_backend_under_test(weight_format format, bool rows_only, cpu::cache_element element)
      : format_(format), rows_only_(rows_only), element_(element) {}

  std::string name() const override {
    static const char* elements[] = {"f32", "f16", "f8"};
    return std::string(rows_only_ ? "rows" : cpu::to_string(format_)) + " weights, " +
           elements[static_cast<int>(element_)] + " cache";
  }
  op_weight vector(const std::vector<float>& values) override {
    return vectors_.emplace_back(std::make_unique<std::vector<float>>(values))->data();
  }
  op_linear linear(const std::vector<float>& w, int64_t out, int64_t in,
                   const std::vector<float>* bias, std::vector<float>& effective) override {
    auto& lw = *linears_.emplace_back(std::make_unique<cpu::linear_weight>());
    lw.in_features = in;
    lw.out_features = out;
    if (rows_only_) {
      lw.dense = static_cast<const float*>(vector(w));
      effective = w;
    } else {
      const cpu::matrix_rows rows{w.data(), weight_format::f32, out};
      auto& packed = *panels_.emplace_back(
          std::make_unique<cpu::packed_matrix>(cpu::pack_matrix({&rows, 1}, in, format_)));
      lw.packed = &packed;
      effective = cpu::unpack_matrix(packed);
    }
    return {&lw, bias ? vector(*bias) : nullptr};
  }
  op_linear expert_linear(const std::vector<float>& w, int64_t out, int64_t in,
                          std::vector<float>& effective) override {
    auto& lw = *linears_.emplace_back(std::make_unique<cpu::linear_weight>());
    lw = {static_cast<const float*>(vector(w)), nullptr, in, out};
    effective = w;
    return {&lw, nullptr};
  }
  op_weight embedding(const std::vector<float>& table, int64_t vocab, int64_t dim,
                      std::vector<float>& effective) override {
    const op_linear as_matrix = linear(table, vocab, dim, nullptr, effective);
    const auto& lw = *static_cast<const cpu::linear_weight*>(as_matrix.matrix);
    embedding_ = {lw.dense, lw.packed};
    return &embedding_;
  }
  forward_ops& ops(const forward_dims& dims, int64_t num_layers, int64_t num_blocks,
                   int64_t block_size) override {
    dims_ = dims;
    block_size_ = block_size;
    layer_bytes_ = num_blocks * dims.num_kv_heads * block_size * dims.head_dim * element_bytes();
    cache_.assign(2 * num_layers, std::vector<unsigned char>(layer_bytes_, 0));
    k_.clear();
    v_.clear();
    for (int64_t l = 0; l < num_layers; ++l) {
      k_.push_back(cache_[2 * l].data());
      v_.push_back(cache_[2 * l + 1].data());
    }
    const cpu::paged_cache_view view{k_.data(), v_.data(), num_layers, element_, block_size};
    ops_ =
        std::make_unique<cpu::cpu_forward_ops>(dims, scratch_, view, nullptr, 0, logits_, &hidden_);
    return *ops_;
  }
  std::vector<float> read_cache(int64_t layer, bool value) override {
    const auto& bytes = cache_[2 * layer + (value ? 1 : 0)];
    const int64_t count = layer_bytes_ / element_bytes();
    std::vector<float> out(count);
    for (int64_t i = 0; i < count; ++i) out[i] = element_at(bytes.data(), i);
    return out;
  }
  void write_cache(int64_t layer, bool value, const std::vector<float>& values) override {
    auto& bytes = cache_[2 * layer + (value ? 1 : 0)];
    for (size_t i = 0; i < values.size(); ++i) set_element(bytes.data(), i, values[i]);
  }
  double tolerance(bool through_cache, bool through_projection) const override {
    double tol = 1e-5;
    const bool int_weights = format_ == weight_format::q8 || format_ == weight_format::q4;
    // 8-bit activations (the integer dot products, at every batch size: the MLP rounds x
    // before both of its projections, as llama.cpp's Q8_0 activations do; packed_isa_test
    // checks each projection against its own rounding bound), bf16 activations (avx512_bf16's
    // pair tiles, amx's tiles).
    if (through_projection && int_weights && cpu::rounds_activations(cpu::kernel_isa_in_use()))
      tol = 6e-2;
    if (through_projection && format_ == weight_format::bf16 &&
        cpu::rounds_activations_to_bf16(cpu::kernel_isa_in_use()))
      tol = 2e-2;
    if (through_cache && element_ == cpu::cache_element::f16) tol = std::max(tol, 2e-3);
    if (through_cache && element_ == cpu::cache_element::f8) tol = std::max(tol, 2.5e-1);
    return tol;
  }

 private:
  int64_t element_bytes() const {
    return element_ == cpu::cache_element::f32 ? 4 : element_ == cpu::cache_element::f16 ? 2 : 1;
  }
  float element_at(const unsigned char* bytes, int64_t i) const {
    switch (element_) {
      case cpu::cache_element::f16:
        return static_cast<float>(reinterpret_cast<const cpu::half*>(bytes)[i]);
      case cpu::cache_element::f8:
        return static_cast<float>(reinterpret_cast<const cpu::float8_e4m3*>(bytes)[i]);
      case cpu::cache_element::f32:
        break;
    }
    return reinterpret_cast<const float*>(bytes)[i];
  }
  void set_element(unsigned char* bytes, int64_t i, float v) const {
    switch (element_) {
      case cpu::cache_element::f16:
        reinterpret_cast<cpu::half*>(bytes)[i] = static_cast<cpu::half>(v);
        return;
      case cpu::cache_element::f8:
        reinterpret_cast<cpu::float8_e4m3*>(bytes)[i] = cpu::float8_e4m3(v);
        return;
      case cpu::cache_element::f32:
        reinterpret_cast<float*>(bytes)[i] = v;
        return;
    }
  }

  weight_format format_;
  bool rows_only_;
  cpu::cache_element element_;
  forward_dims dims_;
  int64_t block_size_ = 0, layer_bytes_ = 0;
  std::vector<std::unique_ptr<std::vector<float>>> vectors_;
  std::vector<std::unique_ptr<cpu::linear_weight>> linears_;
  std::vector<std::unique_ptr<cpu::packed_matrix>> panels_;
  cpu::embedding_weight embedding_;
  std::vector<std::vector<unsigned char>> cache_;
  std::vector<void*> k_, v_;
  cpu::forward_scratch scratch_;
  std::vector<float> logits_, hidden_;
  std::unique_ptr<cpu::cpu_forward_ops> ops_;
};

using backend_ops::op_cases;
using backend_ops::verdict;

TEST(backend_ops, every_op_on_every_cpu_isa_format_and_cache_matches_the_reference) {
  if (!cpu::packed_linear_supported()) GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const struct {
    weight_format format;
    bool rows_only;
  } formats[] = {{weight_format::f32, true},   {weight_format::f32, false},
                 {weight_format::bf16, false}, {weight_format::f16, false},
                 {weight_format::q8, false},   {weight_format::q4, false}};
  const cpu::cache_element elements[] = {cpu::cache_element::f32, cpu::cache_element::f16,
                                         cpu::cache_element::f8};
  int rows = 0, failures = 0;
  for (const auto isa :
       {cpu::kernel_isa::avx2, cpu::kernel_isa::avx2_int8, cpu::kernel_isa::avx512,
        cpu::kernel_isa::avx512_vnni, cpu::kernel_isa::avx512_bf16, cpu::kernel_isa::amx}) {
    if (!cpu::cpu_runs(isa)) continue;
    scoped_kernel_isa use(isa);
    for (const auto& f : formats)
      for (const auto element : elements)
        for (const auto& [op, run] : op_cases()) {
          cpu_backend_under_test backend(f.format, f.rows_only, element);
          const std::vector<verdict> verdicts = run(backend);
          for (const verdict& v : verdicts) {
            ++rows;
            const bool ok = v.error <= v.bound;
            failures += !ok;
            EXPECT_LE(v.error, v.bound)
                << op << " on " << cpu::to_string(isa) << ", " << backend.name();
            if (!ok || std::getenv("BACKEND_OPS_TABLE"))
              std::printf("%-14s %-12s %-26s err/rms %.2e (bound %.0e)%s\n", op.c_str(),
                          cpu::to_string(isa), backend.name().c_str(), v.error, v.bound,
                          ok ? "" : "  FAIL");
          }
        }
  }
  std::printf("backend_ops: %d rows on the CPU, %d failed\n", rows, failures);
  EXPECT_GT(rows, 0);
}

}  // namespace
}  // namespace actorllm::testing

// The batched LoRA update against its definition: for rows of three adapters and of the base
// model mixed in one batch, y + scaling · B · A · x per row in double precision, on odd shapes;
// base rows untouched, as are the rows of an adapter without a pair for the projection (rank
// 0) and the columns past each row (y is a slice of wider rows, as gate of gate_up); a bad
// adapter index refused before anything is written.
#include <gtest/gtest.h>

#include <random>

#include "kernels/cpu/lora.hpp"

namespace actorllm::cpu {
namespace {

struct adapter_data {
  std::vector<float> a, b_t;  // A (rank, in), B transposed (rank, out)
  int64_t rank;
  float scaling;
};

TEST(lora_kernel, each_row_gets_its_adapters_update_and_base_rows_none) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& [n, in, out] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 64, 64}, {7, 37, 91}, {33, 172, 64}}) {
    std::vector<adapter_data> data;
    for (int64_t rank : {1, 8, 5}) {
      adapter_data d{{}, {}, rank, 2.0f / static_cast<float>(rank)};
      for (int64_t i = 0; i < rank * in; ++i) d.a.push_back(normal(rng));
      for (int64_t i = 0; i < rank * out; ++i) d.b_t.push_back(normal(rng));
      data.push_back(std::move(d));
    }
    std::vector<lora_weights> adapters;
    for (const auto& d : data) adapters.push_back({d.a.data(), d.b_t.data(), d.rank, d.scaling});
    adapters.push_back({});  // an adapter that does not target this projection
    const int64_t stride = out + 3;
    std::vector<float> x(n * in), y(n * stride);
    for (float& v : x) v = normal(rng);
    for (float& v : y) v = normal(rng);
    std::vector<int32_t> which(n);
    for (int64_t r = 0; r < n; ++r) which[r] = static_cast<int32_t>(r % 5) - 1;  // -1 .. 3
    const std::vector<float> before = y;
    std::vector<float> scratch;
    add_lora(x.data(), n, in, y.data(), out, stride, which, adapters, scratch);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t o = out; o < stride; ++o) EXPECT_EQ(y[r * stride + o], before[r * stride + o]);
      for (int64_t o = 0; o < out; ++o) {
        double want = before[r * stride + o];
        if (which[r] >= 0 && which[r] < static_cast<int32_t>(data.size())) {
          const adapter_data& d = data[which[r]];
          for (int64_t q = 0; q < d.rank; ++q) {
            double t = 0;
            for (int64_t j = 0; j < in; ++j) t += double(d.a[q * in + j]) * x[r * in + j];
            want += d.scaling * double(d.b_t[q * out + o]) * t;
          }
        }
        EXPECT_NEAR(y[r * stride + o], want, 1e-3 * (1 + std::abs(want)))
            << "n " << n << " row " << r << " out " << o;
      }
    }
  }
}

TEST(lora_kernel, a_bad_adapter_index_is_refused_before_any_write) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f), x(4, 1.0f), y(4, 0.0f), scratch;
  const std::vector<lora_weights> one{{a.data(), b.data(), 1, 1.0f}};
  EXPECT_THROW(add_lora(x.data(), 2, 2, y.data(), 2, 2, std::vector<int32_t>{0, 1}, one, scratch),
               std::invalid_argument);
  EXPECT_EQ(y, std::vector<float>(4, 0.0f));
  EXPECT_THROW(add_lora(x.data(), 2, 2, y.data(), 2, 2, std::vector<int32_t>{0}, one, scratch),
               std::invalid_argument);
}

}  // namespace
}  // namespace actorllm::cpu

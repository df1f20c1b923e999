#include "model/cpu_weight_table.hpp"

#include <memory>

#include "model/weight_handles.hpp"

namespace actorllm {

namespace {

const float* rows_or_null(const std::vector<float>& v) {
  return v.empty() ? nullptr : v.data();
}

/// The CPU ops' handles: pointers into the model's float32 rows and packed panels.
class cpu_handle_maker final : public weight_handle_maker {
 public:
  explicit cpu_handle_maker(cpu_weight_table& table) : t_(table) {}

  op_weight vector(const std::string&, const std::vector<float>& values) override {
    return values.data();
  }
  op_weight rotary(const std::string&, const std::vector<float>& cos_sin) override {
    return cos_sin.data();
  }
  op_linear linear(const std::string&, const std::vector<float>& rows,
                   const cpu::packed_matrix* panels, int64_t in, int64_t out,
                   op_weight bias) override {
    t_.linears.push_back({rows_or_null(rows), panels, in, out});
    return {&t_.linears.back(), bias};
  }
  op_weight embedding(const std::vector<float>& rows, const cpu::packed_matrix* panels) override {
    t_.embed = {rows_or_null(rows), panels};
    return &t_.embed;
  }
  /// Tied or not, the head reads its own rows or panels (the packing keeps the tied table
  /// packed as the head).
  op_linear head(const std::vector<float>& rows, const cpu::packed_matrix* panels, int64_t in,
                 int64_t out, bool, op_weight) override {
    return linear("lm_head", rows, panels, in, out, nullptr);
  }

 private:
  cpu_weight_table& t_;
};

}  // namespace

std::unique_ptr<const cpu_weight_table> make_cpu_weight_table(const llama_weights& w,
                                                              const packed_llama_weights* packs,
                                                              const model_config_hf& c) {
  auto table = std::make_unique<cpu_weight_table>();
  cpu_handle_maker make(*table);
  table->refs = decoder_refs_of(w, packs, c, make);
  return table;
}

}  // namespace actorllm

// The config.json reader (model/model_config.hpp) on an arbitrary config.json: it returns a
// configuration or throws std::exception naming the field, never crashes; what it accepts has
// positive sizes that fit together, and its derived sizes do not overflow (UBSan checks).
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string_view>

#include "fuzz/fuzz_support.hpp"
#include "model/model_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace actorllm;
  const auto dir = fuzz::scratch_dir();
  fuzz::write_file(dir / "config.json",
                   std::string_view(reinterpret_cast<const char*>(data), size));
  model_config_hf config;
  try {
    config = load_model_config(dir);
  } catch (const std::exception&) {
    return 0;
  }
  FUZZ_CHECK(config.hidden_size > 0 && config.intermediate_size > 0);
  FUZZ_CHECK(config.num_layers > 0 && config.num_heads > 0 && config.num_kv_heads > 0);
  FUZZ_CHECK(config.head_dim > 0 && config.vocab_size > 0);
  FUZZ_CHECK(config.num_heads % config.num_kv_heads == 0);
  FUZZ_CHECK(config.max_position_embeddings > 0);
  (void)config.q_size();
  (void)config.kv_size();
  (void)config.num_parameters();
  return 0;
}

#pragma once
/// What the weight-format tests share: the 16-bit and float8 formats read from their
/// definitions, the logits of a prefill and decode steps, their KL from float32's, and a
/// load refused after config.json's quantization_config is changed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "model/llama_model.hpp"

namespace actorllm::testing {

/// bfloat16 is the top half of a float32 (Google's definition; what torch writes).
inline float bf16_value(const unsigned char* p) {
  const uint32_t bits = (uint32_t(p[1]) << 24) | (uint32_t(p[0]) << 16);  // little-endian
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// IEEE 754 binary16: sign, 5-bit exponent biased by 15, 10-bit fraction; exponent 0 is
/// subnormal (fraction * 2^-24).
inline float f16_value(const unsigned char* p) {
  const uint16_t h = static_cast<uint16_t>(p[0] | (p[1] << 8));
  const int exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
  const float sign = (h & 0x8000) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(fraction), -24);
  return sign * std::ldexp(1.0f + fraction / 1024.0f, exponent - 15);
}

/// float8 E4M3FN (the OCP 8-bit floating point specification): sign, 4 exponent bits biased
/// by 7, 3 mantissa bits; exponent 0 is subnormal (m / 8 * 2^-6).
inline float e4m3_value(unsigned char code) {
  const int exponent = (code >> 3) & 0xf, mantissa = code & 7;
  const float sign = (code & 0x80) ? -1.0f : 1.0f;
  if (exponent == 0) return sign * std::ldexp(mantissa / 8.0f, -6);
  return sign * std::ldexp(1.0f + mantissa / 8.0f, exponent - 7);
}

/// Logits of every step: a prompt of `prompt_len` tokens prefilled at once, then `forced`
/// fed one token per step.
inline std::vector<std::vector<float>> run_steps(const llama_model& model, int prompt_len,
                                                 const std::vector<int32_t>& forced) {
  const int32_t block_size = 16;
  const int32_t num_blocks = (prompt_len + int(forced.size())) / block_size + 2;
  kv_cache cache(model.cache_shape(num_blocks, block_size));
  std::vector<int32_t> table(num_blocks), prompt(prompt_len);
  std::iota(table.begin(), table.end(), 0);
  for (int i = 0; i < prompt_len; ++i) prompt[i] = 1 + (i * 37) % (model.config().vocab_size - 1);
  forward_workspace ws;
  forward_batch batch;
  std::vector<float> logits;
  std::vector<std::vector<float>> steps;
  batch.add_sequence(prompt, 0, table, block_size, true);
  batch.finalize();
  model.forward(batch, cache, ws, logits);
  steps.push_back(logits);
  for (size_t i = 0; i < forced.size(); ++i) {
    batch.clear();
    const int32_t one[] = {forced[i]};
    batch.add_sequence(one, prompt_len + static_cast<int32_t>(i), table, block_size, true);
    batch.finalize();
    model.forward(batch, cache, ws, logits);
    steps.push_back(logits);
  }
  return steps;
}

/// KL(p || q) of the softmaxes of two logit rows, in nats.
inline double kl_divergence(const std::vector<float>& p_logits,
                            const std::vector<float>& q_logits) {
  auto log_softmax = [](const std::vector<float>& x) {
    const double max = *std::max_element(x.begin(), x.end());
    double sum = 0;
    for (float v : x) sum += std::exp(v - max);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] - max - std::log(sum);
    return out;
  };
  const auto lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

struct kl_stats {
  double mean = 0, max = 0;
};

/// The KL of `model`'s logits from float32's over a 97-token prefill (past the packed
/// kernel's decode-sized batches) and 25 decode steps, both fed the same tokens (122 positions:
/// within the tiny families' 128).
inline kl_stats kl_from_float32(const llama_model& float32, const llama_model& model) {
  std::vector<int32_t> forced;
  for (int i = 0; i < 25; ++i) forced.push_back(static_cast<int32_t>(i * 13 % 500 + 3));
  const auto want = run_steps(float32, 97, forced), got = run_steps(model, 97, forced);
  kl_stats s;
  for (size_t i = 0; i < want.size(); ++i) {
    const double kl = kl_divergence(want[i], got[i]);
    s.mean += kl / want.size();
    s.max = std::max(s.max, kl);
  }
  return s;
}

/// The error loading `dir` after its config.json's quantization_config is set to `q`.
inline std::string refusal_of(const std::filesystem::path& dir, const nlohmann::json& q,
                              const weight_options& options = {}) {
  std::ifstream in(dir / "config.json");
  auto config = nlohmann::json::parse(in);
  in.close();
  config["quantization_config"] = q;
  std::ofstream(dir / "config.json") << config.dump();
  try {
    llama_model model(dir, {}, options);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "loaded";
}

}  // namespace actorllm::testing

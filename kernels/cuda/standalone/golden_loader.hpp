#pragma once
/// A dependency-free loader of a Llama checkpoint (config.json and one model.safetensors)
/// into host float32 arrays for cuda::llama_runner, for the GPU-only build that has no JSON
/// library. It reads the few fields it needs with small scanners, not a full JSON parser:
/// enough for Hugging Face checkpoints, not for arbitrary JSON.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/llama_runner.cuh"

namespace actorllm::golden {

struct host_layer {
  std::vector<float> input_norm;  // (dim)
  std::vector<float> qkv;         // (q_size + 2 * kv_size, dim)  q, k, v fused
  std::vector<float> qkv_bias;    // (q_size + 2 * kv_size) or empty
  std::vector<float> o;           // (dim, q_size)
  std::vector<float> post_norm;   // (dim)
  std::vector<float> gate_up;     // (2 * hidden, dim)  gate then up
  std::vector<float> down;        // (dim, hidden)
};

struct host_model {
  cuda::llama_runner_config config;
  std::vector<float> embed;  // (vocab, dim)
  std::vector<host_layer> layers;
  std::vector<float> final_norm;  // (dim)
  std::vector<float> lm_head;     // (vocab, dim); empty when tied to embed
  std::vector<float> cos_sin;     // (max_position, head_dim)

  /// Pointers into this model, for llama_runner; valid while the model lives.
  cuda::llama_host_weights view() const;
};

/// Loads `dir`/config.json and `dir`/model.safetensors (F32, F16 or BF16 tensors). Throws
/// std::runtime_error naming the file, field or tensor at fault; rope scaling is refused.
host_model load_model(const std::string& dir);

/// The whole file; throws std::runtime_error when it cannot be read.
std::string read_text(const std::string& path);

/// The integers of the array under the first `"key"` in `json`; throws when absent.
std::vector<int32_t> int_array(const std::string& json, const std::string& key);

/// The rotary table as llama_model's build_rotary_table without scaling: head_dim/2 cosines
/// then sines per position, with the float32 angle float(pos) * float(inv_freq).
std::vector<float> rotary_table(double rope_theta, int64_t head_dim, int64_t max_position);

}  // namespace actorllm::golden

#include "actors/gpu_worker/cuda_weights.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/packed_linear.hpp"
#include "model/forward_batch.hpp"
#include "model/llama_model.hpp"
#include "model/llama_weights.hpp"
#include "model/moe_layer.hpp"

namespace actorllm {

namespace {

const float* data_or_null(const std::vector<float>& v) {
  return v.empty() ? nullptr : v.data();
}

}  // namespace

cuda::quantized_matrix quantized_host_matrix::view() const {
  cuda::quantized_matrix v;
  v.code = code;
  v.out_features = out_features;
  v.in_features = in_features;
  v.group_size = group_size;
  v.codes = codes.data();
  v.scales = scales.data();
  v.zeros = zeros.empty() ? nullptr : zeros.data();
  v.input_order = input_order.empty() ? nullptr : input_order.data();
  return v;
}

std::optional<quantized_host_matrix> device_layout_of(const cpu::packed_matrix& p) {
  using cpu::weight_format;
  quantized_host_matrix m;
  switch (p.format) {
    case weight_format::q8:
      m.code = cuda::weight_code::q8;
      break;
    case weight_format::fp8:
      m.code = cuda::weight_code::fp8;
      break;
    case weight_format::q4:
      m.code = cuda::weight_code::q4;
      break;
    default:
      return std::nullopt;
  }
  m.out_features = p.out_features;
  m.in_features = p.in_features;
  m.group_size = p.group_length();
  const int64_t width = cpu::packed_matrix::panel_width, in = p.in_features;
  const int64_t groups = p.num_groups();
  m.codes.resize(static_cast<size_t>(m.view().code_bytes()));
  m.scales.resize(static_cast<size_t>(p.out_features * groups));
  if (m.code == cuda::weight_code::q4) m.zeros.resize(m.scales.size());
  if (!cuda::quantized_layout_error(m.view()).empty()) return std::nullopt;
  m.input_order = p.input_order;
  // The packing's fp8 scales hold 2^8 times the weight's (packed_matrix::scales).
  const float scale_divisor = m.code == cuda::weight_code::fp8 ? 256.0f : 1.0f;
  for (int64_t o = 0; o < p.out_features; ++o) {
    const int64_t panel = o / width, lane = o % width;
    for (int64_t g = 0; g < groups; ++g) {
      const size_t from = static_cast<size_t>((panel * groups + g) * width + lane);
      m.scales[o * groups + g] = p.scales[from] / scale_divisor;
      if (!m.zeros.empty()) m.zeros[o * groups + g] = p.zeros[from];
    }
    if (m.code == cuda::weight_code::q4) {
      // Panel row bytes hold feature `lane % 8` in the low nibble, `lane % 8 + 8` in the high.
      const int shift = lane < width / 2 ? 0 : 4;
      const auto nibble = [&](int64_t r) {
        return (p.panels4[(panel * in + r) * (width / 2) + lane % (width / 2)] >> shift) & 0xf;
      };
      for (int64_t r = 0; r < in; r += 2)
        m.codes[(o * in + r) / 2] = static_cast<uint8_t>(nibble(r) | nibble(r + 1) << 4);
    } else {
      for (int64_t r = 0; r < in; ++r)
        m.codes[o * in + r] = static_cast<uint8_t>(p.panels8[(panel * in + r) * width + lane]);
    }
  }
  return m;
}

cuda::llama_runner_config runner_config_of(const llama_model& model) {
  const model_config_hf& c = model.config();
  cuda::llama_runner_config r;
  r.hidden_size = c.hidden_size;
  r.intermediate_size = c.intermediate_size;
  r.num_layers = c.num_layers;
  r.num_heads = c.num_heads;
  r.num_kv_heads = c.num_kv_heads;
  r.head_dim = c.head_dim;
  r.vocab_size = c.vocab_size;
  r.max_position =
      c.head_dim > 0 ? static_cast<int64_t>(model.weights().cos_sin().size()) / c.head_dim : 0;
  r.rms_norm_eps = static_cast<float>(c.rms_norm_eps);
  r.layer_sliding_window = c.layer_sliding_window;
  r.long_rope_offset = model.weights().rotary.long_offset;
  r.embedding_multiplier = static_cast<float>(c.embedding_multiplier);  // in float32, as HF
  r.attention_scale = c.attention_softmax_scale();
  r.gelu_tanh = c.activation == hidden_activation::gelu_tanh;
  r.attn_logit_softcapping = static_cast<float>(c.attn_logit_softcapping);
  r.final_logit_softcapping = static_cast<float>(c.final_logit_softcapping);
  if (c.moe.num_experts > 0) {
    // Routed on the host exactly as the CPU layer routes (route_token, row by row).
    r.num_experts = c.moe.num_experts;
    r.moe_top_k = c.moe.top_k;
    r.route = [experts = c.moe.num_experts, k = c.moe.top_k, renormalise = c.moe.norm_topk_prob](
                  const float* logits, int64_t n, int32_t* chosen, float* weights) {
      for (int64_t t = 0; t < n; ++t)
        route_token(logits + t * experts, experts, k, renormalise, chosen + t * k, weights + t * k);
    };
  }
  const auto& local = model.weights().local_rotary.cos_sin;
  if (!local.empty() && local.size() != model.weights().cos_sin().size())
    throw std::runtime_error(
        c.architecture +
        ": the local layers' rotary table differs in size from the global "
        "one, which the CUDA backend does not run: serve it with --device cpu");
  return r;
}

staged_host_weights host_weights_of(const llama_model& model) {
  const llama_weights& w = model.weights();
  staged_host_weights staged;
  cuda::llama_host_weights& h = staged.view;
  // A packed-only matrix is unpacked when the runner uploads it, one at a time: 16-bit panels
  // as their own bits (the device receives the checkpoint's values, no float32 staging),
  // other panels (a quantized layout the kernels cannot run) as float32.
  const packed_llama_weights* packed = model.packed_only() ? model.cpu_weights() : nullptr;
  auto matrix = [&](const std::vector<float>& plain,
                    const cpu::packed_matrix* panels) -> cuda::host_tensor {
    if (!packed || !panels || panels->empty()) return data_or_null(plain);
    if (panels->format == cpu::weight_format::bf16 || panels->format == cpu::weight_format::f16)
      return {
          panels->format == cpu::weight_format::bf16 ? cuda::dtype::bf16 : cuda::dtype::f16,
          [panels](void* out) { cpu::unpack_matrix_bits16(*panels, static_cast<uint16_t*>(out)); }};
    return {cuda::dtype::f32, [panels](void* out) {
              const std::vector<float> values = cpu::unpack_matrix(*panels);
              std::copy(values.begin(), values.end(), static_cast<float*>(out));
            }};
  };
  // A quantized projection stays quantized: no dense tensor, the device layout instead.
  auto projection = [&](const std::vector<float>& plain, const cpu::packed_matrix* panels,
                        cuda::quantized_matrix& quantized) -> cuda::host_tensor {
    if (packed && panels && !panels->empty())
      if (auto layout = device_layout_of(*panels)) {
        staged.quantized.push_back(std::move(*layout));
        quantized = staged.quantized.back().view();
        return {};
      }
    return matrix(plain, panels);
  };
  h.embed = matrix(w.embed, packed ? &packed->embedding_table() : nullptr);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    const auto& l = w.layers[i];
    const auto* pl = packed ? &packed->layers[i] : nullptr;
    cuda::llama_host_layer hl;
    hl.input_norm = data_or_null(l.input_norm);
    hl.qkv = projection(l.qkv, pl ? &pl->qkv : nullptr, hl.qkv_quantized);
    hl.qkv_bias = data_or_null(l.qkv_bias);
    hl.q_norm = data_or_null(l.q_norm);
    hl.k_norm = data_or_null(l.k_norm);
    hl.o = projection(l.o, pl ? &pl->o : nullptr, hl.o_quantized);
    hl.attn_out_norm = data_or_null(l.attn_out_norm);
    hl.mlp_out_norm = data_or_null(l.mlp_out_norm);
    hl.post_norm = data_or_null(l.post_norm);
    if (l.sparse()) {
      // Experts stay float32 on the host (no packed copy): pointers into them.
      hl.router = data_or_null(l.moe.router);
      hl.expert_width = l.moe.experts.front().width;
      for (const auto& e : l.moe.experts) {
        if (e.width != hl.expert_width)
          throw std::runtime_error("the CUDA backend needs every expert of a layer equally wide");
        hl.expert_gate_up.push_back(data_or_null(e.gate_up));
        hl.expert_down.push_back(data_or_null(e.down));
      }
      hl.shared_width = l.moe.shared.width;
      hl.shared_gate_up = data_or_null(l.moe.shared.gate_up);
      hl.shared_down = data_or_null(l.moe.shared.down);
      hl.shared_gate = data_or_null(l.moe.shared_gate);
    } else {
      hl.gate_up = projection(l.gate_up, pl ? &pl->gate_up : nullptr, hl.gate_up_quantized);
      hl.down = projection(l.down, pl ? &pl->down : nullptr, hl.down_quantized);
    }
    h.layers.push_back(hl);
  }
  h.final_norm = data_or_null(w.final_norm);
  // Tied (no packed embed of its own): the runner reads the embedding table as the head.
  if (!packed)
    h.lm_head = data_or_null(w.lm_head);
  else if (!packed->embed.empty())
    h.lm_head = projection(w.lm_head, &packed->lm_head, h.lm_head_quantized);
  h.cos_sin = data_or_null(w.cos_sin());
  h.local_cos_sin = data_or_null(w.local_rotary.cos_sin);
  return staged;
}

cuda::llama_host_batch host_batch_of(const forward_batch& b) {
  // engine_setup refuses --enable-lora on a device; a batch with adapters here is a bug.
  if (!b.adapters.empty())
    throw std::runtime_error("LoRA adapters run on the CPU backend only (use --device cpu)");
  cuda::llama_host_batch h;
  h.token_ids = b.token_ids.data();
  h.positions = b.positions.data();
  h.slot_mapping = b.slot_mapping.data();
  h.query_start_loc = b.query_start_loc.data();
  h.seq_lens = b.seq_lens.data();
  h.block_tables = b.block_tables.data();
  h.logits_indices = b.logits_indices.data();
  h.num_tokens = b.num_tokens();
  h.num_seqs = b.num_seqs();
  h.max_blocks_per_seq = b.max_blocks_per_seq;
  h.num_logits = static_cast<int64_t>(b.logits_indices.size());
  return h;
}

}  // namespace actorllm

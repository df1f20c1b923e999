#include "model/vision_tower.hpp"

#include <string>

namespace actorllm {

namespace {

std::vector<float> concat(std::initializer_list<std::vector<float>> parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

int64_t size(const std::vector<float>& v) {
  return static_cast<int64_t>(v.size());
}

/// A handle to `v`, or null (an absent tensor) where it is empty.
const float* data_or_null(const std::vector<float>& v) {
  return v.empty() ? nullptr : v.data();
}

/// Qwen2.5-VL's tower (`visual.*`): the patch Conv3d, the blocks with their gated MLPs, the
/// merger.
vision_weights load_qwen_vision_weights(const tensor_store& store, const vision_config& c) {
  const int64_t h = c.hidden_size, wide = c.intermediate_size, text = c.text_hidden_size;
  const int64_t merged = c.merge_size * c.merge_size * h;
  auto load = [&](const std::string& name, std::vector<int64_t> shape) {
    return store.load_f32("visual." + name, shape);
  };
  vision_weights w;
  w.patch = load("patch_embed.proj.weight",
                 {h, c.num_channels, c.temporal_patch_size, c.patch_size, c.patch_size});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    vision_layer_weights lw;
    lw.norm1 = load(p + "norm1.weight", {h});
    lw.qkv = load(p + "attn.qkv.weight", {3 * h, h});
    lw.qkv_bias = load(p + "attn.qkv.bias", {3 * h});
    lw.o = load(p + "attn.proj.weight", {h, h});
    lw.o_bias = load(p + "attn.proj.bias", {h});
    lw.norm2 = load(p + "norm2.weight", {h});
    lw.fc1 = concat(
        {load(p + "mlp.gate_proj.weight", {wide, h}), load(p + "mlp.up_proj.weight", {wide, h})});
    lw.fc1_bias =
        concat({load(p + "mlp.gate_proj.bias", {wide}), load(p + "mlp.up_proj.bias", {wide})});
    lw.fc2 = load(p + "mlp.down_proj.weight", {h, wide});
    lw.fc2_bias = load(p + "mlp.down_proj.bias", {h});
    w.layers.push_back(std::move(lw));
  }
  w.merger_norm = load("merger.ln_q.weight", {h});
  w.projector1 = load("merger.mlp.0.weight", {merged, merged});
  w.projector1_bias = load("merger.mlp.0.bias", {merged});
  w.projector2 = load("merger.mlp.2.weight", {text, merged});
  w.projector2_bias = load("merger.mlp.2.bias", {text});
  return w;
}

}  // namespace

int64_t vision_weights::num_parameters() const {
  int64_t n = size(patch) + size(patch_bias) + size(positions) + size(pre_norm) +
              size(pre_norm_bias) + size(post_norm) + size(post_norm_bias) + size(projector1) +
              size(projector1_bias) + size(projector2) + size(projector2_bias) + size(soft_norm) +
              size(merger_norm);
  for (const auto& l : layers)
    n += size(l.norm1) + size(l.norm1_bias) + size(l.qkv) + size(l.qkv_bias) + size(l.o) +
         size(l.o_bias) + size(l.norm2) + size(l.norm2_bias) + size(l.fc1) + size(l.fc1_bias) +
         size(l.fc2) + size(l.fc2_bias);
  return n;
}

vision_weights load_vision_weights(const tensor_store& store, const vision_config& c) {
  if (c.dynamic_resolution()) return load_qwen_vision_weights(store, c);
  const int64_t h = c.hidden_size, wide = c.intermediate_size, text = c.text_hidden_size;
  const std::string v = "vision_tower.vision_model.";
  auto load = [&](const std::string& name, std::vector<int64_t> shape) {
    return store.load_f32(name, shape);
  };
  vision_weights w;
  w.patch = load(v + "embeddings.patch_embedding.weight",
                 {h, c.num_channels, c.patch_size, c.patch_size});
  if (c.patch_bias) w.patch_bias = load(v + "embeddings.patch_embedding.bias", {h});
  w.positions = load(v + "embeddings.position_embedding.weight", {c.num_positions(), h});
  if (c.class_token) {
    const auto cls = load(v + "embeddings.class_embedding", {h});
    for (int64_t i = 0; i < h; ++i) w.positions[i] += cls[i];
  }
  if (c.pre_norm) {
    w.pre_norm = load(v + "pre_layrnorm.weight", {h});
    w.pre_norm_bias = load(v + "pre_layrnorm.bias", {h});
  }
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = v + "encoder.layers." + std::to_string(l) + ".";
    const std::string a = p + "self_attn.";
    vision_layer_weights lw;
    lw.norm1 = load(p + "layer_norm1.weight", {h});
    lw.norm1_bias = load(p + "layer_norm1.bias", {h});
    lw.qkv = concat({load(a + "q_proj.weight", {h, h}), load(a + "k_proj.weight", {h, h}),
                     load(a + "v_proj.weight", {h, h})});
    lw.qkv_bias = concat(
        {load(a + "q_proj.bias", {h}), load(a + "k_proj.bias", {h}), load(a + "v_proj.bias", {h})});
    lw.o = load(a + "out_proj.weight", {h, h});
    lw.o_bias = load(a + "out_proj.bias", {h});
    lw.norm2 = load(p + "layer_norm2.weight", {h});
    lw.norm2_bias = load(p + "layer_norm2.bias", {h});
    lw.fc1 = load(p + "mlp.fc1.weight", {wide, h});
    lw.fc1_bias = load(p + "mlp.fc1.bias", {wide});
    lw.fc2 = load(p + "mlp.fc2.weight", {h, wide});
    lw.fc2_bias = load(p + "mlp.fc2.bias", {h});
    w.layers.push_back(std::move(lw));
  }
  if (c.post_norm) {
    w.post_norm = load(v + "post_layernorm.weight", {h});
    w.post_norm_bias = load(v + "post_layernorm.bias", {h});
  }
  const std::string m = "multi_modal_projector.";
  if (c.projector == vision_projector::pooled) {
    // Gemma3RMSNorm scales by (1 + w); the projection is a (hidden, text) parameter applied
    // as x W, kept here as rows (text, hidden).
    w.soft_norm = load(m + "mm_soft_emb_norm.weight", {h});
    for (float& x : w.soft_norm) x += 1.0f;
    const auto projection = load(m + "mm_input_projection_weight", {h, text});
    w.projector1.resize(projection.size());
    for (int64_t i = 0; i < h; ++i)
      for (int64_t o = 0; o < text; ++o) w.projector1[o * h + i] = projection[i * text + o];
    return w;
  }
  w.projector1 = load(m + "linear_1.weight", {text, h});
  w.projector1_bias = load(m + "linear_1.bias", {text});
  w.projector2 = load(m + "linear_2.weight", {text, text});
  w.projector2_bias = load(m + "linear_2.bias", {text});
  return w;
}

vision_tower::vision_tower(const tensor_store& store, const vision_config& config)
    : config_(config), weights_(load_vision_weights(store, config)) {
  const int64_t h = config_.hidden_size, text = config_.text_hidden_size;
  const bool qwen = config_.dynamic_resolution();
  // Qwen2.5-VL's fc1 is the gate and up rows fused; its projector takes merged rows.
  const int64_t wide = config_.intermediate_size * (qwen ? 2 : 1);
  const int64_t projected = qwen ? config_.merge_size * config_.merge_size * h : h;
  matrices_.reserve(3 + 4 * weights_.layers.size());
  refs_.patch = linear(
      weights_.patch, weights_.patch_bias, h,
      qwen ? config_.patch_dim() : config_.num_channels * config_.patch_size * config_.patch_size);
  refs_.positions = weights_.positions.data();
  refs_.pre_norm = data_or_null(weights_.pre_norm);
  refs_.pre_norm_bias = data_or_null(weights_.pre_norm_bias);
  refs_.post_norm = data_or_null(weights_.post_norm);
  refs_.post_norm_bias = data_or_null(weights_.post_norm_bias);
  refs_.soft_norm = data_or_null(weights_.soft_norm);
  refs_.merger_norm = data_or_null(weights_.merger_norm);
  for (const vision_layer_weights& l : weights_.layers) {
    vision_layer_refs r;
    r.norm1 = l.norm1.data();
    r.norm1_bias = data_or_null(l.norm1_bias);
    r.qkv = linear(l.qkv, l.qkv_bias, 3 * h, h);
    r.o = linear(l.o, l.o_bias, h, h);
    r.norm2 = l.norm2.data();
    r.norm2_bias = data_or_null(l.norm2_bias);
    r.fc1 = linear(l.fc1, l.fc1_bias, wide, h);
    r.fc2 = linear(l.fc2, l.fc2_bias, h, config_.intermediate_size);
    refs_.layers.push_back(r);
  }
  const int64_t projector1_out = qwen ? projected : text;
  refs_.projector1 =
      linear(weights_.projector1, weights_.projector1_bias, projector1_out, projected);
  if (!weights_.projector2.empty())
    refs_.projector2 = linear(weights_.projector2, weights_.projector2_bias, text, projector1_out);
}

cpu::linear_weight& vision_tower::matrix(const std::vector<float>& rows, int64_t out, int64_t in) {
  cpu::linear_weight w;
  w.dense = rows.data();
  w.out_features = out;
  w.in_features = in;
  return matrices_.emplace_back(w);
}

op_linear vision_tower::linear(const std::vector<float>& rows, const std::vector<float>& bias,
                               int64_t out, int64_t in) {
  return {&matrix(rows, out, in), data_or_null(bias)};
}

void vision_tower::encode(std::span<const image_pixels> images, cpu::encoder_scratch& scratch,
                          std::vector<float>& embeddings) const {
  cpu::cpu_encoder_ops ops(scratch);
  vision_forward(config_, refs_, images, ops, embeddings);
}

}  // namespace actorllm

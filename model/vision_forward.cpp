#include "model/vision_forward.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/qwen_vision_layout.hpp"

namespace actorllm {

namespace {

encoder_activation encoder_activation_of(vision_activation a) {
  switch (a) {
    case vision_activation::quick_gelu:
      return encoder_activation::quick_gelu;
    case vision_activation::gelu:
      return encoder_activation::gelu;
    case vision_activation::silu:
      return encoder_activation::silu;
    case vision_activation::gelu_tanh:
      break;
  }
  return encoder_activation::gelu_tanh;
}

/// A two-layer projector (LLaVA's, Qwen2.5-VL's merger) over `in`: its rows, read to the host
/// as (rows, text hidden); ends the batch.
std::vector<float> project(const vision_config& c, const vision_refs& w, encoder_buffer in,
                           encoder_ops& ops) {
  using b = encoder_buffer;
  ops.linear(in, w.projector1, b::wide);
  ops.activate(b::wide, encoder_activation_of(c.projector_activation));
  ops.linear(b::wide, w.projector2, b::x);
  std::vector<float> projected(static_cast<size_t>(ops.rows(b::x) * ops.width(b::x)));
  ops.read(b::x, projected.data());
  ops.end();
  return projected;
}

/// Qwen2.5-VL: the images' patches window by window (qwen_vision_layout), the blocks (RMSNorm,
/// 2-D rotary attention within a window or, in the full-attention blocks, the image; RMSNorm,
/// gated MLP), the merger; each image's rows back in raster order.
void qwen_vision_forward(const vision_config& c, const vision_refs& w,
                         std::span<const image_pixels> images, encoder_ops& ops,
                         std::vector<float>& embeddings) {
  qwen_vision_layout layout;
  for (const image_pixels& image : images) {
    const grid_result g = qwen_patch_grid(c, image.channels, image.height, image.width);
    if (!g.error.empty()) throw std::invalid_argument(g.error);
    append_qwen_image(c, image.values, g.grid, layout);
  }
  encoder_rows rows;
  rows.image_starts = layout.image_starts.data();
  rows.num_images = static_cast<int64_t>(images.size());
  rows.num_rows = layout.image_starts.back();
  const auto eps = static_cast<float>(c.layer_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim()));
  const auto windows = static_cast<int64_t>(layout.window_starts.size()) - 1;
  const int64_t group = c.merge_size * c.merge_size;
  using b = encoder_buffer;

  ops.begin(rows);
  ops.write(b::input, layout.patches.data(), c.patch_dim());
  ops.write(b::rotary, layout.rotary.data(), c.head_dim());
  ops.linear(b::input, w.patch, b::residual);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const vision_layer_refs& layer = w.layers[l];
    const bool full = std::find(c.full_attention_layers.begin(), c.full_attention_layers.end(),
                                static_cast<int64_t>(l)) != c.full_attention_layers.end();
    ops.rms_norm(b::residual, layer.norm1, eps, b::x);
    ops.linear(b::x, layer.qkv, b::qkv);
    ops.rotate(c.num_heads, c.head_dim());
    if (full)
      ops.attention(c.num_heads, c.head_dim(), scale);
    else
      ops.segment_attention(c.num_heads, c.head_dim(), scale, layout.window_starts.data(), windows);
    ops.linear(b::attention, layer.o, b::x);
    ops.add(b::residual, b::x);
    ops.rms_norm(b::residual, layer.norm2, eps, b::x);
    ops.linear(b::x, layer.fc1, b::wide);
    ops.glu(b::wide, encoder_activation_of(c.activation), b::gated);
    ops.linear(b::gated, layer.fc2, b::x);
    ops.add(b::residual, b::x);
  }
  ops.rms_norm(b::residual, w.merger_norm, eps, b::x);
  ops.group_rows(b::x, group, b::merged);
  const std::vector<float> projected = project(c, w, b::merged, ops);

  // The unit that ran k-th goes to output row unit_order[k].
  const int64_t hidden = c.text_hidden_size;
  embeddings.resize(projected.size());
  for (size_t k = 0; k < layout.unit_order.size(); ++k)
    std::copy_n(projected.data() + static_cast<int64_t>(k) * hidden, hidden,
                embeddings.data() + static_cast<int64_t>(layout.unit_order[k]) * hidden);
}

}  // namespace

void patch_rows(const vision_config& c, const image_pixels& image, std::vector<float>& rows) {
  if (image.channels != c.num_channels || image.height != c.image_size ||
      image.width != c.image_size)
    throw std::invalid_argument("pixels of " + std::to_string(image.channels) + "x" +
                                std::to_string(image.height) + "x" + std::to_string(image.width) +
                                ", the tower takes " + std::to_string(c.num_channels) + "x" +
                                std::to_string(c.image_size) + "x" + std::to_string(c.image_size));
  const int64_t p = c.patch_size, side = c.image_size / p, plane = image.height * image.width;
  const int64_t patch_dim = c.num_channels * p * p;
  const size_t first = rows.size();
  rows.resize(first + static_cast<size_t>(c.num_positions() * patch_dim), 0.0f);
  float* out = rows.data() + first + (c.class_token ? patch_dim : 0);
  for (int64_t py = 0; py < side; ++py)
    for (int64_t px = 0; px < side; ++px)
      for (int64_t ch = 0; ch < c.num_channels; ++ch)
        for (int64_t y = 0; y < p; ++y) {
          const float* src = image.values + ch * plane + (py * p + y) * image.width + px * p;
          out = std::copy_n(src, p, out);
        }
}

void vision_forward(const vision_config& c, const vision_refs& w,
                    std::span<const image_pixels> images, encoder_ops& ops,
                    std::vector<float>& embeddings) {
  if (c.dynamic_resolution()) return qwen_vision_forward(c, w, images, ops, embeddings);
  const int64_t positions = c.num_positions();
  std::vector<float> input;
  std::vector<int32_t> starts{0};
  for (const image_pixels& image : images) {
    patch_rows(c, image, input);
    starts.push_back(starts.back() + static_cast<int32_t>(positions));
  }
  encoder_rows rows;
  rows.image_starts = starts.data();
  rows.num_images = static_cast<int64_t>(images.size());
  rows.num_rows = starts.back();
  const auto eps = static_cast<float>(c.layer_norm_eps);
  const auto act = encoder_activation_of(c.activation);
  using b = encoder_buffer;

  ops.begin(rows);
  ops.write(b::input, input.data(), c.num_channels * c.patch_size * c.patch_size);
  ops.linear(b::input, w.patch, b::residual);
  ops.add_positions(b::residual, w.positions);
  if (w.pre_norm) ops.layer_norm(b::residual, w.pre_norm, w.pre_norm_bias, eps, b::residual);
  for (const vision_layer_refs& layer : w.layers) {
    ops.layer_norm(b::residual, layer.norm1, layer.norm1_bias, eps, b::x);
    ops.linear(b::x, layer.qkv, b::qkv);
    ops.attention(c.num_heads, c.head_dim(), 1.0f / std::sqrt(static_cast<float>(c.head_dim())));
    ops.linear(b::attention, layer.o, b::x);
    ops.add(b::residual, b::x);
    ops.layer_norm(b::residual, layer.norm2, layer.norm2_bias, eps, b::x);
    ops.linear(b::x, layer.fc1, b::wide);
    ops.activate(b::wide, act);
    ops.linear(b::wide, layer.fc2, b::x);
    ops.add(b::residual, b::x);
  }
  if (w.post_norm) ops.layer_norm(b::residual, w.post_norm, w.post_norm_bias, eps, b::residual);
  if (c.projector == vision_projector::pooled) {
    const int64_t side = c.patches_per_side();
    const auto pooled_side = static_cast<int64_t>(std::lround(std::sqrt(c.pooled_tokens)));
    ops.pool(b::residual, side, side / pooled_side, b::x);
    ops.rms_norm(b::x, w.soft_norm, static_cast<float>(c.projector_norm_eps), b::x);
    ops.linear(b::x, w.projector1, b::wide);
    embeddings.resize(static_cast<size_t>(ops.rows(b::wide) * ops.width(b::wide)));
    ops.read(b::wide, embeddings.data());
    ops.end();
    return;
  }
  // LLaVA's projector works row by row, so it runs on the class token's rows too; they are
  // dropped below where the strategy drops them.
  const std::vector<float> projected = project(c, w, b::residual, ops);

  const int64_t hidden = c.text_hidden_size;
  const int64_t skip = c.class_token && !c.keep_class_token ? 1 : 0;
  embeddings.resize(static_cast<size_t>(rows.num_images * c.tokens_per_image() * hidden));
  float* out = embeddings.data();
  for (int64_t i = 0; i < rows.num_images; ++i) {
    const float* first = projected.data() + (i * positions + skip) * hidden;
    out = std::copy(first, first + c.tokens_per_image() * hidden, out);
  }
}

}  // namespace actorllm

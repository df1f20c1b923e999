#include "model/vision_forward.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace actorllm {

namespace {

encoder_activation encoder_activation_of(vision_activation a) {
  switch (a) {
    case vision_activation::quick_gelu:
      return encoder_activation::quick_gelu;
    case vision_activation::gelu:
      return encoder_activation::gelu;
    case vision_activation::gelu_tanh:
      break;
  }
  return encoder_activation::gelu_tanh;
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
  ops.linear(b::residual, w.projector1, b::wide);
  ops.activate(b::wide, encoder_activation_of(c.projector_activation));
  ops.linear(b::wide, w.projector2, b::x);
  std::vector<float> projected(static_cast<size_t>(ops.rows(b::x) * ops.width(b::x)));
  ops.read(b::x, projected.data());
  ops.end();

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

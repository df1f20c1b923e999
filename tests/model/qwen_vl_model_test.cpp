// Qwen2.5-VL against an independent reference: a random-weight checkpoint
// (scripts/make_random_vlm.py --arch qwen2_5_vl) run by our CPU tower (window attention, 2-D
// rotary, the merger) and decoder (M-RoPE over the paged KV cache), and by
// tests/reference/qwen2_5_vl_reference.py, a float64 numpy forward written from transformers'
// modeling code, on prompts with one and two images of different grids. The patches equal the
// reference's exactly, the M-RoPE positions equal get_rope_index's, the tower's features and
// each greedy step's logits agree within 1e-4 of the largest logit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <numeric>

#include "media/image_decode.hpp"
#include "media/image_processor.hpp"
#include "media/image_processor_config.hpp"
#include "media/qwen2_vl_patches.hpp"
#include "model/kv_cache.hpp"
#include "model/llama_model.hpp"
#include "model/mrope_positions.hpp"
#include "model/qwen_vision_layout.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/reference_decoding.hpp"
#include "tests/support/reference_runs.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;
using testing::relative_error;

constexpr int qwen_steps = 32;
constexpr int32_t im_start = 513, im_end = 514, vision_start = 515, vision_end = 516, image = 517;

struct qwen_case {
  std::string name, args;
  std::vector<std::pair<int, int>> sizes;  ///< each image's (width, height) in pixels
  int32_t chunk;                           ///< the prefill's chunk
};

void PrintTo(const qwen_case& c, std::ostream* os) {
  *os << c.name;
}

/// The reference's run; its pixels are each image's patches, (rows, patch_dim).
struct qwen_reference : testing::vision_reference_run {
  std::vector<std::array<int32_t, 3>> grids;  // (t, h, w) in patches
  std::vector<int32_t> positions;             // (prompt length, 3)
  int32_t delta = 0;
};

/// The chat template's shape: <|im_start|> 20 (<|vision_start|><|image_pad|><|vision_end|> 5 9)
/// per image, 12 <|im_end|>.
std::vector<int32_t> prompt_of(size_t num_images) {
  std::vector<int32_t> p{im_start, 20};
  for (size_t i = 0; i < num_images; ++i)
    p.insert(p.end(), {vision_start, image, vision_end, 5, 9});
  p.insert(p.end(), {12, im_end});
  return p;
}

qwen_reference make_reference(const qwen_case& c) {
  qwen_reference r;
  r.dir = fs::temp_directory_path() / ("actorllm-qwen-vl-" + std::to_string(::getpid()));
  fs::create_directories(r.dir);
  const std::string py = testing::python(), src = testing::source_dir();
  testing::run_command(py + " " + src + "/scripts/make_random_vlm.py --arch qwen2_5_vl " + c.args +
                       " --out " + (r.dir / "model").string() + " >/dev/null");
  std::string sizes, images, prompt;
  for (const auto& [w, h] : c.sizes)
    sizes += "(" + std::to_string(w) + "," + std::to_string(h) + "),";
  testing::run_command(
      py +
      " -c \"import numpy as np; from PIL import Image; g = np.random.default_rng(3); "
      "[Image.fromarray(g.integers(0, 256, (h, w, 3), dtype=np.uint8)).save('" +
      r.dir.string() + "/img%d.png' % i) for i, (w, h) in enumerate([" + sizes + "])]\"");
  for (size_t i = 0; i < c.sizes.size(); ++i)
    images += " --image " + (r.dir / ("img" + std::to_string(i) + ".png")).string();
  for (int32_t t : prompt_of(c.sizes.size())) prompt += std::to_string(t) + ",";
  prompt.pop_back();
  testing::run_command(py + " " + src + "/tests/reference/vision_reference.py " +
                       (r.dir / "model").string() + " --prompt " + prompt + images + " --steps " +
                       std::to_string(qwen_steps) + " --out " + (r.dir / "ref.json").string() +
                       " --pixels-out " + (r.dir / "pixels").string());
  static_cast<testing::vision_reference_run&>(r) = testing::read_vision_reference(r.dir);
  const nlohmann::json& j = r.json;
  r.delta = j["mrope_position_delta"].get<int32_t>();
  for (const auto& g : j["image_grid_thw"]) r.grids.push_back({g[0], g[1], g[2]});
  const auto axes = j["mrope_positions"].get<std::vector<std::vector<int32_t>>>();
  for (size_t p = 0; p < r.prompt.size(); ++p)
    for (size_t a = 0; a < 3; ++a) r.positions.push_back(axes[a][p]);
  return r;
}

/// Our decoding and preprocessing of `png` under the model's preprocessor_config.json.
media::pixel_tensor our_pixels(const fs::path& model_dir, const fs::path& png,
                               media::image_processor_config& config) {
  std::ifstream in(png, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  const media::decoded_image decoded = media::decode_image(bytes);
  EXPECT_TRUE(decoded.ok()) << decoded.error;
  const auto parsed = media::read_image_processor_config(model_dir);
  EXPECT_TRUE(parsed && parsed->ok());
  config = parsed->config;
  media::preprocessed_image pre = media::preprocess(decoded.image, config);
  EXPECT_TRUE(pre.ok()) << pre.error;
  return std::move(pre.tensor);
}

class qwen_vl_model : public ::testing::TestWithParam<qwen_case> {};

TEST_P(qwen_vl_model, patches_positions_features_and_logits_match_the_reference) {
  const qwen_case& c = GetParam();
  // The reference multiplies float32 activations by the bf16 weights: the float tiles, not
  // avx512_bf16's bf16 activations (packed_isa_test and weight_storage_test bound those).
  const testing::scoped_kernel_isa exact(testing::best_float_isa());
  const qwen_reference ref = make_reference(c);
  const llama_model model(ref.dir / "model");
  ASSERT_NE(model.vision(), nullptr);
  const vision_config& vc = model.vision()->config();
  ASSERT_TRUE(vc.dynamic_resolution());
  const size_t num_images = c.sizes.size();
  ASSERT_EQ(ref.image_ranges.size(), num_images);
  const int64_t hidden = model.config().hidden_size;

  // Preprocessing: the patches equal the reference's PIL and numpy steps exactly.
  std::vector<media::pixel_tensor> pixels;
  std::vector<mrope_image> grids;
  for (size_t i = 0; i < num_images; ++i) {
    media::image_processor_config config;
    pixels.push_back(
        our_pixels(ref.dir / "model", ref.dir / ("img" + std::to_string(i) + ".png"), config));
    const media::patchified_image patches = media::patchify_qwen2_vl(pixels.back(), config);
    ASSERT_TRUE(patches.ok()) << patches.error;
    EXPECT_EQ(patches.patches.values, ref.pixels[i]) << "image " << i;
    EXPECT_EQ(patches.patches.grid_h, ref.grids[i][1]);
    EXPECT_EQ(patches.patches.grid_w, ref.grids[i][2]);
    const media::pixel_tensor& t = pixels.back();
    const auto [start, length] = ref.image_ranges[i];
    EXPECT_EQ(vc.tokens_for(t.height, t.width), length);
    grids.push_back({start, length, static_cast<int32_t>(ref.grids[i][1] / vc.merge_size),
                     static_cast<int32_t>(ref.grids[i][2] / vc.merge_size)});
  }

  // M-RoPE: get_rope_index's positions for the prompt, and position + delta after it.
  std::vector<int32_t> positions;
  append_mrope_positions(grids, 0, static_cast<int32_t>(ref.prompt.size()), positions);
  EXPECT_EQ(positions, ref.positions);
  std::vector<int32_t> next;
  append_mrope_positions(grids, static_cast<int32_t>(ref.prompt.size()), 1, next);
  const int32_t generated = static_cast<int32_t>(ref.prompt.size()) + ref.delta;
  EXPECT_EQ(next, (std::vector<int32_t>{generated, generated, generated}));

  // The tower and merger, every image in one batch.
  std::vector<image_pixels> images;
  for (const auto& p : pixels) images.push_back({p.values.data(), p.channels, p.height, p.width});
  cpu::encoder_scratch scratch;
  std::vector<float> embeddings;
  model.vision()->encode(images, scratch, embeddings);
  size_t total_rows = 0;
  for (const auto& range : ref.image_ranges) total_rows += static_cast<size_t>(range.second);
  ASSERT_EQ(embeddings.size(), total_rows * hidden);
  for (size_t i = 0, first = 0; i < num_images; ++i) {
    const std::vector<float> ours(
        embeddings.begin() + static_cast<std::ptrdiff_t>(first),
        embeddings.begin() + static_cast<std::ptrdiff_t>(first + ref.features[i].size()));
    EXPECT_LE(relative_error(ours, ref.features[i]), 1e-4f) << "image " << i;
    first += ref.features[i].size();
  }

  // The decoder, prefilled in chunks that cut through the images, then the reference's tokens
  // fed back one at a time.
  const auto image_rows = [&](int32_t computed, int32_t take, forward_batch& batch) {
    append_mrope_positions(grids, computed, take, batch.axis_positions);
    for (size_t i = 0, row = 0; i < num_images; ++i) {
      const auto [start, length] = ref.image_ranges[i];
      for (int32_t p = std::max(start, computed); p < std::min(start + length, computed + take);
           ++p) {
        batch.embedding_rows.push_back(p - computed);
        const auto at = embeddings.begin() + static_cast<std::ptrdiff_t>(
                                                 (row + static_cast<size_t>(p - start)) * hidden);
        batch.embedding_values.insert(batch.embedding_values.end(), at, at + hidden);
      }
      row += static_cast<size_t>(length);
    }
  };
  testing::expect_greedy_run_matches(model, ref.greedy(), c.chunk, image_rows);
  fs::remove_all(ref.dir);
}

INSTANTIATE_TEST_SUITE_P(
    layouts, qwen_vl_model,
    ::testing::Values(
        qwen_case{"one_image", "", {{80, 60}}, 5},
        qwen_case{"two_images", "", {{80, 60}, {50, 90}}, 7},
        // Grids of several windows a side, padded at the bottom and right.
        qwen_case{"many_windows", "", {{150, 120}, {60, 200}}, 16},
        qwen_case{"tied_bf16", "--tie-word-embeddings --dtype bf16", {{80, 60}, {50, 90}}, 1000}),
    [](const auto& info) { return info.param.name; });

/// The window order and segments by hand: a 6 x 4-unit grid (12 x 8 patches) in windows of 4
/// x 4 units... here windows of 2 units a side.
TEST(qwen_vision_layout, windows_run_row_major_with_the_partial_ones_last_in_their_row) {
  vision_config c;
  c.tower = "qwen2_5_vl";
  c.hidden_size = 8;
  c.num_heads = 1;
  c.patch_size = 1;
  c.merge_size = 2;
  c.temporal_patch_size = 1;
  c.window_size = 4;  // 2 units a side
  c.num_channels = 3;
  // 3 x 5 units (6 x 10 patches).
  std::vector<float> pixels(3 * 6 * 10, 0.0f);
  const grid_result g = qwen_patch_grid(c, 3, 6, 10);
  ASSERT_TRUE(g.error.empty()) << g.error;
  qwen_vision_layout layout;
  append_qwen_image(c, pixels.data(), g.grid, layout);
  EXPECT_EQ(layout.unit_order,
            (std::vector<int32_t>{0, 1, 5, 6, 2, 3, 7, 8, 4, 9, 10, 11, 12, 13, 14}));
  EXPECT_EQ(layout.window_starts, (std::vector<int32_t>{0, 16, 32, 40, 48, 56, 60}));
  EXPECT_EQ(layout.image_starts, (std::vector<int32_t>{0, 60}));
  // A second image's units go to the output rows after the first image's 15.
  append_qwen_image(c, pixels.data(), qwen_patch_grid(c, 3, 4, 4).grid, layout);
  EXPECT_EQ(std::vector<int32_t>(layout.unit_order.begin() + 15, layout.unit_order.end()),
            (std::vector<int32_t>{15, 16, 17, 18}));
  EXPECT_EQ(layout.window_starts.back(), 76);
  EXPECT_FALSE(qwen_patch_grid(c, 3, 6, 9).error.empty());
  EXPECT_FALSE(qwen_patch_grid(c, 1, 6, 10).error.empty());
}

TEST(qwen_vl_config, published_keys_are_read_and_refused_clearly) {
  const fs::path dir =
      fs::temp_directory_path() / ("actorllm-qwen-vl-cfg-" + std::to_string(::getpid()));
  testing::run_command(testing::python() + " " + testing::source_dir() +
                       "/scripts/make_random_vlm.py --arch qwen2_5_vl --out " + dir.string() +
                       " >/dev/null");
  const model_config_hf c = load_model_config(dir);
  EXPECT_EQ(c.architecture, "Qwen2_5_VLForConditionalGeneration");
  ASSERT_TRUE(c.vision.has_value());
  EXPECT_EQ(c.vision->image_token_id, image);
  EXPECT_EQ(c.vision->vision_start_token_id, vision_start);
  EXPECT_EQ(c.vision->full_attention_layers, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(c.mrope_section, (std::array<int32_t, 3>{2, 3, 3}));
  EXPECT_TRUE(c.attention_bias);

  auto refusal = [&](const std::function<void(nlohmann::json&)>& change) {
    std::ifstream in(dir / "config.json");
    auto j = nlohmann::json::parse(in);
    in.close();
    const std::string good = j.dump();
    change(j);
    std::ofstream(dir / "config.json") << j.dump();
    std::string what;
    try {
      load_model_config(dir);
    } catch (const std::exception& e) {
      what = e.what();
    }
    std::ofstream(dir / "config.json") << good;
    return what;
  };
  EXPECT_NE(refusal([](auto& j) { j["rope_scaling"].erase("mrope_section"); }).find("mrope"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& j) {
              j["rope_scaling"]["mrope_section"] = {2, 3, 4};
            }).find("mrope_section"),
            std::string::npos);
  EXPECT_NE(
      refusal([](auto& j) { j["vision_config"]["out_hidden_size"] = 32; }).find("out_hidden_size"),
      std::string::npos);
  EXPECT_NE(refusal([](auto& j) { j["vision_config"]["window_size"] = 30; }).find("window_size"),
            std::string::npos);
  EXPECT_NE(refusal([](auto& j) { j["image_token_id"] = 9999; }).find("image_token_id"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace actorllm

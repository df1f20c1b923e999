// LLaVA and Gemma 3 against an independent reference: a random-weight checkpoint of each
// (scripts/make_random_vlm.py) run by our CPU tower, projector and decoder over the paged KV
// cache, and by tests/reference/vision_reference.py, a float64 numpy forward written from
// transformers' modeling code, on a prompt with two images of different sizes. The tower's
// features, then each greedy step's logits, agree within 1e-4 of the largest logit: LLaVA's
// chunked prefill cutting through the images, Gemma 3's images attended both ways (within and
// past the sliding window).
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
#include "model/kv_cache.hpp"
#include "model/llama_model.hpp"
#include "tests/support/kernel_isa.hpp"
#include "tests/support/random_models.hpp"
#include "tests/support/reference_decoding.hpp"
#include "tests/support/reference_runs.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;
using testing::relative_error;

using llava_reference = testing::vision_reference_run;

constexpr int num_steps = 32;

/// A checkpoint, two PNGs (80x60 and 50x90) and the reference's run of a prompt with the first
/// `num_images` of them.
llava_reference make_reference(const std::string& variant_args, const std::string& prompt,
                               int num_images) {
  llava_reference r;
  r.dir = fs::temp_directory_path() / ("actorllm-llava-" + std::to_string(::getpid()));
  fs::create_directories(r.dir);
  const std::string py = testing::python(), src = testing::source_dir();
  testing::run_command(py + " " + src + "/scripts/make_random_vlm.py " + variant_args + " --out " +
                       (r.dir / "model").string() + " >/dev/null");
  testing::run_command(
      py +
      " -c \"import numpy as np; from PIL import Image; g = np.random.default_rng(3); "
      "[Image.fromarray(g.integers(0, 256, (h, w, 3), dtype=np.uint8)).save('" +
      r.dir.string() + "/img%d.png' % i) for i, (w, h) in enumerate([(80, 60), (50, 90)])]\"");
  testing::run_command(
      py + " " + src + "/tests/reference/vision_reference.py " + (r.dir / "model").string() +
      " --prompt " + prompt + " --image " + (r.dir / "img0.png").string() +
      (num_images > 1 ? " --image " + (r.dir / "img1.png").string() : std::string()) + " --steps " +
      std::to_string(num_steps) + " --out " + (r.dir / "ref.json").string() + " --pixels-out " +
      (r.dir / "pixels").string());
  return testing::read_vision_reference(r.dir);
}

struct vision_case {
  std::string name, args, prompt;
  int num_images;
  int32_t chunk;  ///< prefill chunk: LLaVA's cut through the images, Gemma 3's never do
};

/// Our decoding and preprocessing of `png` (media/) under the model's preprocessor_config.json.
std::vector<float> our_pixels(const fs::path& model_dir, const fs::path& png, bool siglip) {
  std::ifstream in(png, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  const media::decoded_image decoded = media::decode_image(bytes);
  EXPECT_TRUE(decoded.ok()) << decoded.error;
  const auto config = media::read_image_processor_config(
      model_dir, siglip ? media::image_processor_kind::siglip : media::image_processor_kind::clip);
  EXPECT_TRUE(config && config->ok());
  media::preprocessed_image pre = media::preprocess(decoded.image, config->config);
  EXPECT_TRUE(pre.ok()) << pre.error;
  return std::move(pre.tensor.values);
}

void PrintTo(const vision_case& c, std::ostream* os) {
  *os << c.name;
}

class vision_model : public ::testing::TestWithParam<vision_case> {};

TEST_P(vision_model, features_logits_and_greedy_tokens_match_the_reference) {
  const vision_case& c = GetParam();
  // The reference multiplies float32 activations by the bf16 weights: the float tiles, not
  // avx512_bf16's bf16 activations (packed_isa_test and weight_storage_test bound those).
  const testing::scoped_kernel_isa exact(testing::best_float_isa());
  const llava_reference ref = make_reference(c.args, c.prompt, c.num_images);
  const llama_model model(ref.dir / "model");
  ASSERT_NE(model.vision(), nullptr);
  const vision_config& vc = model.vision()->config();
  const auto num_images = static_cast<size_t>(c.num_images);
  ASSERT_EQ(ref.image_ranges.size(), num_images);
  // The preprocessing: the same float32 pixels as the reference's PIL and numpy steps.
  for (size_t i = 0; i < num_images; ++i)
    EXPECT_EQ(our_pixels(ref.dir / "model", ref.dir / ("img" + std::to_string(i) + ".png"),
                         vc.tower == "siglip"),
              ref.pixels[i])
        << "image " << i;
  const int64_t hidden = model.config().hidden_size;

  // The tower and projector, both images in one batch.
  std::vector<image_pixels> images;
  for (const auto& p : ref.pixels) images.push_back({p.data(), 3, vc.image_size, vc.image_size});
  cpu::encoder_scratch scratch;
  std::vector<float> embeddings;
  model.vision()->encode(images, scratch, embeddings);
  ASSERT_EQ(embeddings.size(), num_images * vc.tokens_per_image() * hidden);
  for (size_t i = 0; i < num_images; ++i) {
    ASSERT_EQ(ref.image_ranges[i].second, vc.tokens_per_image());
    const auto first = embeddings.begin() + static_cast<std::ptrdiff_t>(i * ref.features[0].size());
    const std::vector<float> ours(first,
                                  first + static_cast<std::ptrdiff_t>(ref.features[i].size()));
    EXPECT_LE(relative_error(ours, ref.features[i]), 1e-4f) << "image " << i;
  }

  // The decoder with the images' rows, prefilled in chunks (LLaVA's of 7 cut through the
  // images), then the reference's tokens fed back one at a time.
  const bool both_ways = vc.bidirectional_image_attention;
  const auto image_rows = [&](int32_t computed, int32_t take, forward_batch& batch) {
    for (size_t i = 0; i < num_images; ++i) {
      const auto [start, length] = ref.image_ranges[i];
      for (int32_t p = std::max(start, computed); p < std::min(start + length, computed + take);
           ++p) {
        batch.embedding_rows.push_back(p - computed);
        if (both_ways) {
          batch.visible_spans.resize(2 * static_cast<size_t>(take), 0);
          batch.visible_spans[2 * (p - computed)] = start;
          batch.visible_spans[2 * (p - computed) + 1] = start + length;
        }
        const auto row =
            embeddings.begin() + static_cast<std::ptrdiff_t>((i * length + (p - start)) * hidden);
        batch.embedding_values.insert(batch.embedding_values.end(), row, row + hidden);
      }
    }
  };
  testing::expect_greedy_run_matches(model, ref.greedy(), c.chunk, image_rows);
  fs::remove_all(ref.dir);
}

INSTANTIATE_TEST_SUITE_P(
    families, vision_model,
    ::testing::Values(
        vision_case{"llava_one_image", "--arch llava", "1,5,512,9,13", 1, 7},
        vision_case{"llava", "--arch llava", "1,5,512,9,13,17,512,21,25", 2, 7},
        vision_case{"llava_full_gelu_bf16",
                    "--arch llava --vision-feature-select-strategy full --hidden-act gelu "
                    "--dtype bf16",
                    "1,5,512,9,13,17,512,21,25", 2, 7},
        vision_case{"gemma3_one_image", "--arch gemma3", "1,512,5,9", 1, 1000},
        vision_case{"gemma3", "--arch gemma3", "1,512,5,9,512,12", 2, 1000},
        vision_case{"gemma3_window_inside_image", "--arch gemma3 --mm-tokens-per-image 16",
                    "1,512,5,9,512,12", 2, 1000}),
    [](const auto& info) { return info.param.name; });

TEST(llava_config, wrapper_keys_are_read_and_refused_clearly) {
  const fs::path dir =
      fs::temp_directory_path() / ("actorllm-llava-cfg-" + std::to_string(::getpid()));
  testing::run_command(testing::python() + " " + testing::source_dir() +
                       "/scripts/make_random_vlm.py --arch llava --out " + dir.string() +
                       " >/dev/null");
  const model_config_hf c = load_model_config(dir);
  EXPECT_EQ(c.architecture, "LlavaForConditionalGeneration");
  ASSERT_TRUE(c.vision.has_value());
  EXPECT_EQ(c.vision->image_token_id, 512);
  EXPECT_EQ(c.vision->tokens_per_image(), 16);
  EXPECT_EQ(c.vision->num_layers, 2);  // vision_feature_layer -2 of 3: the last never runs
  EXPECT_EQ(c.hidden_size, 64);

  auto rewrite = [&](const std::function<void(nlohmann::json&)>& change) {
    std::ifstream in(dir / "config.json");
    auto j = nlohmann::json::parse(in);
    change(j);
    std::ofstream(dir / "config.json.bad") << j.dump();
    fs::copy_file(dir / "config.json", dir / "config.json.good",
                  fs::copy_options::overwrite_existing);
    fs::copy_file(dir / "config.json.bad", dir / "config.json",
                  fs::copy_options::overwrite_existing);
    std::string what;
    try {
      load_model_config(dir);
    } catch (const std::exception& e) {
      what = e.what();
    }
    fs::copy_file(dir / "config.json.good", dir / "config.json",
                  fs::copy_options::overwrite_existing);
    return what;
  };
  EXPECT_NE(rewrite([](auto& j) {
              j["vision_feature_select_strategy"] = "pad";
            }).find("vision_feature_select_strategy"),
            std::string::npos);
  EXPECT_NE(rewrite([](auto& j) { j["text_config"]["model_type"] = "gpt2"; }).find("text_config"),
            std::string::npos);
  EXPECT_NE(rewrite([](auto& j) { j["image_token_index"] = 99999; }).find("image_token_index"),
            std::string::npos);
  EXPECT_NE(rewrite([](auto& j) {
              j["vision_config"]["num_attention_heads"] = 3;
            }).find("num_attention_heads"),
            std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace actorllm

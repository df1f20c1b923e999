// The engine's image plumbing without a model: the router's placeholder expansion and keys,
// the prefix cache telling images apart through their key tokens, the workers' mirror putting
// the placeholder back, the encoder cache, and the embedding rows of a chunk that cuts an image.
#include "actors/gpu_worker/image_inputs.hpp"

#include <gtest/gtest.h>

#include <numeric>

#include "actors/gpu_worker/encoder_cache.hpp"
#include "actors/gpu_worker/sequence_mirror.hpp"
#include "actors/request_router/image_pipeline.hpp"
#include "actors/scheduler/block_manager.hpp"

namespace actorllm {
namespace {

constexpr int32_t placeholder = 7;

prompt_image image_of(float value, int32_t num_tokens = 4) {
  prompt_image image;
  image.channels = 3;
  image.height = image.width = 2;
  image.pixels.assign(12, value);
  image.num_tokens = num_tokens;
  image.token_id = placeholder;
  image.key = pixels_key(image);
  return image;
}

image_pipeline pipeline() {
  image_spec spec;
  spec.placeholder = spec.image_token = "<img>";
  spec.image_token_id = placeholder;
  spec.tokens_per_image = 4;
  spec.image_size = 2;
  return image_pipeline(spec, [](std::string_view) { return media::fetched_media{}; });
}

/// The prompt with each placeholder id repeated for its image (as tokenizing an expanded text
/// gives it), then the images placed: image_pipeline::place's error, or "".
std::string expand_ids(std::vector<int32_t>& tokens, std::vector<prompt_image>& images) {
  std::vector<int32_t> out;
  size_t next = 0;
  for (int32_t id : tokens) {
    const int32_t copies =
        id == placeholder && next < images.size() ? images[next++].num_tokens : 1;
    out.insert(out.end(), static_cast<size_t>(copies), id);
  }
  tokens = std::move(out);
  return pipeline().place(tokens, images);
}

TEST(image_pipeline, expands_the_text_as_the_processor_does) {
  image_spec spec;
  spec.placeholder = "<start>";
  spec.before = "\n\n<start>";
  spec.after = "<end>\n\n";
  spec.image_token = "<soft>";
  spec.image_token_id = placeholder;
  const image_pipeline gemma_like(spec, [](std::string_view) { return media::fetched_media{}; });
  std::string out;
  ASSERT_EQ(gemma_like.expand("a<start>b<start>c", {image_of(0.5f, 2), image_of(0.25f, 1)}, out),
            "");
  EXPECT_EQ(out, "a\n\n<start><soft><soft><end>\n\nb\n\n<start><soft><end>\n\nc");
  const std::string fault = gemma_like.expand("a<start>b<start>c<start>", {image_of(0.5f)}, out);
  EXPECT_NE(fault.find("3 image placeholders for 1 image"), std::string::npos) << fault;
  EXPECT_NE(gemma_like.expand("no image", {image_of(0.5f)}, out), "");
  EXPECT_NE(gemma_like.expand("a<start>", {}, out), "");
}

TEST(image_pipeline, expands_each_placeholder_to_its_image_positions_with_key_tokens) {
  std::vector<int32_t> tokens = {1, placeholder, 2, 3, placeholder, 4};
  std::vector<prompt_image> images = {image_of(0.5f), image_of(0.25f)};
  ASSERT_EQ(expand_ids(tokens, images), "");
  ASSERT_EQ(tokens.size(), 12u);
  EXPECT_EQ(images[0].offset, 1);
  EXPECT_EQ(images[1].offset, 7);
  EXPECT_EQ(tokens[0], 1);
  EXPECT_EQ(tokens[5], 2);
  EXPECT_EQ(tokens[11], 4);
  for (int32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(tokens[1 + i], image_key_token(images[0].key, i));
    EXPECT_LT(tokens[7 + i], 0);
  }
  EXPECT_NE(tokens[1], tokens[7]);  // different images, different keys
}

TEST(image_pipeline, refuses_image_tokens_that_are_not_the_images) {
  std::vector<prompt_image> two = {image_of(0.5f), image_of(0.25f)};
  std::vector<int32_t> one_run = {1, placeholder, placeholder, placeholder, placeholder, 2};
  EXPECT_NE(pipeline().place(one_run, two), "");
  std::vector<int32_t> short_run = {1, placeholder, placeholder, 2};
  std::vector<prompt_image> one = {image_of(0.5f)};
  EXPECT_NE(pipeline().place(short_run, one), "");  // a run of 2 for an image of 4
  std::vector<prompt_image> none;
  EXPECT_NE(pipeline().place(short_run, none), "");
}

TEST(image_pipeline, the_key_sees_every_pixel_and_the_shape) {
  prompt_image a = image_of(0.5f), b = a;
  b.pixels[11] = 0.5000001f;
  EXPECT_NE(pixels_key(a), pixels_key(b));
  prompt_image c = a;
  c.height = 1, c.width = 4;
  EXPECT_NE(pixels_key(a), pixels_key(c));
  EXPECT_EQ(pixels_key(a), pixels_key(image_of(0.5f)));
}

TEST(image_prefix_cache, prompts_that_differ_only_in_their_image_share_only_the_blocks_before_it) {
  block_manager blocks(block_manager_config{4, 16, 0, true});
  auto prompt_with = [](const prompt_image& image) {
    std::vector<int32_t> tokens = {1, 2, 3, 4, 5, placeholder, 20, 21, 22, 23, 24, 25, 26};
    std::vector<prompt_image> images = {image};
    EXPECT_EQ(expand_ids(tokens, images), "");
    return tokens;  // 16 tokens: the image at 5..8
  };
  const auto first = prompt_with(image_of(0.5f));
  EXPECT_EQ(blocks.allocate(1, first, 16), 0);
  EXPECT_EQ(blocks.num_cached_tokens(prompt_with(image_of(0.5f))), 12);  // the same image
  EXPECT_EQ(blocks.num_cached_tokens(prompt_with(image_of(0.25f))), 4);  // the block before it
}

TEST(image_mirror, the_workers_see_the_placeholder_at_image_positions) {
  std::vector<int32_t> tokens = {1, placeholder, 2};
  std::vector<prompt_image> images = {image_of(0.5f)};
  ASSERT_EQ(expand_ids(tokens, images), "");  // 1, 4 keys, 2
  step_plan plan;
  plan.new_seqs.push_back({"r", 1, 0, 6, sampling_params{}, images});
  scheduled_sequence work;
  work.seq = 1;
  work.num_scheduled_tokens = 3;  // a chunk that ends inside the image
  work.new_token_ids.assign(tokens.begin(), tokens.begin() + 3);
  work.new_block_ids = {0, 1};
  plan.seqs.push_back(work);
  sequence_mirror mirror;
  auto batch = mirror.apply(plan);
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(std::vector<int32_t>(batch[0].token_ids.begin(), batch[0].token_ids.end()),
            (std::vector<int32_t>{1, placeholder, placeholder}));
  step_plan next;
  work.num_computed_tokens = 3;
  work.new_token_ids.assign(tokens.begin() + 3, tokens.end());
  work.new_block_ids.clear();
  next.seqs.push_back(work);
  batch = mirror.apply(next);
  EXPECT_EQ(std::vector<int32_t>(batch[0].token_ids.begin(), batch[0].token_ids.end()),
            (std::vector<int32_t>{placeholder, placeholder, 2}));
  ASSERT_EQ(batch[0].images.size(), 1u);
}

TEST(encoder_cache, evicts_the_least_recently_used_but_never_what_the_step_uses) {
  encoder_cache cache(3 * 4 * sizeof(float));  // three entries of four floats
  cache.insert(1, std::vector<float>(4, 1.0f), 1);
  cache.insert(2, std::vector<float>(4, 2.0f), 1);
  cache.insert(3, std::vector<float>(4, 3.0f), 2);
  ASSERT_NE(cache.find(1, 3), nullptr);  // 1 is now the most recent
  cache.insert(4, std::vector<float>(4, 4.0f), 3);
  EXPECT_EQ(cache.find(2, 3), nullptr);  // the least recently used went
  EXPECT_NE(cache.find(1, 3), nullptr);
  // A step whose entries alone pass the bound keeps them all until it ends.
  cache.insert(5, std::vector<float>(4, 5.0f), 3);
  cache.insert(6, std::vector<float>(4, 6.0f), 3);
  for (uint64_t key : {1, 4, 5, 6}) EXPECT_NE(cache.find(key, 3), nullptr) << key;
  cache.insert(7, std::vector<float>(4, 7.0f), 4);
  EXPECT_LE(cache.bytes(), static_cast<int64_t>(3 * 4 * sizeof(float)));
}

TEST(image_inputs, a_chunk_takes_its_share_of_the_image_rows_and_encodes_once) {
  const int64_t hidden = 2;
  image_inputs inputs({.hidden = hidden, .cache_bytes = 1 << 20});
  std::vector<int32_t> tokens = {1, placeholder, 2};
  std::vector<prompt_image> images = {image_of(0.5f)};
  ASSERT_EQ(expand_ids(tokens, images), "");
  int32_t num_encodes = 0;
  const image_inputs::encoder encode = [&](std::span<const image_pixels> batch,
                                           std::vector<float>& rows) {
    ++num_encodes;
    ASSERT_EQ(batch.size(), 1u);
    rows.resize(4 * hidden);
    std::iota(rows.begin(), rows.end(), 100.0f);  // row r: 100 + 2r, 101 + 2r
  };
  const std::vector<int32_t> placeholders = {1, placeholder, placeholder, placeholder};
  batch_sequence s;
  s.images = images;
  s.start_position = 2;  // the chunk computes positions 2..3: the image's rows 1 and 2
  s.token_ids = std::span<const int32_t>(placeholders).subspan(1, 2);
  EXPECT_EQ(inputs.prepare({s}, 1, encode), 1);
  forward_batch batch;
  inputs.add_rows(s, 5, 1, batch);
  EXPECT_EQ(batch.embedding_rows, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(batch.embedding_values, (std::vector<float>{102, 103, 104, 105}));
  s.start_position = 4;  // the next chunk: the image's last row, then text
  EXPECT_EQ(inputs.prepare({s}, 2, encode), 0);
  EXPECT_EQ(num_encodes, 1);
  forward_batch next;
  inputs.add_rows(s, 0, 2, next);
  EXPECT_EQ(next.embedding_rows, (std::vector<int32_t>{0}));
  EXPECT_EQ(next.embedding_values, (std::vector<float>{106, 107}));
}

TEST(image_inputs, mrope_gives_every_row_of_a_chunk_its_three_positions) {
  // One 56 x 84-pixel image at positions 2..7: a grid of 2 x 3 tokens of 28 pixels.
  image_inputs inputs({.hidden = 1, .cache_bytes = 1 << 20, .mrope_token_side = 28});
  prompt_image image = image_of(0.5f, 6);
  image.height = 56;
  image.width = 84;
  image.offset = 2;
  const std::vector<prompt_image> images = {image};
  const std::vector<int32_t> tokens(12, placeholder);
  const image_inputs::encoder encode = [](std::span<const image_pixels>, std::vector<float>& rows) {
    rows.assign(6, 1.0f);
  };
  batch_sequence s;
  s.images = images;
  s.start_position = 5;  // the image's last three tokens (its second row), then text
  s.token_ids = std::span<const int32_t>(tokens).subspan(5, 5);
  ASSERT_EQ(inputs.prepare({s}, 1, encode), 1);
  forward_batch batch;
  inputs.add_rows(s, 0, 1, batch);
  // The image sits at (2, 2 + row, 2 + column); the text after it goes on from 2 + 3.
  EXPECT_EQ(batch.axis_positions,
            (std::vector<int32_t>{2, 3, 2, 2, 3, 3, 2, 3, 4, 5, 5, 5, 6, 6, 6}));
}

}  // namespace
}  // namespace actorllm

#include "actors/gpu_worker/image_inputs.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace actorllm {

namespace {

/// The positions of `image` that `s` computes this step: [first, end), empty when none.
std::pair<int32_t, int32_t> computed_positions(const batch_sequence& s, const prompt_image& image) {
  const int32_t start = s.start_position;
  const int32_t end = start + static_cast<int32_t>(s.token_ids.size()) - s.num_drafts;
  return {std::max(start, image.offset), std::min(end, image.end())};
}

}  // namespace

int32_t image_inputs::prepare(const std::vector<batch_sequence>& work, uint64_t step,
                              const encoder& encode) {
  std::vector<const prompt_image*> missing;
  for (const batch_sequence& s : work)
    for (const prompt_image& image : s.images) {
      const auto [first, end] = computed_positions(s, image);
      if (first >= end || cache_.find(image.key, step)) continue;
      const bool listed = std::any_of(missing.begin(), missing.end(),
                                      [&](const prompt_image* m) { return m->key == image.key; });
      if (!listed) missing.push_back(&image);
    }
  if (missing.empty()) return 0;
  std::vector<image_pixels> pixels;
  size_t num_rows = 0;
  for (const prompt_image* image : missing) {
    pixels.push_back({image->pixels.data(), image->channels, image->height, image->width});
    num_rows += static_cast<size_t>(image->num_tokens);
  }
  std::vector<float> rows;
  encode(pixels, rows);
  if (rows.size() != num_rows * static_cast<size_t>(options_.hidden))
    throw std::runtime_error(
        "the vision tower gave " + std::to_string(rows.size() / options_.hidden) +
        " embedding rows for images that fill " + std::to_string(num_rows) + " positions");
  auto next = rows.begin();
  for (const prompt_image* image : missing) {
    const auto end = next + static_cast<std::ptrdiff_t>(image->num_tokens * options_.hidden);
    cache_.insert(image->key, std::vector<float>(next, end), step);
    next = end;
  }
  return static_cast<int32_t>(missing.size());
}

void image_inputs::add_rows(const batch_sequence& s, int32_t first_row, uint64_t step,
                            forward_batch& batch) {
  if (const int32_t side = options_.mrope_token_side; side > 0) {
    mrope_images_.clear();
    for (const prompt_image& image : s.images)
      mrope_images_.push_back(
          {image.offset, image.num_tokens, image.height / side, image.width / side});
    append_mrope_positions(mrope_images_, s.start_position,
                           static_cast<int32_t>(s.token_ids.size()), batch.axis_positions);
  }
  for (const prompt_image& image : s.images) {
    const auto [first, end] = computed_positions(s, image);
    if (first >= end) continue;
    const std::vector<float>* rows = cache_.find(image.key, step);
    if (!rows) throw std::logic_error("image_inputs::add_rows before prepare");
    if (options_.bidirectional && end != image.end())
      throw std::runtime_error("a step computes part of an image attended both ways (positions " +
                               std::to_string(first) + " to " + std::to_string(end) + " of " +
                               std::to_string(image.offset) + " to " + std::to_string(image.end()) +
                               ")");
    for (int32_t p = first; p < end; ++p) {
      const int32_t row = first_row + (p - s.start_position);
      if (options_.bidirectional) {
        if (batch.visible_spans.size() <= 2 * static_cast<size_t>(row))
          batch.visible_spans.resize(2 * static_cast<size_t>(row) + 2, 0);
        batch.visible_spans[2 * row] = image.offset;
        batch.visible_spans[2 * row + 1] = image.end();
      }
      batch.embedding_rows.push_back(row);
      const auto values =
          rows->begin() + static_cast<std::ptrdiff_t>((p - image.offset) * options_.hidden);
      batch.embedding_values.insert(batch.embedding_values.end(), values, values + options_.hidden);
    }
  }
}

}  // namespace actorllm

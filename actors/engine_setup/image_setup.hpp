#pragma once
/// A vision-language model's image side for the router, from its folder and the server's
/// media policy: the placeholder and positions of model/vision_config.hpp, the Hugging Face
/// image processor of preprocessor_config.json, and the fetcher of media/media_fetch.hpp.
#include <filesystem>
#include <memory>

#include "actors/request_router/image_pipeline.hpp"
#include "common/media_policy.hpp"
#include "model/vision_config.hpp"
#include "tokenizer/tokenizer.hpp"

namespace actorllm {

/// Throws std::runtime_error naming preprocessor_config.json where it is unreadable or its
/// output is not the tower's input size, or naming the image token the tokenizer lacks.
std::shared_ptr<const image_pipeline> make_image_pipeline(const vision_config& vision,
                                                          const std::filesystem::path& model_dir,
                                                          const media_policy& policy,
                                                          const tokenizer& tok);

}  // namespace actorllm

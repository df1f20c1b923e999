#pragma once
/// The sampling defaults of --generation-config: auto reads generation_config.json from the
/// model folder, vllm uses none (OpenAI's defaults), anything else names a folder that holds
/// a generation_config.json.
#include <filesystem>
#include <string>

#include "common/sampling_defaults.hpp"

namespace actorllm {

/// Reads temperature, top_p, top_k, min_p and repetition_penalty (each checked against the
/// range a request may give). A missing file under auto means no defaults; under a folder it
/// is an error. Throws std::runtime_error naming the file and the field.
sampling_defaults load_generation_defaults(const std::string& setting,
                                           const std::filesystem::path& model_dir);

}  // namespace actorllm

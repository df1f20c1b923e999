#pragma once
/// The supported Hugging Face architectures as data: each name maps to a reader of the keys
/// that set its family apart from Llama (activations, norms, windows, experts, ...), which
/// fills model_config_hf's feature fields. The forward pass and the weight loader read only
/// those fields, never the name.
#include <string>
#include <vector>

#include "model/config_fields.hpp"
#include "model/model_config.hpp"

namespace actorllm {

/// Names accepted in config.json's `architectures`.
std::vector<std::string> supported_architectures();

/// Reads `c.architecture`'s own keys from `f` (the common ones are read already). Throws
/// std::runtime_error for an architecture not supported, naming those that are, or for a key
/// with a value this engine does not implement, naming the key.
void read_architecture_fields(const field_reader& f, model_config_hf& c);

}  // namespace actorllm

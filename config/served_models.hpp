#pragma once
/// Several models behind one `serve`: `--model NAME=PATH` (repeated), `--models-dir DIR` (each
/// sub-folder with a config.json is a model named after its folder) and the single positional
/// model of one-model servers, each with its own flags where they differ (`--model-config FILE`:
/// a JSON map from model name to vLLM-style flags). plan_models() turns them into one
/// engine_config per model. Names, counts and file sizes are bounded: they come from users.
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "config/engine_config.hpp"

namespace actorllm {

/// At most this many models one server serves (flags, folder and file together).
inline constexpr std::size_t max_served_models = 64;
/// A model name (what requests give as `model`) is at most this long.
inline constexpr std::size_t max_model_name_length = 64;
/// --model-config files larger than this are refused unread.
inline constexpr std::size_t max_model_config_bytes = std::size_t{1} << 20;
/// --models-dir: at most this many entries are looked at.
inline constexpr std::size_t max_models_dir_entries = 4096;

/// A model name: 1 to max_model_name_length letters, digits, '.', '_', '-' or ':', the first a
/// letter or digit (so that NAME=PATH, URLs and metric labels never need quoting).
bool is_model_name(std::string_view name);

/// The name a model folder serves under without --served-model-name: the folder's own name,
/// however the path was typed ("a/b", "a/b/", "a/b/."); the whole argument when it names no
/// folder ("." or "/").
std::string folder_name(const std::string& model_argument);

/// Whether a --model value is NAME=PATH rather than a folder: a model name before the first
/// '=', something after it, and the whole value is not an existing folder.
bool is_named_model(std::string_view value);

/// Reads one --model NAME=PATH into `out` (named, in order); an error line, or empty.
std::string parse_named_model(std::string_view value, models_config& out);

/// The models of --models-dir: each sub-folder holding a config.json, named after the folder,
/// sorted by name. Another entry is skipped; a model folder whose name is no model name is an
/// error (one line), as is an unreadable folder.
std::string list_models_dir(const std::string& dir, std::vector<named_model>& out);

/// Each model's own flags, read from a --model-config JSON text: {"NAME": {"max_model_len":
/// 512, "dtype": "float32", "enable_prefix_caching": false, "lora_modules": ["a=/x"], ...}}.
/// Keys are vLLM's flag names with '_' or '-'; true is the bare flag, false its --no- form, a
/// list gives each value, an object its JSON text. Out: model name -> the flags as arguments.
std::string parse_model_config(std::string_view json,
                               std::map<std::string, std::vector<std::string>>& out);

/// One model to serve and the engine config it runs with (model.model its folder,
/// model.served_model_name its name unless it is the positional model without one).
struct model_plan {
  std::string name;
  engine_config config;
};

/// Every model `base` asks for (the positional model first, then --model NAME=PATH in order,
/// then --models-dir's), each with base's flags overridden by its --model-config entry.
/// Command-line --lora-modules are the first model's. Reads --models-dir and --model-config.
/// An error line names the flag (and the model) at fault; nothing is planned then.
std::string plan_models(const engine_config& base, std::vector<model_plan>& out);

/// One model added at run time (POST /admin/models): `model.path` a folder with a config.json,
/// served as `model.name` with base's flags overridden by `flags_json` (one --model-config
/// entry's object text; empty: none). The error line starts with the field at fault (name,
/// path, flags).
std::string plan_model(const engine_config& base, const named_model& model,
                       std::string_view flags_json, model_plan& out);

}  // namespace actorllm

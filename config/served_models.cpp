// Several models behind one server: their names, folders and each one's own flags.
#include "config/served_models.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <system_error>

#include "config/engine_flags.hpp"

namespace actorllm {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-' || c == ':';
}

std::string name_rule() {
  return "letters, digits, '.', '_', '-' or ':', at most " + std::to_string(max_model_name_length) +
         ", starting with a letter or digit";
}

/// Flags a model may not set for itself: its name and folder are the map's, and these are the
/// server's or the process's alone.
const std::set<std::string, std::less<>> server_wide_flags = {"--model",
                                                              "--served-model-name",
                                                              "--max-waiting-requests",
                                                              "--cpu-threads",
                                                              "--cpu-bind",
                                                              "--autoscale",
                                                              "--autoscale-up-window",
                                                              "--autoscale-down-window",
                                                              "--autoscale-cooldown",
                                                              "--tensor-parallel-size"};

/// One flag of a --model-config entry as command-line arguments.
std::string flag_arguments(const std::string& key, const json& value,
                           std::vector<std::string>& out) {
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  if (server_wide_flags.count(flag)) return "'" + key + "' cannot differ between models";
  if (value.is_boolean()) {
    out.push_back(value.get<bool>() ? flag : "--no-" + flag.substr(2));
    return {};
  }
  out.push_back(flag);
  auto one = [&out](const json& v) -> bool {
    if (v.is_string())
      out.push_back(v.get<std::string>());
    else if (v.is_number() || v.is_object())
      out.push_back(v.dump());
    else
      return false;
    return true;
  };
  if (value.is_array()) {
    if (value.empty()) return "'" + key + "' is an empty list";
    for (const auto& v : value)
      if (!one(v)) return "'" + key + "': a list holds strings, numbers or objects";
    return {};
  }
  if (!one(value)) return "'" + key + "' must be a string, number, boolean, list or object";
  return {};
}

/// Reads a whole file of at most max_model_config_bytes.
std::string read_small_file(const std::string& path, std::string& text) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return "cannot read '" + path + "': " + ec.message();
  if (size > max_model_config_bytes)
    return "'" + path + "' has " + std::to_string(size) + " bytes, more than the " +
           std::to_string(max_model_config_bytes) + " allowed";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (!in) return "cannot read '" + path + "'";
  text = buffer.str();
  return {};
}

/// base with `flags` applied over it (a fresh parser, so each model starts from base alone).
std::string apply_flags(const std::vector<std::string>& flags, engine_config& config) {
  flag_parser p("", "");
  add_engine_flags(p, config);
  add_output_parser_flags(p, config);
  std::vector<std::string> args{"model-config"};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  if (auto error = p.parse(static_cast<int>(argv.size()), argv.data())) return *error;
  return {};
}

}  // namespace

bool is_model_name(std::string_view name) {
  if (name.empty() || name.size() > max_model_name_length) return false;
  if (!std::isalnum(static_cast<unsigned char>(name.front()))) return false;
  return std::all_of(name.begin(), name.end(), is_name_char);
}

std::string folder_name(const std::string& model_argument) {
  fs::path p = fs::path(model_argument).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  const std::string name = p.filename().string();
  return name.empty() || name == "." || name == ".." ? model_argument : name;
}

bool is_named_model(std::string_view value) {
  const auto eq = value.find('=');
  if (eq == std::string_view::npos || eq + 1 == value.size()) return false;
  if (!is_model_name(value.substr(0, eq))) return false;
  std::error_code ec;
  return !fs::is_directory(fs::path(std::string(value)), ec);
}

std::string parse_named_model(std::string_view value, models_config& out) {
  const auto eq = value.find('=');
  if (eq == std::string_view::npos) return "must be NAME=PATH (got '" + std::string(value) + "')";
  named_model m{std::string(value.substr(0, eq)), std::string(value.substr(eq + 1))};
  if (!is_model_name(m.name)) return "'" + m.name + "' is no model name (" + name_rule() + ")";
  if (m.path.empty()) return "model '" + m.name + "' needs a folder (NAME=PATH)";
  for (const auto& other : out.named)
    if (other.name == m.name) return "model '" + m.name + "' is given twice";
  if (out.named.size() >= max_served_models)
    return "at most " + std::to_string(max_served_models) + " models";
  out.named.push_back(std::move(m));
  return {};
}

std::string list_models_dir(const std::string& dir, std::vector<named_model>& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  if (ec) return "cannot read '" + dir + "': " + ec.message();
  std::vector<named_model> found;
  std::size_t seen = 0;
  for (; it != end; it.increment(ec)) {
    if (ec) return "cannot read '" + dir + "': " + ec.message();
    if (++seen > max_models_dir_entries)
      return "'" + dir + "' has more than " + std::to_string(max_models_dir_entries) + " entries";
    std::error_code entry_ec;
    if (!it->is_directory(entry_ec) || !fs::exists(it->path() / "config.json", entry_ec)) continue;
    const std::string name = it->path().filename().string();
    if (!is_model_name(name))
      return "the model folder '" + name + "' has no usable name (" + name_rule() + ")";
    found.push_back({name, it->path().string()});
  }
  std::sort(found.begin(), found.end(),
            [](const named_model& a, const named_model& b) { return a.name < b.name; });
  out = std::move(found);
  return {};
}

std::string parse_model_config(std::string_view text,
                               std::map<std::string, std::vector<std::string>>& out) {
  const json parsed = json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object())
    return "must be a JSON object mapping each model's name to its flags";
  if (parsed.size() > max_served_models)
    return "names " + std::to_string(parsed.size()) + " models, more than " +
           std::to_string(max_served_models);
  std::map<std::string, std::vector<std::string>> result;
  for (const auto& [name, flags] : parsed.items()) {
    if (!flags.is_object())
      return "model '" + name + "': its flags must be an object, as {\"max_model_len\": 512}";
    auto& args = result[name];
    for (const auto& [key, value] : flags.items())
      if (auto error = flag_arguments(key, value, args); !error.empty())
        return "model '" + name + "': " + error;
  }
  out = std::move(result);
  return {};
}

std::string plan_models(const engine_config& base, std::vector<model_plan>& out) {
  std::vector<named_model> models;
  if (!base.model.model.empty()) {
    // The positional model keeps today's naming: --served-model-name, else its folder's name.
    const std::string& served = base.model.served_model_name;
    models.push_back({served.empty() ? folder_name(base.model.model) : served, base.model.model});
  } else if (!base.model.served_model_name.empty()) {
    return "--served-model-name: names the positional model; --model NAME=PATH names the others";
  }
  models.insert(models.end(), base.models.named.begin(), base.models.named.end());
  if (!base.models.models_dir.empty()) {
    std::vector<named_model> listed;
    if (auto error = list_models_dir(base.models.models_dir, listed); !error.empty())
      return "--models-dir: " + error;
    if (listed.empty()) return "--models-dir: '" + base.models.models_dir + "' holds no model";
    models.insert(models.end(), listed.begin(), listed.end());
  }
  if (models.empty()) return "--model: a model folder is required";
  if (models.size() > max_served_models)
    return std::to_string(models.size()) + " models: at most " + std::to_string(max_served_models) +
           " are served";
  std::set<std::string> names;
  for (const auto& m : models)
    if (!names.insert(m.name).second) return "two models are named '" + m.name + "'";

  std::map<std::string, std::vector<std::string>> own_flags;
  if (!base.models.model_config_file.empty()) {
    std::string text;
    if (auto error = read_small_file(base.models.model_config_file, text); !error.empty())
      return "--model-config: " + error;
    if (auto error = parse_model_config(text, own_flags); !error.empty())
      return "--model-config: " + error;
    for (const auto& [name, flags] : own_flags)
      if (!names.count(name)) return "--model-config: '" + name + "' names no served model";
  }

  std::vector<model_plan> plans;
  for (std::size_t i = 0; i < models.size(); ++i) {
    model_plan plan{models[i].name, base};
    plan.config.models = {};
    plan.config.model.model = models[i].path;
    const bool positional = i == 0 && !base.model.model.empty();
    if (!positional) plan.config.model.served_model_name = models[i].name;
    if (i > 0) plan.config.lora.modules.clear();  // the command line's adapters: the first's
    if (auto it = own_flags.find(models[i].name); it != own_flags.end())
      if (auto error = apply_flags(it->second, plan.config); !error.empty())
        return "--model-config: model '" + models[i].name + "': " + error;
    if (auto errors = plan.config.validate(); !errors.empty())
      return "model '" + models[i].name + "': " + errors.front();
    plans.push_back(std::move(plan));
  }
  out = std::move(plans);
  return {};
}

std::string plan_model(const engine_config& base, const named_model& model,
                       std::string_view flags_json, model_plan& out) {
  if (!is_model_name(model.name))
    return "name: '" + model.name + "' is no model name (" + name_rule() + ")";
  std::error_code error;
  if (!std::filesystem::is_regular_file(std::filesystem::path(model.path) / "config.json", error))
    return "path: '" + model.path + "' is no model folder (it holds no config.json)";
  std::map<std::string, std::vector<std::string>> own_flags;
  if (!flags_json.empty()) {
    json flags = json::parse(flags_json, nullptr, false);
    if (flags.is_discarded() || !flags.is_object())
      return "flags: must be an object of vLLM flags, as {\"max_model_len\": 512}";
    const json entry = {{model.name, std::move(flags)}};
    if (auto why = parse_model_config(entry.dump(), own_flags); !why.empty())
      return "flags: " + why;
  }
  model_plan plan{model.name, base};
  plan.config.models = {};
  plan.config.model.model = model.path;
  plan.config.model.served_model_name = model.name;
  plan.config.lora.modules.clear();
  if (auto it = own_flags.find(model.name); it != own_flags.end())
    if (auto why = apply_flags(it->second, plan.config); !why.empty()) return "flags: " + why;
  if (auto errors = plan.config.validate(); !errors.empty()) return "flags: " + errors.front();
  out = std::move(plan);
  return {};
}

}  // namespace actorllm

#pragma once
/// Random-weight checkpoints of each supported family, made by scripts/make_random_model.py
/// (the HF tensor names and config keys of each) into a temporary folder that lives as long
/// as the object.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace actorllm::testing {

/// Debian's python3 (with python3-numpy), or ACTORLLM_PYTHON.
inline std::string python() {
  const char* env = std::getenv("ACTORLLM_PYTHON");
  return env && *env ? env : "/usr/bin/python3";
}

/// The checkout whose scripts/ make the checkpoints: ACTORLLM_SOURCE_DIR from the environment
/// (binaries built on one machine and run on another, scripts/gpu-bundle.sh), else the one the
/// tests were built from.
inline std::string source_dir() {
  const char* env = std::getenv("ACTORLLM_SOURCE_DIR");
  return env && *env ? env : ACTORLLM_SOURCE_DIR;
}

class random_model {
 public:
  /// `args` for make_random_model.py, e.g. "--arch qwen3"; `name` names the folder.
  random_model(const std::string& name, const std::string& args)
      : dir_(std::filesystem::temp_directory_path() /
             ("actorllm-" + name + "-" + std::to_string(::getpid()))) {
    const std::string command = python() + " " + source_dir() + "/scripts/make_random_model.py " +
                                args + " --out " + (dir_ / "model").string() + " >/dev/null";
    if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  }
  ~random_model() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  random_model(const random_model&) = delete;
  random_model& operator=(const random_model&) = delete;

  std::filesystem::path dir() const { return dir_ / "model"; }
  std::filesystem::path scratch() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

/// A random PEFT LoRA adapter for a model folder, and that model with the adapter merged into
/// its weights (the reference), made by scripts/make_random_lora.py into a temporary folder
/// that lives as long as the object.
class random_lora {
 public:
  /// `args` for make_random_lora.py besides --base, --out and --merged, e.g. "--rank 4".
  random_lora(const std::string& name, const std::filesystem::path& base, const std::string& args)
      : dir_(std::filesystem::temp_directory_path() /
             ("actorllm-lora-" + name + "-" + std::to_string(::getpid()))) {
    const std::string command = python() + " " + source_dir() +
                                "/scripts/make_random_lora.py --base " + base.string() + " " +
                                args + " --out " + adapter().string() + " --merged " +
                                merged().string() + " >/dev/null";
    if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
  }
  ~random_lora() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  random_lora(const random_lora&) = delete;
  random_lora& operator=(const random_lora&) = delete;

  std::filesystem::path adapter() const { return dir_ / "adapter"; }
  std::filesystem::path merged() const { return dir_ / "merged"; }

 private:
  std::filesystem::path dir_;
};

}  // namespace actorllm::testing

#pragma once
/// The PIL reference data of the media tests: tests/media/pil_reference.py, run once per test
/// process into a temporary folder that is removed at exit, and readers for what it wrote.
/// Without PIL the script fails, and so does every test that asks for the data.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/random_models.hpp"

namespace actorllm::media::testing {

struct pil_reference {
  std::filesystem::path dir;
  nlohmann::json manifest;
  std::string error;  // why there is no data; empty when there is

  pil_reference() {
    dir = std::filesystem::temp_directory_path() / ("actorllm-media-" + std::to_string(::getpid()));
    const std::string command = actorllm::testing::python() + " " +
                                actorllm::testing::source_dir() + "/tests/media/pil_reference.py " +
                                dir.string();
    if (std::system(command.c_str()) != 0) {
      error = "failed (PIL and numpy are needed: python3-pil, python3-numpy): " + command;
      return;
    }
    std::ifstream in(dir / "manifest.json");
    manifest = nlohmann::json::parse(in, nullptr, false);
    if (manifest.is_discarded()) error = "unreadable " + (dir / "manifest.json").string();
  }
  ~pil_reference() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  pil_reference(const pil_reference&) = delete;
  pil_reference& operator=(const pil_reference&) = delete;
};

/// The data, made on first use.
inline const pil_reference& pil() {
  static const pil_reference data;
  return data;
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A file of little-endian float32 values (this machine's order).
inline std::vector<float> read_floats(const std::filesystem::path& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

/// The index of the first byte where a and b differ (they have the same size), or -1.
inline std::ptrdiff_t first_difference(const std::vector<uint8_t>& a,
                                       const std::vector<uint8_t>& b) {
  const auto [ia, ib] = std::mismatch(a.begin(), a.end(), b.begin());
  return ia == a.end() ? -1 : ia - a.begin();
}

}  // namespace actorllm::media::testing

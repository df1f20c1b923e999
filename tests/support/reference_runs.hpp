#pragma once
/// What the tests that run a Python reference share: running a command, reading the float32
/// files it writes, and comparing our values with its.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace actorllm::testing {

/// Runs `command` through the shell; a failure fails the test (check HasFatalFailure after).
inline void run_command(const std::string& command) {
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
}

/// A file of little-endian float32 values.
inline std::vector<float> read_floats(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v(std::filesystem::file_size(path) / sizeof(float));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * 4));
  return v;
}

/// Largest |a - b| over the largest |b| (at least 1).
inline float relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  float largest = 1.0f, worst = 0.0f;
  for (size_t i = 0; i < b.size(); ++i) {
    largest = std::max(largest, std::abs(b[i]));
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst / largest;
}

}  // namespace actorllm::testing

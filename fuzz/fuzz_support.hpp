#pragma once
/// What the fuzz targets share: a private scratch folder for the targets whose code under test
/// reads files, and the reference data folder (../shared) for the ones that load a tokenizer.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace actorllm::fuzz {

/// A folder of this process's own under $TMPDIR, made on first use and removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "actorllm-fuzz-XXXXXX").string();
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(scratch_dir(), ignored);
    });
    return std::filesystem::path(pattern);
  }();
  return dir;
}

/// Writes `bytes` to `path` (truncating it).
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

/// ACTORLLM_SHARED_DIR from the environment, else the checkout's sibling ../shared.
inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("ACTORLLM_SHARED_DIR"); env && *env) return env;
  return ACTORLLM_SHARED_DIR_DEFAULT;
}

/// Stops the process with a message when an invariant of the code under test does not hold:
/// libFuzzer reports the abort as a crash and keeps the input.
#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "FUZZ_CHECK failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

}  // namespace actorllm::fuzz

#pragma once
/// Where tests find the read-only reference data (models, tokenizers, templates).
/// ACTORLLM_SHARED_DIR in the environment wins over the path baked in at configure time.
#include <cstdlib>
#include <filesystem>
#include <string>

namespace actorllm::testing {

inline std::filesystem::path shared_dir() {
  if (const char* env = std::getenv("ACTORLLM_SHARED_DIR"); env && *env) return env;
#ifdef ACTORLLM_SHARED_DIR_DEFAULT
  return ACTORLLM_SHARED_DIR_DEFAULT;
#else
  return "../shared";
#endif
}

inline std::filesystem::path stories260k_dir() {
  return shared_dir() / "models" / "stories260K";
}

}  // namespace actorllm::testing

#pragma once
/// ACTORLLM_CHECK(cond): a broken invariant (a bug, never bad input) aborts the process and
/// names the expression, file and line. It stays on in release builds: a scheduler that goes
/// on with a corrupt block table would silently return wrong text.
#include <cstdio>
#include <cstdlib>

#define ACTORLLM_CHECK(cond)                                                                    \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "actorllm: check failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                             \
    }                                                                                           \
  } while (false)

# Sanitizers for every C and C++ target of the build, chosen by ACTORLLM_SANITIZE:
#   address,undefined   AddressSanitizer + UndefinedBehaviorSanitizer (every UB report fatal)
#   thread              ThreadSanitizer
# plus, with ACTORLLM_FUZZ, the coverage instrumentation libFuzzer needs (fuzzer-no-link), so
# that the libraries a fuzz target links are explored too. Included before the folders, since
# add_compile_options reaches only the targets created after it. CUDA code is not instrumented;
# the presets (CMakePresets.json) build these trees with -DACTORLLM_CUDA=OFF.
set(ACTORLLM_SANITIZE "" CACHE STRING
    "Sanitizers for every target, as -fsanitize= takes them (address,undefined | thread)")

set(_sanitize_flags)
if(ACTORLLM_SANITIZE)
  list(APPEND _sanitize_flags -fsanitize=${ACTORLLM_SANITIZE} -fno-omit-frame-pointer)
  if(ACTORLLM_SANITIZE MATCHES "undefined")
    # Every report is fatal: unrecoverable checks (the vptr check's third-party report in
    # CAF's headers is suppressed at run time by cmake/sanitizers/ubsan.supp).
    list(APPEND _sanitize_flags -fno-sanitize-recover=undefined)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      # Clang 14 cannot emit the function check's prologue data for C++20 coroutines ("Cannot
      # represent a difference across sections", bench/serve_bench_client.hpp); the check only
      # catches calls through a function pointer of the wrong type.
      list(APPEND _sanitize_flags -fno-sanitize=function)
    endif()
  endif()
endif()
if(ACTORLLM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "ACTORLLM_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14")
  endif()
  list(APPEND _sanitize_flags -fsanitize=fuzzer-no-link)
endif()
if(_sanitize_flags AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # At -O1 clang cannot honour every `#pragma omp simd` and says so for each loop.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-pass-failed>)
endif()
if(_sanitize_flags)
  message(STATUS "actorllm: instrumenting with ${_sanitize_flags}")
  foreach(flag ${_sanitize_flags})
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:${flag}>)
    if(NOT flag STREQUAL "-fsanitize=fuzzer-no-link")
      add_link_options($<$<LINK_LANGUAGE:C,CXX>:${flag}>)
    endif()
  endforeach()
endif()

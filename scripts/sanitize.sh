#!/usr/bin/env bash
# The test suite under sanitizers, from the presets in CMakePresets.json (clang-14, no CUDA):
#
#   ./scripts/sanitize.sh            both
#   ./scripts/sanitize.sh asan       AddressSanitizer + UBSan: every test binary, every label
#                                    but e2e (scripts against the real binary) and gpu
#   ./scripts/sanitize.sh tsan       ThreadSanitizer: the cores, api and net tests (TSAN_SUITES=cores
#                                    for the cores alone, as CI runs it). Not the actors:
#                                    Debian's libcaf_core is not instrumented, so each message
#                                    hand-off between actors (synchronized inside that library)
#                                    reads as a race in the receiving handler (hundreds of
#                                    reports per test); that needs CAF built with TSan
#   ./scripts/sanitize.sh asan -R X  extra arguments go to ctest
#
# The asan tree (build-asan/) is also the build without CUDA that CI proves, and holds the
# fuzz targets (scripts/fuzz.sh). Cost in CI (2 cores, empty tree): see .ci/run.
#
# Builds take /tmp/actorllm-build.lock (ACTORLLM_BUILD_LOCK) one target at a time, so that
# other builds on a shared machine interleave; uncontended in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/clang_14.sh

which_one="${1:-all}"
[[ $# -gt 0 ]] && shift
case "$which_one" in
  asan | tsan | all) ;;
  *) echo "usage: $0 [asan|tsan|all] [ctest arguments...]" >&2; exit 2 ;;
esac

ensure_clang_14

lock="${ACTORLLM_BUILD_LOCK:-/tmp/actorllm-build.lock}"
locked() { flock "$lock" "$@"; }

# run_preset NAME TARGET...: configure once, build target by target, then ctest the preset.
run_preset() {
  local name="$1"; shift
  local dir="build-$name"
  local start=$SECONDS
  [[ -f "$dir/build.ninja" ]] || locked cmake --preset "$name" >/dev/null
  for target in "$@"; do
    locked cmake --build "$dir" -j "$(nproc)" --target "$target"
  done
  local built=$SECONDS
  ctest --preset "$name" -j "$(nproc)" "${ctest_args[@]}"
  echo "sanitize: $name built in $((built - start)) s, tested in $((SECONDS - built)) s"
}

ctest_args=("$@")
if [[ "$which_one" == asan || "$which_one" == all ]]; then
  run_preset asan config_tests kernels_tests tokenizer_tests chat_template_tests grammar_tests tool_calls_tests \
    media_tests model_tests monitoring_tests cores_tests actors_tests app_tests api_tests net_tests \
    fuzzers
fi
if [[ "$which_one" == tsan || "$which_one" == all ]]; then
  # TSAN_SUITES picks among the three (CI runs cores only, for time: the net tests' Beast files
  # are most of a TSan build).
  read -r -a suites <<<"${TSAN_SUITES:-cores api net}"
  targets=()
  for suite in "${suites[@]}"; do targets+=("${suite}_tests"); done
  ctest_args+=(-L "^($(IFS='|'; echo "${suites[*]}"))\$")
  run_preset tsan "${targets[@]}"
fi

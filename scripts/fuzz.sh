#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (in the "asan" preset's tree: clang-14, ASan + UBSan,
# build-asan/, shared with scripts/sanitize.sh) and runs them, each from its committed seeds
# fuzz/corpus/<target>/ plus the inputs it found before (build-asan/corpus/<target>/, not
# committed).
#
#   ./scripts/fuzz.sh --ci              every target for FUZZ_SECONDS (default 30) seconds,
#                                       FUZZ_JOBS (default: the number of cores) at a time
#   ./scripts/fuzz.sh TARGET SECONDS    one target, longer (TARGET: a name from --list)
#   ./scripts/fuzz.sh --list            the targets
#   ./scripts/fuzz.sh --build           build only
#
# A crash, a leak, a UBSan report, a timeout (over 10 s for one input) or an allocation over
# 2 GiB stops the target; the input is saved as build-asan/artifacts/<target>/crash-... (or
# leak-, timeout-, oom-) and the script fails. Replay one with
#   build-asan/fuzz/fuzz_<target> build-asan/artifacts/<target>/crash-...
#
# Cost on 2 cores (--ci): the targets build in a few minutes once the asan tree exists; the
# runs take 8 targets x 30 s, two at a time: 2 min.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/clang_14.sh

targets=(openai_request tokenizer_encode tokenizer_load jinja safetensors model_config
         http_session websocket grammar image_decode)
build_dir=build-asan
lock="${ACTORLLM_BUILD_LOCK:-/tmp/actorllm-build.lock}"

usage() {
  echo "usage: $0 --ci | --list | --build | TARGET SECONDS" >&2
  exit 2
}

build() {
  ensure_clang_14
  [[ -f "$build_dir/build.ninja" ]] || flock "$lock" cmake --preset asan >/dev/null
  # One target per hold of the lock, so that other builds interleave on a shared machine.
  for t in "$@"; do
    flock "$lock" cmake --build "$build_dir" -j "$(nproc)" --target "fuzz_$t"
  done
}

# run TARGET SECONDS: fuzzes one target; its output goes to build-asan/logs/TARGET.log.
run() {
  local t="$1" seconds="$2"
  local work="$build_dir/corpus/$t" artifacts="$build_dir/artifacts/$t"
  mkdir -p "$work" "$artifacts" "$build_dir/logs"
  local dict=()
  [[ -f "fuzz/$t.dict" ]] && dict=(-dict="fuzz/$t.dict")
  # LSan's leak check after each input that freed less than it allocated; UBSan stops at once.
  ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}" \
  UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$PWD/cmake/sanitizers/ubsan.supp}" \
    "$build_dir/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" \
      "$work" "fuzz/corpus/$t" >"$build_dir/logs/$t.log" 2>&1
}

# Prints one line per target, and the log's tail of each failed one; fails if any failed.
report() {
  local failed=0
  for t in "$@"; do
    local log="$build_dir/logs/$t.log"
    local execs
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
    if grep -q "^Done [0-9]* runs" "$log"; then
      echo "fuzz: $t ok (${execs:-?} runs)"
    else
      failed=1
      echo "fuzz: $t FAILED; log $log, inputs in $build_dir/artifacts/$t/"
      tail -n 60 "$log"
    fi
  done
  return "$failed"
}

case "${1:-}" in
  --list) printf '%s\n' "${targets[@]}" ;;
  --build) build "${targets[@]}" ;;
  --ci)
    seconds="${FUZZ_SECONDS:-30}"
    # A fixed seed by default, so that CI explores the same inputs each run (a new crash shows
    # up in a longer run, `./scripts/fuzz.sh TARGET SECONDS`, not as a random CI failure).
    export FUZZ_SEED="${FUZZ_SEED:-1}"
    jobs="${FUZZ_JOBS:-$(nproc)}"
    start=$SECONDS
    build "${targets[@]}"
    built=$SECONDS
    # FUZZ_JOBS targets at a time (each fuzzer is one process).
    for t in "${targets[@]}"; do
      while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
      echo "fuzz: $t for $seconds s"
      run "$t" "$seconds" &
    done
    wait || true
    status=0
    report "${targets[@]}" || status=1
    echo "fuzz: built in $((built - start)) s, fuzzed in $((SECONDS - built)) s"
    exit "$status"
    ;;
  "" | -*) usage ;;
  *)
    t="$1" seconds="${2:-}"
    [[ "$seconds" =~ ^[0-9]+$ ]] || usage
    printf '%s\n' "${targets[@]}" | grep -qx "$t" || { echo "fuzz: no target $t" >&2; usage; }
    build "$t"
    run "$t" "$seconds" || true
    report "$t"
    ;;
esac

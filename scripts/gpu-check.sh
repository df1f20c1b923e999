#!/usr/bin/env bash
# One-shot check on a machine with an NVIDIA GPU, from a clean checkout, in under 8 minutes:
# dependencies (best effort), a Release build for the local GPU, the GPU kernel tests, the
# stories260K golden greedy on the GPU (cuda_golden; GOLDEN_MODEL_DIR), the engine with
# --device cuda (full project only), the kernel benchmarks, the server at concurrency 1, 32
# and 256 with CUDA graphs and eager (full project only), and a closing table.
#
#   ./scripts/gpu-check.sh
#   BUILD_DIR=build-gpu JOBS=16 CUDA_ARCH=90 ./scripts/gpu-check.sh
#   GPU_CHECK_MODE=gpu-only ./scripts/gpu-check.sh     (skip dependencies and the full project)
#   GPU_CHECK_MODE=prebuilt BIN_DIR=.gpu-data/bin ./scripts/gpu-check.sh
#                                    (run binaries built elsewhere: see scripts/gpu-bundle.sh)
#   DEPS_TIMEOUT=60                                     (seconds allowed to setup.sh --deps-only)
#   GOLDEN_MODEL_DIR=.gpu-data/stories260K              (default ../shared/models/stories260K)
#   ./scripts/gpu-check.sh --prepare                   (on this machine, before: see below)
#
# Where the server's dependencies are missing (no package registry on the machine), the full
# project does not configure; the script then builds the GPU-only project in
# tools/gpu_only (kernels, tests, bench, model/ and cuda_golden; stand-ins for what
# is absent). model/ needs nlohmann_json's headers, which have no stand-in: `--prepare`, run
# on a machine that has them (Debian: nlohmann-json3-dev), copies /usr/include/nlohmann (or
# JSON_HEADERS=DIR) into .gpu-data/include/nlohmann, ignored by git and carried with the
# checkout; the GPU-only build then takes them from there (-DACTORLLM_JSON_INCLUDE).
# Logs go to $BUILD_DIR/gpu-check/, and to $OUT/gpu-check-logs.tgz as well when OUT is set.
# Exit status: 0 when the build and every GPU test passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
json_include=.gpu-data/include

if [[ ${1:-} == --prepare ]]; then
  src=${JSON_HEADERS:-/usr/include/nlohmann}
  if [[ ! -f $src/json.hpp ]]; then
    echo "gpu-check --prepare: no $src/json.hpp (apt-get install nlohmann-json3-dev, or set" \
         "JSON_HEADERS to a folder holding json.hpp)" >&2
    exit 1
  fi
  rm -rf "$json_include/nlohmann" && mkdir -p "$json_include" &&
    cp -rL "$src" "$json_include/nlohmann" || exit 1
  echo "gpu-check --prepare: $src copied to $json_include/nlohmann"
  exit 0
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--prepare]" >&2
  exit 2
fi

build_dir=${BUILD_DIR:-build-gpu}
jobs=${JOBS:-$(nproc)}
arch=${CUDA_ARCH:-90}
export PATH="/usr/local/cuda/bin:$PATH"
logs="$build_dir/gpu-check"
mkdir -p "$logs"
start_all=$(date +%s)

summary=()    # rows "step|status|seconds|detail"
failed=0
record() { summary+=("$1|$2|$3|$4"); }
elapsed() { echo $(( $(date +%s) - $1 )); }
say() { echo "== gpu-check: $*"; }

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
# The GPU-only project's JSON headers, where --prepare copied them.
json_args=()
if [[ -f $json_include/nlohmann/json.hpp ]]; then
  json_args=(-DACTORLLM_JSON_INCLUDE="$PWD/$json_include")
fi

# --- device ---------------------------------------------------------------------------------
device="unknown"
if command -v nvidia-smi >/dev/null; then
  device=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null |
           head -1)
  say "device: $device"
else
  say "nvidia-smi not found"
fi
say "nvcc: $(nvcc --version 2>/dev/null | tail -1 || echo missing); cmake: $(cmake --version | head -1)"

# --- dependencies ---------------------------------------------------------------------------
t=$(date +%s)
deps_status=present
if [[ ${GPU_CHECK_MODE:-full} != full ]]; then deps_status=skipped; fi
full_deps=(libcaf-dev libboost1.81-dev nlohmann-json3-dev prometheus-cpp-dev libgtest-dev
           libopenblas-dev libpcre2-dev)
if [[ $deps_status == present ]] && ! dpkg-query -W "${full_deps[@]}" >/dev/null 2>&1; then
  # Capped: on a machine without a package registry apt-get can hang on its network timeouts.
  say "installing dependencies (best effort, at most ${DEPS_TIMEOUT:-60} s)"
  if timeout "${DEPS_TIMEOUT:-60}" ./scripts/setup.sh --deps-only >"$logs/deps.log" 2>&1; then
    deps_status=installed
  else
    deps_status="failed"
    say "dependency install failed (see $logs/deps.log); building with what is present"
  fi
fi
record deps "$deps_status" "$(elapsed "$t")" "setup.sh --deps-only"

# --- build ----------------------------------------------------------------------------------
# Full project first; on any failure the GPU-only project.
t=$(date +%s)
mode=${GPU_CHECK_MODE:-full}
bin_dir="$build_dir"
targets=(cuda_tests cuda_kernels_bench actors_tests actorllm serve_bench)
if [[ $mode == prebuilt ]]; then
  # A full project's binaries built on another machine (scripts/gpu-bundle.sh), the shared
  # libraries they need beside them in lib/.
  bin_dir=${BIN_DIR:?GPU_CHECK_MODE=prebuilt needs BIN_DIR}
  export LD_LIBRARY_PATH="$PWD/$bin_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  missing=$(ldd "$bin_dir/actorllm" "$bin_dir/tests/cuda_tests" 2>&1 | grep 'not found' | sort -u)
  [[ -n $missing ]] && say "libraries not found (set LD_LIBRARY_PATH): $missing"
elif [[ $mode == gpu-only ]]; then
  :
elif ! cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DACTORLLM_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" >"$logs/configure.log" 2>&1; then
  mode=gpu-only
elif ! cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}" >"$logs/build.log" 2>&1; then
  say "full build failed (tail of $logs/build.log below); trying the GPU-only project"
  tail -20 "$logs/build.log"
  mode=gpu-only
fi
if [[ $mode == gpu-only ]]; then
  bin_dir="$build_dir-only"
  say "building the GPU-only project in $bin_dir"
  if cmake -S tools/gpu_only -B "$bin_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_ARCHITECTURES="$arch" "${json_args[@]}" \
        >"$logs/configure-gpu-only.log" 2>&1 &&
     cmake --build "$bin_dir" -j "$jobs" >"$logs/build-gpu-only.log" 2>&1; then
    :
  else
    say "GPU-only build failed:"
    tail -40 "$logs/configure-gpu-only.log" "$logs/build-gpu-only.log" 2>/dev/null
    record build FAILED "$(elapsed "$t")" "$mode, arch $arch"
    failed=1
  fi
fi
if ((failed == 0)) && [[ $mode == prebuilt ]]; then
  record build ok 0 "prebuilt binaries in $bin_dir"
elif ((failed == 0)); then
  record build ok "$(elapsed "$t")" "$mode, arch $arch, -j$jobs"
fi

# --- GPU tests ------------------------------------------------------------------------------
run_gpu_tests() {
  local t bin passed skipped failures
  t=$(date +%s)
  bin="$bin_dir/tests/cuda_tests"
  if [[ ! -x $bin ]]; then
    record tests FAILED 0 "no test binary"
    failed=1
    return
  fi
  timeout 200 "$bin" --gtest_color=no >"$logs/tests.log" 2>&1
  local rc=$?
  passed=$(grep -E '^\[  PASSED  \]' "$logs/tests.log" | grep -oE '[0-9]+' | head -1)
  skipped=$(grep -E '^\[  SKIPPED \] [0-9]+ test' "$logs/tests.log" | grep -oE '[0-9]+' | head -1)
  failures=$(grep -E '^\[  FAILED  \] [0-9]+ test' "$logs/tests.log" | grep -oE '[0-9]+' | head -1)
  if ((rc != 0)); then
    say "GPU tests failed (rc $rc); failures:"
    grep -E -B2 -A6 'Failure|exception|FAILED|Skipped' "$logs/tests.log" | head -120
    record tests FAILED "$(elapsed "$t")" "passed ${passed:-0}, failed ${failures:-?}, skipped ${skipped:-0}, rc $rc"
    failed=1
  elif [[ -n ${skipped:-} && ${skipped:-0} -gt 0 ]]; then
    say "GPU tests skipped: is the GPU visible?"
    record tests SKIPPED "$(elapsed "$t")" "passed ${passed:-0}, skipped $skipped"
    failed=1
  else
    record tests ok "$(elapsed "$t")" "passed ${passed:-0}"
  fi
  grep -E '^\[(       OK|  FAILED  |  SKIPPED )\] [A-Za-z0-9_.]+ \(' "$logs/tests.log" | head -60
}

# --- the backend-ops table ------------------------------------------------------------------
# Every forward op on cuda_forward_ops in each activation type and cache element against the
# float64 reference (tests/cuda/backend_ops_cuda_test.cpp): one row an op and case, first, so
# that a broken op shows before the engine runs on it.
run_ops_table() {
  local t bin rc rows
  t=$(date +%s)
  bin="$bin_dir/tests/cuda_tests"
  [[ -x $bin ]] || { record table FAILED 0 "no test binary"; failed=1; return; }
  timeout 120 "$bin" --gtest_filter='backend_ops.*' --gtest_color=no >"$logs/table.log" 2>&1
  rc=$?
  rows=$(grep -oE 'backend_ops: [0-9]+ rows on CUDA, [0-9]+ failed' "$logs/table.log")
  grep -E 'err/rms' "$logs/table.log" | sort -k6 -g -r | head -12
  if grep -qE '^\[  SKIPPED \] [0-9]+ test' "$logs/table.log"; then
    record table SKIPPED "$(elapsed "$t")" "no CUDA device"
  elif ((rc == 0)); then
    record table ok "$(elapsed "$t")" "${rows:-?}"
  else
    grep -E 'FAIL' "$logs/table.log" | head -20
    record table FAILED "$(elapsed "$t")" "${rows:-rc $rc} (see $logs/table.log)"
    failed=1
  fi
}

# --- stories260K golden greedy on the GPU ---------------------------------------------------
# cuda_golden (tools/gpu_only) loads the model as the server does (llama_model), runs
# the golden prompt greedily through the worker's cuda_decoder in fp32 and compares the ids exactly,
# then checks that 16 prompts give the same tokens alone, batched and chunked. The GPU-only
# project builds it; after a full build it is built from that project on its own.
# GOLDEN_MODEL_DIR: the stories260K folder (config.json, model.safetensors, golden_greedy.json).
golden_greedy_gpu() {
  local t bin model_dir rc detail
  t=$(date +%s)
  model_dir=${GOLDEN_MODEL_DIR:-../shared/models/stories260K}
  bin="$bin_dir/bin/cuda_golden"
  if [[ ! -x $bin ]]; then
    bin="$build_dir-only/bin/cuda_golden"
    say "building cuda_golden from the GPU-only project in $build_dir-only"
    if ! { cmake -S tools/gpu_only -B "$build_dir-only" "${generator[@]}" \
             -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$arch" "${json_args[@]}" &&
           cmake --build "$build_dir-only" -j "$jobs" --target cuda_golden; } \
         >"$logs/build-golden.log" 2>&1; then
      tail -20 "$logs/build-golden.log"
      record golden FAILED "$(elapsed "$t")" "cuda_golden did not build (see $logs/build-golden.log)"
      failed=1
      return
    fi
  fi
  if [[ ! -f $model_dir/model.safetensors || ! -f $model_dir/golden_greedy.json ]]; then
    record golden FAILED "$(elapsed "$t")" "no stories260K in $model_dir (set GOLDEN_MODEL_DIR)"
    failed=1
    return
  fi
  timeout 60 "$bin" "$model_dir" >"$logs/golden.log" 2>&1
  rc=$?
  cat "$logs/golden.log"
  if grep -q 'no CUDA device' "$logs/golden.log"; then
    record golden SKIPPED "$(elapsed "$t")" "no CUDA device"
    failed=1
    return
  elif ((rc == 0)) && grep -q '^cuda_golden: PASS$' "$logs/golden.log"; then
    detail=$(grep -oE 'golden greedy [0-9]+ tokens in [0-9.]+ ms' "$logs/golden.log")
    record golden ok "$(elapsed "$t")" "PASS: ${detail:-golden greedy}, 16-prompt batching equal"
  else
    detail=$(grep -E 'FAIL' "$logs/golden.log" | head -1 | sed 's/^cuda_golden: //')
    record golden FAILED "$(elapsed "$t")" "${detail:-rc $rc} (see $logs/golden.log)"
    failed=1
  fi
  # The same checks with the decode steps replayed from CUDA graphs (the server's default):
  # the fp32 ids must be exact again; the time beside the eager one's is the launch saving.
  t=$(date +%s)
  timeout 60 "$bin" "$model_dir" --graphs >"$logs/golden-graphs.log" 2>&1
  rc=$?
  grep -E 'golden greedy|decode graphs|FAIL' "$logs/golden-graphs.log"
  detail=$(grep -oE 'golden greedy [0-9]+ tokens in [0-9.]+ ms' "$logs/golden-graphs.log")
  if grep -q 'no CUDA device' "$logs/golden-graphs.log"; then
    record graphs SKIPPED "$(elapsed "$t")" "no CUDA device"
  elif ((rc == 0)) && grep -q '^cuda_golden: PASS$' "$logs/golden-graphs.log"; then
    record graphs ok "$(elapsed "$t")" "PASS: ${detail:-golden greedy} with decode graphs"
  else
    record graphs FAILED "$(elapsed "$t")" "see $logs/golden-graphs.log"
    failed=1
  fi
  # bf16 weights and activations: a smoke test of the dtype switch, reported, never failing.
  t=$(date +%s)
  timeout 60 "$bin" "$model_dir" --dtype bf16 >"$logs/golden-bf16.log" 2>&1
  rc=$?
  grep -E 'INFO|FAIL' "$logs/golden-bf16.log"
  detail=$(grep -oE 'golden prefix [0-9]+/[0-9]+' "$logs/golden-bf16.log")
  if ((rc == 0)); then
    record bf16 ok "$(elapsed "$t")" "smoke (not gating): ${detail:-?}"
  else
    record bf16 FAILED "$(elapsed "$t")" "smoke (not gating): rc $rc, see $logs/golden-bf16.log"
  fi
}

# --- the engine on the GPU -----------------------------------------------------------------
# The full project only: the actor engine and the offline spine with --device cuda
# (tests/actors/engine_cuda_test.cpp): the golden greedy ids through the actors, batched,
# chunked and preempted runs (swap, recompute) equal to solo runs, the pool sized by
# --gpu-memory-utilization.
run_engine_tests() {
  local t bin rc passed
  t=$(date +%s)
  bin="$bin_dir/tests/actors_tests"
  if [[ $mode == gpu-only ]]; then
    record engine SKIPPED 0 "GPU-only build (the server's dependencies are missing)"
    return
  fi
  if [[ ! -x $bin ]]; then
    record engine FAILED 0 "no actors_tests binary"
    failed=1
    return
  fi
  # The tests read SHARED/models/stories260K; a GOLDEN_MODEL_DIR laid out so names SHARED.
  local shared=${ACTORLLM_SHARED_DIR:-} golden_dir=${GOLDEN_MODEL_DIR:-}
  if [[ -z $shared && $golden_dir == */models/stories260K ]]; then
    shared=${golden_dir%/models/stories260K}
  fi
  # The tests' random checkpoints come from this checkout's scripts, run by this python3.
  ACTORLLM_SHARED_DIR=$shared ACTORLLM_SOURCE_DIR=$PWD ACTORLLM_PYTHON=$(command -v python3) \
    timeout 180 "$bin" --gtest_filter='engine_cuda.*:cuda_*.*:select_backend.*' --gtest_color=no >"$logs/engine.log" 2>&1
  rc=$?
  passed=$(grep -E '^\[  PASSED  \]' "$logs/engine.log" | grep -oE '[0-9]+' | head -1)
  if ((rc != 0)); then
    grep -E -B2 -A6 'Failure|exception|FAILED' "$logs/engine.log" | head -60
    record engine FAILED "$(elapsed "$t")" "rc $rc (see $logs/engine.log)"
    failed=1
  elif grep -qE '^\[  SKIPPED \] [0-9]+ test' "$logs/engine.log"; then
    record engine SKIPPED "$(elapsed "$t")" "no CUDA device"
    failed=1
  else
    record engine ok "$(elapsed "$t")" "--device cuda: backend vs CPU, golden ids, batching with swap, sizing (${passed:-0} tests)"
  fi
}

# --- the server on the GPU ----------------------------------------------------------------
# The full project only: `actorllm serve --device cuda` at concurrency 1, 32 and 256, decode
# steps from CUDA graphs and with --enforce-eager (bench/served_gpu.sh), stories260K.
run_served() {
  local t model_dir
  t=$(date +%s)
  model_dir=${GOLDEN_MODEL_DIR:-../shared/models/stories260K}
  if [[ $mode == gpu-only || ! -x $bin_dir/actorllm ]]; then
    record served SKIPPED 0 "the server did not build here"
    return
  fi
  if ACTORLLM_BIN="$bin_dir/actorllm" timeout 180 bench/served_gpu.sh "$model_dir" \
       "$logs/served" >"$logs/served.log" 2>&1; then
    cat "$logs/served.log"
    record served ok "$(elapsed "$t")" "$(tail -1 "$logs/served.log" | tr -s ' ')"
  else
    tail -20 "$logs/served.log"
    record served FAILED "$(elapsed "$t")" "see $logs/served.log"
  fi
}

# --- transformers on the same device -----------------------------------------------------
# For each architecture, a random checkpoint run by Hugging Face transformers (float32 and
# bf16) against cuda_logits (scripts/transformers_reference.py); skipped where python3 has no
# torch/transformers.
run_reference() {
  local t bin rc
  t=$(date +%s)
  bin="$bin_dir/bin/cuda_logits"
  if [[ ! -x $bin ]]; then
    record reference SKIPPED 0 "no cuda_logits (GPU-only build without it)"
    return
  fi
  PYTHONUNBUFFERED=1 timeout 180 python3 scripts/transformers_reference.py --bin "$bin" \
    --json "$logs/transformers.json" --work "$logs/reference-models" >"$logs/reference.log" 2>&1
  rc=$?
  rm -rf "$logs/reference-models"
  cat "$logs/reference.log"
  if ((rc == 2)); then
    record reference SKIPPED "$(elapsed "$t")" "no torch/transformers in python3"
  elif ((rc == 0)); then
    record reference ok "$(elapsed "$t")" "$(grep -m1 -oE '[0-9]+/[0-9]+ architectures agree' "$logs/reference.log")"
  else
    record reference FAILED "$(elapsed "$t")" "$(grep -m1 -oE '[0-9]+/[0-9]+ architectures agree' "$logs/reference.log" || echo "rc $rc") (see $logs/reference.log)"
    failed=1
  fi
}

# --- kernel benchmarks ----------------------------------------------------------------------
run_bench() {
  local t bin
  t=$(date +%s)
  bin="$bin_dir/bench/cuda_kernels_bench"
  if [[ ! -x $bin ]]; then
    record bench FAILED 0 "no bench binary"
    return
  fi
  if timeout 150 "$bin" >"$logs/bench.log" 2>&1; then
    grep -v '^{' "$logs/bench.log"
    grep '^{' "$logs/bench.log" >"$logs/bench.json"
    local copy peak
    copy=$(grep -oE '"copy_gbs":[0-9.]+' "$logs/bench.json" | cut -d: -f2)
    peak=$(grep -oE '"gemm_peak_tflops":[0-9.]+' "$logs/bench.json" | cut -d: -f2)
    if grep -q '"skipped"' "$logs/bench.json"; then
      record bench SKIPPED "$(elapsed "$t")" "no CUDA device"
    else
      record bench ok "$(elapsed "$t")" "copy ${copy:-?} GB/s, bf16 GEMM peak ${peak:-?} TFLOP/s"
    fi
  else
    tail -20 "$logs/bench.log"
    record bench FAILED "$(elapsed "$t")" "see $logs/bench.log"
  fi
}

if ((failed == 0)); then
  run_ops_table
  run_gpu_tests
  golden_greedy_gpu
  run_engine_tests
  run_reference
  run_bench
  run_served
fi

# The device tool hands back a few files: the logs go as one archive.
[[ -n ${OUT:-} && -d ${OUT:-} ]] &&
  tar czf "$OUT/gpu-check-logs.tgz" -C "$(dirname "$logs")" "$(basename "$logs")" 2>/dev/null

echo
echo "== gpu-check summary ($device, $(elapsed "$start_all") s in all)"
printf '%-8s %-8s %6s  %s\n' step status secs detail
for row in "${summary[@]}"; do
  IFS='|' read -r step status secs detail <<<"$row"
  printf '%-8s %-8s %6s  %s\n' "$step" "$status" "$secs" "$detail"
done
if [[ -f $logs/served.log ]]; then
  echo
  grep -E '^ +(concurrency|[0-9]+ )' "$logs/served.log"
fi
if [[ -f $logs/bench.log ]]; then
  echo
  grep -E '^(memcpy|gemm bf16|decode bf16 auto|prefill|fp8)' "$logs/bench.log" | head -24
fi
exit "$failed"

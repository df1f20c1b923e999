#!/usr/bin/env bash
# Serving sweep: for each model, starts `build/actorllm serve`, runs serve_bench at each
# concurrency, writes bench/results/<model>_c<N>.json, draws the plots and prints the ratio of
# batched to single-stream output throughput (largest concurrency over 1).
#
#   bench/run_serving_sweep.sh [MODEL_DIR ...]
#
# Default models: ../shared/models/stories260K, models-random/llama-15M, models-random/llama-110M
# (make the random ones with scripts/make_random_model.py --shape 15M|110M
#  --out models-random/llama-15M|110M). Environment knobs, with defaults:
#   CONCURRENCY="1 8 32"  INPUT_LEN=64  OUTPUT_LEN=128  PROMPTS_PER_SLOT=4  MIN_PROMPTS=16
#   PORT=18080  RESULTS=bench/results  SERVE_ARGS=""  (extra flags for actorllm serve)
#   BASE_URL=...  benchmark a server that is already running instead (one model argument,
#                 used for its name and tokenizer)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
concurrency=${CONCURRENCY:-"1 8 32"}
input_len=${INPUT_LEN:-64}
output_len=${OUTPUT_LEN:-128}
per_slot=${PROMPTS_PER_SLOT:-4}
min_prompts=${MIN_PROMPTS:-16}
port=${PORT:-18080}
results=${RESULTS:-bench/results}
bench=build/bench/serve_bench
models=("$@")
((${#models[@]})) || models=(../shared/models/stories260K models-random/llama-15M models-random/llama-110M)

[[ -x "$bench" ]] || { echo "build it first: cmake --build build --target serve_bench"; exit 1; }
if [[ -z "${BASE_URL:-}" ]] && ! build/actorllm serve --help >/dev/null 2>&1; then
  echo "build/actorllm serve is not available"; exit 1
fi
mkdir -p "$results"

# shellcheck source=bench/serve_lib.sh
source bench/serve_lib.sh
trap stop_server EXIT

serve_model() {  # serve_model <model dir>: sets base
  base="http://127.0.0.1:$port"
  # shellcheck disable=SC2086  # SERVE_ARGS is a list of flags
  start_server "$results/serve_$(basename "$1").log" "$port" --model "$1" ${SERVE_ARGS:-}
}

labels=()
for model in "${models[@]}"; do
  if [[ ! -f "$model/config.json" ]]; then
    echo "skipping $model: not found (scripts/make_random_model.py makes the random ones)"
    continue
  fi
  label=$(basename "$model")
  labels+=("$label")
  if [[ -n "${BASE_URL:-}" ]]; then base=$BASE_URL; else serve_model "$model"; fi
  for c in $concurrency; do
    prompts=$((c * per_slot > min_prompts ? c * per_slot : min_prompts))
    echo "== $label: concurrency $c, $prompts prompts, $input_len in / $output_len out"
    "$bench" --base-url "$base" --model "$model" --dataset-name random \
      --random-input-len "$input_len" --random-output-len "$output_len" --ignore-eos \
      --num-prompts "$prompts" --max-concurrency "$c" --seed 0 --label "$label" \
      --result-json "$results/${label}_c$c.json" | sed -n '/Serving Benchmark Result/,$p'
  done
  stop_server
done
((${#labels[@]})) || { echo "no model found"; exit 1; }

/usr/bin/python3 bench/plots/plot_results.py --out "$results" "$results"
python3 - "$results" "$concurrency" "${labels[@]}" <<'PY'
import json, os, sys
results, levels, labels = sys.argv[1], [int(c) for c in sys.argv[2].split()], sys.argv[3:]
lo, hi = min(levels), max(levels)
print(f"\n{'model':<14}" + "".join(f"{'c=' + str(c) + ' tok/s':>14}" for c in levels)
      + f"{'failed':>8}{f'ratio {hi}/{lo}':>14}")
for label in labels:
    runs = {}
    for c in levels:
        path = os.path.join(results, f"{label}_c{c}.json")
        if os.path.exists(path):
            runs[c] = json.load(open(path))
    cells = "".join(f"{runs[c]['output_throughput']:>14.1f}" if c in runs else f"{'-':>14}"
                    for c in levels)
    failed = sum(r["failed"] for r in runs.values())
    ratio = (runs[hi]["output_throughput"] / runs[lo]["output_throughput"]
             if lo in runs and hi in runs and runs[lo]["output_throughput"] > 0 else float("nan"))
    print(f"{label:<14}{cells}{failed:>8}{ratio:>14.2f}")
PY

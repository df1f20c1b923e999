#!/usr/bin/env bash
# `actorllm serve --device cuda` under load: output tok/s at concurrency 1, 32 and 256, with
# decode steps replayed from CUDA graphs (the default) and with --enforce-eager, each ratio
# from one run. Run by scripts/gpu-check.sh on a device; without one the server refuses
# --device cuda and this prints why.
#
#   bench/served_gpu.sh [MODEL_DIR] [OUT_DIR] [-- extra serve flags]
#
# Defaults: ../shared/models/stories260K (small enough that launches, not the GPU's math,
# bound a step: what graphs remove), 64 in / 128 out, 2 x concurrency prompts (at least 32).
# Environment: PORT (18095), ACTORLLM_BIN (build/actorllm; serve_bench beside it in bench/),
# LEVELS ("1 32 256").
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
model=${1:-../shared/models/stories260K}
out=${2:-$(mktemp -d)}
shift 2 || shift $# || true
[[ "${1:-}" == "--" ]] && shift
port=${PORT:-18095}
levels=${LEVELS:-"1 32 256"}
mkdir -p "$out"
# shellcheck source=bench/serve_lib.sh
source bench/serve_lib.sh
trap 'stop_server' EXIT
bench="$(dirname "${ACTORLLM_BIN:-build/actorllm}")/bench/serve_bench"

for mode in graphs eager; do
  flags=(--model "$model" --device cuda --max-num-seqs 256 "$@")
  [[ $mode == eager ]] && flags+=(--enforce-eager)
  start_server "$out/serve-$mode.log" "$port" "${flags[@]}"
  for c in $levels; do
    prompts=$((2 * c > 32 ? 2 * c : 32))
    "$bench" --base-url "http://127.0.0.1:$port" --model "$model" --random-input-len 64 \
      --random-output-len 128 --num-prompts "$prompts" --max-concurrency "$c" --ignore-eos \
      --result-json "$out/$mode-$c.json" >"$out/$mode-$c.log" 2>&1
  done
  stop_server
done

python3 - "$out" $levels <<'PY'
import json, sys
out, levels = sys.argv[1], sys.argv[2:]
def rate(mode, c):
    return json.load(open(f"{out}/{mode}-{c}.json"))["output_throughput"]
table = []
print(f"{'concurrency':>11} {'graphs tok/s':>13} {'eager tok/s':>12} {'ratio':>6}")
for c in levels:
    g, e = rate("graphs", c), rate("eager", c)
    table.append({"concurrency": int(c), "graphs_tok_s": g, "eager_tok_s": e, "ratio": g / e})
    print(f"{c:>11} {g:>13.0f} {e:>12.0f} {g / e:>6.2f}")
json.dump({"bench": "served_gpu", "rows": table}, open(f"{out}/served_gpu.json", "w"), indent=1)
PY

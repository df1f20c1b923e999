#!/usr/bin/env bash
# Served output tok/s with every request constrained, against the same run unconstrained
# (issue 18's target: at least 0.9). One server; rounds alternate free / json_object / schema
# so that drift on a shared machine falls on all three alike; each ratio is to the free run of
# its own round.
#
#   bench/structured.sh [MODEL_DIR] [-- extra serve flags]
#
# Default model: models-random/llama-15M (made by scripts/make_random_model.py --shape 15M
# when missing), whose Llama-2 vocabulary (32,000 tokens) makes masks cost what they cost
# on real models. Every request ignores EOS and produces OUTPUT_LEN tokens: a grammar that
# ends early leaves only EOS allowed, which still goes through the mask.
# Environment: CONCURRENCY (32), INPUT_LEN (64), OUTPUT_LEN (128), NUM_PROMPTS (128),
# ROUNDS (2), PORT (18095), RESULTS (bench/results), ACTORLLM_BIN (build/actorllm).
# Writes $RESULTS/structured.json and prints a table.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
model=${1:-models-random/llama-15M}
shift || true
[[ "${1:-}" == "--" ]] && shift
port=${PORT:-18095}
RESULTS=${RESULTS:-bench/results}
rounds=${ROUNDS:-2}
tmp=$(mktemp -d)
# shellcheck source=bench/serve_lib.sh
source bench/serve_lib.sh
trap 'stop_server; rm -rf "$tmp"' EXIT
mkdir -p "$RESULTS"
if [[ ! -d "$model" && "$model" == models-random/llama-15M ]]; then
  /usr/bin/python3 scripts/make_random_model.py --shape 15M --out "$model" >/dev/null
fi

bench="$(dirname "${ACTORLLM_BIN:-build/actorllm}")/bench/serve_bench"
start_server "$tmp/serve.log" "$port" --model "$model" "$@"

schema='{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},
"tags":{"type":"array","items":{"type":"string"}},"address":{"type":"object","properties":{
"city":{"type":"string"},"zip":{"type":"string","pattern":"^[0-9]{5}$"}},"required":["city","zip"]},
"active":{"type":"boolean"}},"required":["id","name","tags","address","active"]}'
declare -A bodies=(
  [free]=''
  [json_object]='{"response_format":{"type":"json_object"}}'
  [schema]="{\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"r\",\"schema\":$(echo "$schema" | tr -d '\n')}}}"
)
run() {  # run <kind> <round>
  local extra=()
  [[ -n "${bodies[$1]}" ]] && extra=(--extra-body "${bodies[$1]}")
  "$bench" --base-url "http://127.0.0.1:$port" --model "$model" \
    --random-input-len "${INPUT_LEN:-64}" --random-output-len "${OUTPUT_LEN:-128}" \
    --num-prompts "${NUM_PROMPTS:-128}" --max-concurrency "${CONCURRENCY:-32}" --ignore-eos \
    --seed "$2" "${extra[@]}" --label "$1" --result-json "$tmp/$1.$2.json" >"$tmp/$1.$2.log" 2>&1 ||
    { echo "serve_bench ($1) failed:"; tail -n 20 "$tmp/$1.$2.log"; exit 1; }
}
for round in $(seq 1 "$rounds"); do
  for kind in free json_object schema; do run "$kind" "$round"; done
done
curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/metrics.txt"

python3 - "$tmp" "$rounds" "$RESULTS/structured.json" "$model" "${CONCURRENCY:-32}" <<'PY'
import json, re, sys
tmp, rounds, out, model, concurrency = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rows = []
for r in range(1, rounds + 1):
    free = json.load(open(f"{tmp}/free.{r}.json"))["output_throughput"]
    for kind in ("free", "json_object", "schema"):
        tps = json.load(open(f"{tmp}/{kind}.{r}.json"))["output_throughput"]
        rows.append({"round": r, "kind": kind, "output_tok_s": tps, "ratio_to_free": tps / free})
# The mask histogram: mean time per step with constrained draws.
text = open(f"{tmp}/metrics.txt").read()
def total(name):
    return sum(float(m.group(1)) for m in re.finditer(rf"^actorllm:{name}\{{[^}}]*\}} (\S+)$", text, re.M))
steps, seconds = total("structured_output_mask_seconds_count"), total("structured_output_mask_seconds_sum")
summary = {"model": model, "concurrency": int(concurrency), "rounds": rows,
           "mask_steps": steps, "mask_mean_seconds_per_step": seconds / steps if steps else None}
json.dump(summary, open(out, "w"), indent=2)
print(f"| round | requests | output tok/s | ratio to free |")
print(f"|---|---|---|---|")
for row in rows:
    print(f"| {row['round']} | {row['kind']} | {row['output_tok_s']:.0f} | {row['ratio_to_free']:.2f} |")
if steps:
    print(f"\nmasks: {steps:.0f} steps with constrained draws, mean {1e6 * seconds / steps:.0f} µs "
          f"per step (beside the forward pass)")
PY

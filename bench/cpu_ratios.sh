#!/usr/bin/env bash
# The CPU serving ratios of bench/README.md table 4, measured in one run on this machine:
#   (a) 110M output tok/s at 32 streams against the engine's prefill tok/s, and 32 against 8
#   (b) single-stream decode against the memory-bandwidth bound
#   (c) stories260K served at 32 streams against the offline spine (bench throughput), with
#       every token streamed (the default) and with --stream-interval 4
#   (d) a burst of 32 new streams (bench/burst.sh)
# Writes $RESULTS/cpu_ratios.json (RESULTS defaults to bench/results/ratios) and prints a table.
# Needs models-random/llama-110M and llama-15M (scripts/make_random_model.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export RESULTS=${RESULTS:-bench/results/ratios}
mkdir -p "$RESULTS"
small=${SMALL_MODEL:-../shared/models/stories260K}
big=${BIG_MODEL:-models-random/llama-110M}
burst_model=${BURST_MODEL:-models-random/llama-15M}

json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }

echo "### single stream: $big"
build/bench/model_bench "$small" "$big" | tee "$RESULTS/model_bench.txt"

echo "### $big served at 8 and 32 streams, decode-heavy (16 in / 256 out) and mixed (64 / 64)"
CONCURRENCY="8 32" INPUT_LEN=16 OUTPUT_LEN=256 PROMPTS_PER_SLOT=2 MIN_PROMPTS=8 \
  RESULTS="$RESULTS/decode_heavy" bench/run_serving_sweep.sh "$big" >"$RESULTS/sweep_decode_heavy.txt" 2>&1
CONCURRENCY="32" INPUT_LEN=64 OUTPUT_LEN=64 PROMPTS_PER_SLOT=2 MIN_PROMPTS=8 \
  RESULTS="$RESULTS/mixed" bench/run_serving_sweep.sh "$big" >"$RESULTS/sweep_mixed.txt" 2>&1

echo "### $small served at 32 streams against the offline spine, same lengths (64 / 128)"
CONCURRENCY="32" INPUT_LEN=64 OUTPUT_LEN=128 PROMPTS_PER_SLOT=8 MIN_PROMPTS=8 \
  RESULTS="$RESULTS/small" bench/run_serving_sweep.sh "$small" >"$RESULTS/sweep_small.txt" 2>&1
CONCURRENCY="32" INPUT_LEN=64 OUTPUT_LEN=128 PROMPTS_PER_SLOT=8 MIN_PROMPTS=8 \
  SERVE_ARGS="--stream-interval 4" RESULTS="$RESULTS/small_interval4" \
  bench/run_serving_sweep.sh "$small" >"$RESULTS/sweep_small_interval4.txt" 2>&1
build/actorllm bench throughput "$small" --num-prompts 256 --input-len 64 --output-len 128 \
  --max-num-seqs 32 --repeat 3 >"$RESULTS/offline_small.txt" 2>&1

echo "### burst of 32 new streams: $burst_model"
bench/burst.sh "$burst_model" 32 64 64 >"$RESULTS/burst.txt" 2>&1

python3 - "$RESULTS" "$(basename "$small")" "$(basename "$big")" "$(basename "$burst_model")" <<'PY'
import json, sys
res, small, big, burst_model = sys.argv[1:5]
bench = {r["model"].split("/")[-1]: r for r in json.loads(open(f"{res}/model_bench.txt").readline())}
def served(sub, label, c):
    return json.load(open(f"{res}/{sub}/{label}_c{c}.json"))["output_throughput"]
prefill = bench[big]["prefill_tok_s"]
heavy8, heavy32 = served("decode_heavy", big, 8), served("decode_heavy", big, 32)
mixed32 = served("mixed", big, 32)
spine = next(r for r in json.loads(open(f"{res}/offline_small.txt").readline()) if r["path"] == "spine")
small32 = served("small", small, 32)
small32_i4 = served("small_interval4", small, 32)
burst = json.load(open(f"{res}/burst_{burst_model}.json"))
out = {
    "prefill_tok_s_110M": prefill,
    "a_decode_heavy_c32_over_prefill": heavy32 / prefill,
    "a_mixed_c32_over_prefill": mixed32 / prefill,
    "a_c32_over_c8": heavy32 / heavy8,
    "b_decode_over_bound": bench[big]["decode_vs_bound"],
    "c_small_served_over_spine": small32 / spine["output_tok_s"],
    "c_small_added_to_step": spine["output_tok_s"] / small32 - 1,
    "c_small_interval4_added_to_step": spine["output_tok_s"] / small32_i4 - 1,
    "d_burst": burst,
    "raw": {"c8": heavy8, "c32": heavy32, "mixed_c32": mixed32, "small_served": small32, "small_served_interval4": small32_i4,
            "small_spine": spine["output_tok_s"]},
}
json.dump(out, open(f"{res}/cpu_ratios.json", "w"), indent=1)
print(f"""
figure                                                       measured   target
(a) {big} 32 streams (16 in / 256 out) / prefill     {heavy32:7.1f} / {prefill:.1f} = {heavy32/prefill:.2f}   >= 0.50
(a) same, 64 in / 64 out                                  {mixed32:7.1f} / {prefill:.1f} = {mixed32/prefill:.2f}
(a) 32 streams / 8 streams                                {heavy32:7.1f} / {heavy8:.1f} = {heavy32/heavy8:.2f}   > 1
(b) single-stream decode / bandwidth bound                {bench[big]["decode_vs_bound"]:.2f}   >= 0.80
(c) {small} served / spine at 32 streams            {small32:7.0f} / {spine["output_tok_s"]:.0f}: adds {100*(spine["output_tok_s"]/small32-1):.0f} %   < 20 %
(c) same with --stream-interval 4                         {small32_i4:7.0f} / {spine["output_tok_s"]:.0f}: adds {100*(spine["output_tok_s"]/small32_i4-1):.0f} %
(d) burst: see {res}/burst.txt""")
PY

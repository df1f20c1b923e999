#!/usr/bin/env bash
# The CPU serving ratios of bench/README.md table 4, measured in one run on this machine:
#   (a) 110M output tok/s at 32 streams against the engine's prefill tok/s, and 32 against 8
#       (also with 64 / 64 lengths and with a float16 KV cache)
#   (b) single-stream decode against the memory-bandwidth bound
#   (c) stories260K served at 32 streams against the offline spine (bench throughput), with
#       every token streamed (the default) and with --stream-interval 4
#   (d) a burst of 32 new streams (bench/burst.sh)
# and, beside (c), its floor: the kernel's loopback TCP cost per streamed token alone
# (bench/tcp_floor_bench, no HTTP, actors or JSON) as a share of the spine's CPU per token.
# The ratios that divide one measurement by another, (a), (b) and (c), are taken ROUNDS times
# (default 3), both sides of each ratio within the same round, and the median ratio is
# reported: a shared VM's speed drifts by tens of percent within minutes, and a ratio of two
# numbers measured minutes apart would mostly measure the drift.
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
rounds=${ROUNDS:-3}

sweep() {  # sweep <out dir> <model> <concurrency> <input len> <output len> [serve flags]
  CONCURRENCY="$3" INPUT_LEN="$4" OUTPUT_LEN="$5" PROMPTS_PER_SLOT=2 MIN_PROMPTS=8 \
    SERVE_ARGS="${6:-}" RESULTS="$RESULTS/$1" bench/run_serving_sweep.sh "$2" \
    >"$RESULTS/$1.txt" 2>&1
}

for r in $(seq 1 "$rounds"); do
  echo "### round $r of $rounds"
  echo "    single stream and prefill: $big"
  build/bench/model_bench "$big" >"$RESULTS/model_bench_$r.txt"
  echo "    $big served at 32 streams, 16 in / 256 out"
  sweep "heavy_$r" "$big" 32 16 256
  echo "    $small served at 32 streams (64 / 128), per token and --stream-interval 4, and the spine"
  CONCURRENCY=32 INPUT_LEN=64 OUTPUT_LEN=128 PROMPTS_PER_SLOT=8 MIN_PROMPTS=8 \
    RESULTS="$RESULTS/small_$r" bench/run_serving_sweep.sh "$small" >"$RESULTS/small_$r.txt" 2>&1
  CONCURRENCY=32 INPUT_LEN=64 OUTPUT_LEN=128 PROMPTS_PER_SLOT=8 MIN_PROMPTS=8 \
    SERVE_ARGS="--stream-interval 4" RESULTS="$RESULTS/small_interval4_$r" \
    bench/run_serving_sweep.sh "$small" >"$RESULTS/small_interval4_$r.txt" 2>&1
  build/actorllm bench throughput "$small" --num-prompts 256 --input-len 64 --output-len 128 \
    --max-num-seqs 32 --path spine >"$RESULTS/spine_small_$r.txt" 2>&1
  build/bench/tcp_floor_bench --streams 32 >"$RESULTS/tcp_floor_$r.txt"
done

echo "### once: $big at 8 streams, at 32 with 64 / 64, at 32 with a float16 KV cache"
sweep heavy_c8 "$big" 8 16 256
sweep mixed "$big" 32 64 64
sweep heavy_f16kv "$big" 32 16 256 "--kv-cache-dtype float16"
build/bench/model_bench "$big" >"$RESULTS/model_bench_once.txt"

echo "### burst of 32 new streams: $burst_model"
bench/burst.sh "$burst_model" 32 64 64 >"$RESULTS/burst.txt" 2>&1

python3 - "$RESULTS" "$(basename "$small")" "$(basename "$big")" "$(basename "$burst_model")" \
  "$rounds" "$(nproc)" <<'PY'
import json, statistics, sys
res, small, big, burst_model, rounds, cores = sys.argv[1:7]
rounds = range(1, int(rounds) + 1)
def bench(name):
    return json.loads(open(f"{res}/{name}.txt").readline())[0]
def served(sub, label):
    return json.load(open(f"{res}/{sub}/{label}_c{8 if sub == 'heavy_c8' else 32}.json"))["output_throughput"]
def spine(r):
    rows = json.loads(open(f"{res}/spine_small_{r}.txt").readline())
    return next(x for x in rows if x["path"] == "spine")["output_tok_s"]
median = statistics.median
per_round = [{
    "prefill_tok_s": bench(f"model_bench_{r}")["prefill_tok_s"],
    "decode_vs_bound": bench(f"model_bench_{r}")["decode_vs_bound"],
    "c32": served(f"heavy_{r}", big),
    "small_served": served(f"small_{r}", small),
    "small_served_interval4": served(f"small_interval4_{r}", small),
    "small_spine": spine(r),
    "tcp_floor_us_per_token": bench(f"tcp_floor_{r}")["kernel_us_per_token"],
} for r in rounds]
for p in per_round:
    p["a"] = p["c32"] / p["prefill_tok_s"]
    p["c_added"] = p["small_spine"] / p["small_served"] - 1
    p["c_added_interval4"] = p["small_spine"] / p["small_served_interval4"] - 1
    # The spine keeps every core busy: its CPU per token is cores / its rate.
    p["c_floor"] = p["tcp_floor_us_per_token"] * 1e-6 * p["small_spine"] / int(cores)
once = bench("model_bench_once")
c8, mixed, f16kv = served("heavy_c8", big), served("mixed", big), served("heavy_f16kv", big)
last = per_round[-1]
burst = json.load(open(f"{res}/burst_{burst_model}.json"))
out = {
    "rounds": per_round,
    "a_decode_heavy_c32_over_prefill": median(p["a"] for p in per_round),
    "a_c32_over_c8": last["c32"] / c8,
    "a_mixed_c32_over_prefill": mixed / once["prefill_tok_s"],
    "a_decode_heavy_c32_float16_kv_over_prefill": f16kv / once["prefill_tok_s"],
    "b_decode_over_bound": median(p["decode_vs_bound"] for p in per_round),
    "c_small_added_to_step": median(p["c_added"] for p in per_round),
    "c_small_interval4_added_to_step": median(p["c_added_interval4"] for p in per_round),
    "c_tcp_floor_share_of_spine_cpu": median(p["c_floor"] for p in per_round),
    "d_burst": burst,
}
json.dump(out, open(f"{res}/cpu_ratios.json", "w"), indent=1)
span = lambda key, fmt: " ".join(fmt.format(p[key]) for p in per_round)
print(f"""
figure (median of {len(per_round)} rounds; each round's values)              measured   target
(a) {big} 32 streams (16 / 256) / prefill     {out['a_decode_heavy_c32_over_prefill']:.2f}   >= 0.50   [{span('a', '{:.2f}')}]
    out tok/s [{span('c32', '{:.0f}')}], prefill tok/s [{span('prefill_tok_s', '{:.0f}')}]
(a) 32 streams / 8 streams (last round's 32)              {out['a_c32_over_c8']:.2f}   > 1       [{last['c32']:.0f} / {c8:.0f}]
(a) 32 streams, 64 in / 64 out / prefill                 {out['a_mixed_c32_over_prefill']:.2f}             [{mixed:.0f} / {once['prefill_tok_s']:.0f}]
(a) 16 / 256 with --kv-cache-dtype float16 / prefill     {out['a_decode_heavy_c32_float16_kv_over_prefill']:.2f}             [{f16kv:.0f} / {once['prefill_tok_s']:.0f}]
(b) single-stream decode / bandwidth bound                {out['b_decode_over_bound']:.2f}   >= 0.80   [{span('decode_vs_bound', '{:.2f}')}]
(c) {small} 32 streams: served path adds        {100*out['c_small_added_to_step']:.0f} %   < 20 %    [{span('c_added', '{:.2f}')}]
    served tok/s [{span('small_served', '{:.0f}')}], spine tok/s [{span('small_spine', '{:.0f}')}]
(c) same with --stream-interval 4                         {100*out['c_small_interval4_added_to_step']:.0f} %             [{span('c_added_interval4', '{:.2f}')}]
    served tok/s [{span('small_served_interval4', '{:.0f}')}]
(c) floor: loopback TCP alone / spine CPU per token       {100*out['c_tcp_floor_share_of_spine_cpu']:.0f} %             [{span('c_floor', '{:.2f}')}]
    kernel us per token [{span('tcp_floor_us_per_token', '{:.1f}')}]
(d) burst: raw connect max {burst['raw_connect_ms_max']:.2f} ms (< 10), TTFT p99 / one burst prefill step {burst['ttft_p99_over_step']:.2f} (< 2)""")
PY

#!/usr/bin/env bash
# Decode tok/s of llama.cpp's CPU build against ours, on the same weights, in one run:
# float32, bf16, int8 (llama.cpp's Q8_0, our --quantization int8) and int4 (Q4_0 against our
# int4), one sequence and 32, a 16-token prompt then 64 decode steps each (the shape of
# weight_format_bench). Results: OUT/llama_cpp_peer.json and a table.
#
#   bench/llama_cpp_peer.sh LLAMA_CPP_BIN MODEL_DIR [OUT_DIR] [THREADS]
#
# LLAMA_CPP_BIN: a folder with llama.cpp's llama-batched-bench and llama-quantize (a CPU
# build, -DGGML_NATIVE=ON, made outside this repository). MODEL_DIR: a bf16 Llama
# checkpoint (scripts/make_random_model.py --shape 110M --dtype bf16). The GGUF files are
# written by scripts/export_gguf.py and quantized by llama-quantize.
#
# Each llama.cpp run and our weight_format_bench run back to back, three rounds; a ratio is
# taken within its round and the median reported (this VM drifts by tens of percent).
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# < 2)); then
  sed -n 2,15p "$0" >&2
  exit 2
fi
llama_bin="$1" model="$2" out="${3:-build/llama_cpp_peer}" threads="${4:-$(nproc)}"
rounds="${ROUNDS:-3}"
for tool in llama-batched-bench llama-quantize; do
  [[ -x "$llama_bin/$tool" ]] || { echo "llama_cpp_peer: no $llama_bin/$tool" >&2; exit 2; }
done
[[ -x build/bench/weight_format_bench ]] || { echo "llama_cpp_peer: build first" >&2; exit 2; }
mkdir -p "$out"

# The GGUF files (kept between runs).
[[ -f "$out/f32.gguf" ]] || python3 scripts/export_gguf.py "$model" "$out/f32.gguf" --dtype f32
[[ -f "$out/bf16.gguf" ]] || python3 scripts/export_gguf.py "$model" "$out/bf16.gguf" --dtype bf16
for q in Q8_0 Q4_0; do
  [[ -f "$out/$q.gguf" ]] ||
    "$llama_bin/llama-quantize" "$out/f32.gguf" "$out/$q.gguf" "$q" "$threads" >"$out/quantize_$q.log" 2>&1
done

: >"$out/rounds.jsonl"
for round in $(seq 1 "$rounds"); do
  for variant in f32:float32 bf16:bfloat16 Q8_0:int8 Q4_0:int4; do
    file="${variant%%:*}" ours="${variant##*:}"
    "$llama_bin/llama-batched-bench" -m "$out/$file.gguf" -c 4096 -b 2048 -ub 512 \
      -npp 16 -ntg 64 -npl 1,32 -t "$threads" --output-format jsonl 2>"$out/llama_$file.log" |
      python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if line.startswith("{"):
        r = json.loads(line)
        print(json.dumps({"round": int(sys.argv[1]), "weights": sys.argv[2], "peer": "llama.cpp",
                          "concurrency": r["pl"], "decode_tok_s": r["speed_tg"]}))
' "$round" "$ours" >>"$out/rounds.jsonl"
  done
  build/bench/weight_format_bench --rounds 1 --threads "$threads" --concurrency 32 \
    --out "$out/ours_round$round.json" "$model" >"$out/ours_round$round.log" 2>&1
  python3 -c '
import json, sys
for r in json.load(open(sys.argv[1])):
    print(json.dumps({"round": int(sys.argv[2]), "weights": r["weights"], "peer": "actorllm",
                      "concurrency": r["concurrency"], "decode_tok_s": r["decode_tok_s"],
                      "isa": r.get("isa")}))
' "$out/ours_round$round.json" "$round" >>"$out/rounds.jsonl"
done

python3 - "$out" "$threads" <<'EOF'
import collections, json, statistics, sys
out, threads = sys.argv[1], int(sys.argv[2])
rate = {}
for line in open(f"{out}/rounds.jsonl"):
    r = json.loads(line)
    rate[(r["round"], r["weights"], r["peer"], r["concurrency"])] = r["decode_tok_s"]
rows = []
weights = ["float32", "bfloat16", "int8", "int4"]
rounds = sorted({k[0] for k in rate})
for c in (1, 32):
    for w in weights:
        ours = [rate.get((n, w, "actorllm", c)) for n in rounds]
        peer = [rate.get((n, w, "llama.cpp", c)) for n in rounds]
        pairs = [(a, b) for a, b in zip(ours, peer) if a and b]
        if not pairs:
            continue
        rows.append({"weights": w, "concurrency": c, "threads": threads,
                     "actorllm_tok_s": statistics.median(a for a, _ in pairs),
                     "llama_cpp_tok_s": statistics.median(b for _, b in pairs),
                     "actorllm_vs_llama_cpp": statistics.median(a / b for a, b in pairs)})
json.dump(rows, open(f"{out}/llama_cpp_peer.json", "w"), indent=2)
print(f"{'weights':<10}{'streams':>8}{'actorllm tok/s':>16}{'llama.cpp tok/s':>17}{'ratio':>8}")
for r in rows:
    print(f"{r['weights']:<10}{r['concurrency']:>8}{r['actorllm_tok_s']:>16.1f}"
          f"{r['llama_cpp_tok_s']:>17.1f}{r['actorllm_vs_llama_cpp']:>8.2f}")
print(f"(medians of {len(rounds)} rounds, {threads} threads; {out}/llama_cpp_peer.json)")
EOF

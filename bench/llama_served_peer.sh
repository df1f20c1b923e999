#!/usr/bin/env bash
# Served, on the CPU: `actorllm serve` against llama.cpp's llama-server on the same weights,
# measured by the same client (serve_bench: streamed /v1/completions, token-id prompts,
# ignore_eos) in one run, so each ratio is taken within the run.
#
#   bench/llama_served_peer.sh MODEL_DIR [OUT_DIR]
#
# MODEL_DIR: a bf16 Llama checkpoint (scripts/make_random_model.py --shape 110M --dtype bf16).
# OUT_DIR (default build/llama_served_peer): the GGUF files (kept between runs), each server's
# log and serve_bench's JSON per cell, llama_served_peer.json (every cell, both sides and
# ours / llama.cpp) and the table printed at the end.
#
# Environment (the defaults are the whole grid: 4 formats × 2 prompts × 4 concurrencies):
#   FORMATS       f32 bf16 Q8_0 Q4_0, llama.cpp's names; ours --dtype float32, --dtype bfloat16,
#                 --quantization int8, --quantization int4 (bench/llama_cpp_peer.sh's pairs)
#   CONCURRENCY   1 8 32 64: streams, serve_bench's --max-concurrency and llama-server's -np
#   PROMPT_LENS   32 512: prompt tokens; OUTPUT_LEN 128 output tokens, EOS ignored
#   NUM_PROMPTS   requests per cell, never fewer than its streams (default: 2 per stream, at
#                 least 8)
#   THREADS       2: llama-server -t, our --cpu-threads
#   KV_CACHE_DTYPE float16: ours, as llama.cpp's default f16 cache
#   LLAMA_CPP_BIN ~/llama.cpp-build/bin: llama-server and llama-quantize
#                 (scripts/build_llama_cpp.sh builds them)
#   ACTORLLM_BIN  build/actorllm; serve_bench is taken from bench/ beside it
#   PYTHON        python3: needs numpy for scripts/export_gguf.py
#   PORT          18096 for ours, PORT + 1 for llama-server
#
# Each cell starts both servers afresh, ours then llama.cpp's, with room for exactly its
# streams: llama-server -np C -c C × (prompt + output) -cb, ours --max-model-len prompt +
# output (its KV pool holds at least that many sequences).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if (($# < 1)); then
  sed -n 2,30p "$0" >&2
  exit 2
fi
model=$1
out=${2:-build/llama_served_peer}
formats=${FORMATS:-f32 bf16 Q8_0 Q4_0}
concurrency=${CONCURRENCY:-1 8 32 64}
prompt_lens=${PROMPT_LENS:-32 512}
output_len=${OUTPUT_LEN:-128}
threads=${THREADS:-2}
kv_dtype=${KV_CACHE_DTYPE:-float16}
llama_bin=${LLAMA_CPP_BIN:-$HOME/llama.cpp-build/bin}
python=${PYTHON:-python3}
port=${PORT:-18096}
llama_port=$((port + 1))
bench="$(dirname "${ACTORLLM_BIN:-build/actorllm}")/bench/serve_bench"

for tool in llama-server llama-quantize; do
  [[ -x "$llama_bin/$tool" ]] || {
    echo "llama_served_peer: no $llama_bin/$tool (scripts/build_llama_cpp.sh; LLAMA_CPP_BIN)" >&2
    exit 2
  }
done
[[ -x "${ACTORLLM_BIN:-build/actorllm}" && -x "$bench" ]] || {
  echo "llama_served_peer: no ${ACTORLLM_BIN:-build/actorllm} or $bench: build first" >&2
  exit 2
}
mkdir -p "$out/cells"

# shellcheck source=bench/serve_lib.sh
source bench/serve_lib.sh
trap stop_server EXIT

# Starts llama-server on $llama_port as start_server does ours: server_pid is set, so that
# stop_server stops either. /health answers 503 until the model is loaded.
start_llama_server() {
  local log=$1
  shift
  "$llama_bin/llama-server" --host 127.0.0.1 --port "$llama_port" "$@" >"$log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 1200); do
    healthy "$llama_port" && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "llama-server $* did not become healthy:"
  tail -n 20 "$log"
  exit 1
}

# Our flags for each llama.cpp format name.
declare -A ours_flags=([f32]="--dtype float32" [bf16]="--dtype bfloat16"
  [Q8_0]="--quantization int8" [Q4_0]="--quantization int4")
for format in $formats; do
  [[ -n "${ours_flags[$format]:-}" ]] || {
    echo "llama_served_peer: unknown format $format (f32 bf16 Q8_0 Q4_0)" >&2
    exit 2
  }
done

# The GGUF files: f32 and bf16 written from the checkpoint, Q8_0 and Q4_0 quantized from f32
# by llama.cpp's own llama-quantize.
gguf() {
  local format=$1 file="$out/$1.gguf"
  [[ -f "$file" ]] && return 0
  case $format in
    f32 | bf16) "$python" scripts/export_gguf.py "$model" "$file" --dtype "$format" ;;
    *)
      gguf f32
      "$llama_bin/llama-quantize" "$out/f32.gguf" "$file" "$format" "$threads" \
        >"$out/quantize_$format.log" 2>&1
      ;;
  esac
}

# One serve_bench run against 127.0.0.1:PORT; its JSON goes to RESULT. A failed run leaves no
# JSON (the table shows the cell as missing) and does not stop the grid.
run_client() {
  local port=$1 result=$2 label=$3 prompt=$4 streams=$5 requests=$6
  "$bench" --base-url "http://127.0.0.1:$port" --model "$model" \
    --random-input-len "$prompt" --random-output-len "$output_len" \
    --num-prompts "$requests" --max-concurrency "$streams" --ignore-eos \
    --result-json "$result" --label "$label" >"${result%.json}.log" 2>&1 ||
    { echo "  $label: serve_bench failed (${result%.json}.log)"; rm -f "$result"; }
}

for format in $formats; do
  read -ra flags <<<"${ours_flags[$format]}"
  gguf "$format"
  for prompt in $prompt_lens; do
    for streams in $concurrency; do
      requests=${NUM_PROMPTS:-$((2 * streams > 8 ? 2 * streams : 8))}
      ((requests >= streams)) || requests=$streams
      cell="$out/cells/${format}_p${prompt}_c${streams}"
      echo "$format, prompt $prompt, $streams streams, $requests requests"

      start_server "$cell.ours.serve.log" "$port" --model "$model" --device cpu \
        --cpu-threads "$threads" --max-model-len $((prompt + output_len)) \
        --kv-cache-dtype "$kv_dtype" "${flags[@]}"
      run_client "$port" "$cell.ours.json" "actorllm $format p$prompt c$streams" \
        "$prompt" "$streams" "$requests"
      stop_server

      start_llama_server "$cell.llama.serve.log" -m "$out/$format.gguf" -t "$threads" \
        -np "$streams" -cb -c $((streams * (prompt + output_len)))
      run_client "$llama_port" "$cell.llama.json" "llama.cpp $format p$prompt c$streams" \
        "$prompt" "$streams" "$requests"
      stop_server
    done
  done
done

# scripts/build_llama_cpp.sh records the commit (a build from a snapshot reports version 0).
peer_version=$(cat "$llama_bin/llama_cpp_commit" 2>/dev/null ||
  "$llama_bin/llama-server" --version 2>&1 | grep -m1 version || true)
"$python" - "$out" "$threads" "$output_len" "$kv_dtype" "$peer_version" \
  "$formats" "$prompt_lens" "$concurrency" <<'EOF'
import json, os, sys
out, threads, output_len, kv_dtype, peer_version = sys.argv[1:6]
formats, prompt_lens, concurrency = (a.split() for a in sys.argv[6:9])
names = {"f32": "float32 / F32", "bf16": "bfloat16 / BF16", "Q8_0": "int8 / Q8_0",
         "Q4_0": "int4 / Q4_0"}  # ours / llama.cpp's
metrics = [("output_tok_s", "output_throughput"), ("ttft_p50_ms", "median_ttft_ms"),
           ("ttft_p99_ms", "p99_ttft_ms"), ("tpot_p50_ms", "median_tpot_ms")]

def load(path):
    if not os.path.exists(path):
        return None
    r = json.load(open(path))
    side = {name: r[key] for name, key in metrics}
    side.update(completed=r["completed"], failed=r["failed"])
    return side

rows = []
for f in formats:
    for p in prompt_lens:
        for c in concurrency:
            cell = f"{out}/cells/{f}_p{p}_c{c}"
            ours, peer = load(f"{cell}.ours.json"), load(f"{cell}.llama.json")
            row = {"weights": names[f], "prompt_tokens": int(p),
                   "output_tokens": int(output_len), "concurrency": int(c),
                   "actorllm": ours, "llama_cpp": peer}
            if ours and peer:
                row["ours_over_llama_cpp"] = {
                    name: ours[name] / peer[name] if peer[name] else None for name, _ in metrics}
            rows.append(row)
json.dump({"threads": int(threads), "actorllm_kv_cache_dtype": kv_dtype,
           "llama_cpp_version": peer_version, "cells": rows},
          open(f"{out}/llama_served_peer.json", "w"), indent=2)

def cols(row, name, digits):
    o, l = row["actorllm"], row["llama_cpp"]
    ratio = row.get("ours_over_llama_cpp", {}).get(name)
    show = lambda v: f"{v:.{digits}f}" if v is not None else "-"
    return (show(o and o[name]), show(l and l[name]), f"{ratio:.2f}" if ratio else "-")

head = ("weights", "prompt", "streams", "tok/s ours", "llama", "ratio", "TTFT p50 ours", "llama",
        "ratio", "TTFT p99 ours", "llama", "ratio", "TPOT p50 ours", "llama", "ratio")
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for r in rows:
    cells = [r["weights"], str(r["prompt_tokens"]), str(r["concurrency"])]
    cells += cols(r, "output_tok_s", 1) + cols(r, "ttft_p50_ms", 1)
    cells += cols(r, "ttft_p99_ms", 1) + cols(r, "tpot_p50_ms", 2)
    failed = sum(s["failed"] for s in (r["actorllm"], r["llama_cpp"]) if s)
    print("| " + " | ".join(cells) + " |" + (f" {failed} failed" if failed else ""))
print(f"ratio = ours / llama.cpp (throughput: above 1 is ours faster; TTFT and TPOT in ms: "
      f"below 1 is ours faster); {threads} threads each; one run; {out}/llama_served_peer.json")
EOF

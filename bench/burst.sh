#!/usr/bin/env bash
# Burst of new streaming connections against `actorllm serve` (issue 10's burst figure).
#
#   bench/burst.sh MODEL_DIR [N=32] [INPUT_LEN=64] [OUTPUT_LEN=64]
#
# Starts the server, then (1) opens N streaming /v1/completions connections at once with curl and
# records each one's TCP connect time (curl's %{time_connect}), and (2) runs serve_bench with
# --num-prompts N --max-concurrency N, so that all N requests start together, for TTFT p50/p99.
# The prefill rate of the same model comes from bench/model_bench in the same run, and one
# prefill step of the whole burst is estimated as N * INPUT_LEN / prefill_tok_s.
# Writes $RESULTS/burst_<model>.json (RESULTS defaults to bench/results). PORT defaults to 18090.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
model=${1:?model folder}
n=${2:-32}
input_len=${3:-64}
output_len=${4:-64}
port=${PORT:-18090}
results=${RESULTS:-bench/results}
label=$(basename "$model")
base="http://127.0.0.1:$port"
mkdir -p "$results"
tmp=$(mktemp -d)

# shellcheck source=bench/serve_lib.sh
source bench/serve_lib.sh
cleanup() {
  stop_server
  rm -rf "$tmp"
}
trap cleanup EXIT

build/bench/model_bench --prompt-len "$input_len" "$model" >"$tmp/model_bench.txt"
prefill=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())[0]["prefill_tok_s"])' "$tmp/model_bench.txt")

# shellcheck disable=SC2086  # SERVE_ARGS is a list of flags
start_server "$results/serve_burst_$label.log" "$port" --model "$model" ${SERVE_ARGS:-}

# (1) N connections at once; the prompt is N different token-id lists of INPUT_LEN tokens.
for i in $(seq 1 "$n"); do
  ids=$(python3 -c "import sys; i,n=int(sys.argv[1]),int(sys.argv[2]); print(','.join(str(1+(i*131+k*7919)%30000) for k in range(n)))" "$i" "$input_len")
  body="{\"model\":\"$label\",\"prompt\":[$ids],\"max_tokens\":$output_len,\"ignore_eos\":true,\"stream\":true}"
  printf '%s' "$body" >"$tmp/body$i.json"
done
curl_pids=()
for i in $(seq 1 "$n"); do
  curl -s -o /dev/null -w '%{time_connect} %{time_starttransfer} %{time_total}\n' \
    -H 'Content-Type: application/json' --data-binary "@$tmp/body$i.json" \
    "$base/v1/completions" >"$tmp/curl$i.txt" &
  curl_pids+=($!)
done
# (1b) While those are being served, N more raw TCP connections from one process, all at once:
# the kernel-side accept through the listen backlog, without N client processes competing for
# the 2 cores with the server.
python3 - "$port" "$n" >"$tmp/raw_connect.txt" <<'PY'
import socket, sys, threading, time
port, n = int(sys.argv[1]), int(sys.argv[2])
times, go = [0.0] * n, threading.Event()
def one(i):
    go.wait()
    s = socket.socket()
    t0 = time.perf_counter()
    s.connect(("127.0.0.1", port))
    times[i] = (time.perf_counter() - t0) * 1000
    s.close()
threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads: t.start()
time.sleep(0.3)  # the curl burst is in prefill by now
go.set()
for t in threads: t.join()
print(max(times), sorted(times)[len(times) // 2])
PY
wait "${curl_pids[@]}"
cat "$tmp"/curl*.txt >"$tmp/curl_all.txt"

# (2) serve_bench: N requests, all in flight from the start.
build/bench/serve_bench --base-url "$base" --model "$model" --dataset-name random \
  --random-input-len "$input_len" --random-output-len "$output_len" --ignore-eos \
  --num-prompts "$n" --max-concurrency "$n" --seed 1 --label "${label}_burst$n" \
  --result-json "$tmp/serve_bench.json" | sed -n '/Serving Benchmark Result/,$p'

python3 - "$tmp/curl_all.txt" "$tmp/serve_bench.json" "$prefill" "$n" "$input_len" "$output_len" \
  "$label" "$results/burst_$label.json" "$tmp/raw_connect.txt" <<'PY'
import json, sys
curl_file, sb_file, prefill, n, input_len, output_len, label, out, raw_file = sys.argv[1:]
raw_max, raw_p50 = map(float, open(raw_file).read().split())
prefill, n, input_len = float(prefill), int(n), int(input_len)
rows = [list(map(float, l.split())) for l in open(curl_file) if l.strip()]
connect_ms = sorted(r[0] * 1000 for r in rows)
sb = json.load(open(sb_file))
step_ms = n * input_len / prefill * 1000
res = {
    "model": label, "burst": n, "input_len": input_len, "output_len": int(output_len),
    "connections": len(rows),
    "connect_ms_max": connect_ms[-1], "connect_ms_p50": connect_ms[len(connect_ms) // 2],
    "connect_ms_p90": connect_ms[int(0.9 * (len(connect_ms) - 1))],
    "connections_within_10ms": sum(c < 10.0 for c in connect_ms),
    "raw_connect_ms_max": raw_max, "raw_connect_ms_p50": raw_p50,
    "curl_first_byte_ms_max": max(r[1] for r in rows) * 1000,
    "prefill_tok_s": prefill, "burst_prefill_step_ms": step_ms,
    "ttft_ms_p50": sb["median_ttft_ms"], "ttft_ms_p99": sb["p99_ttft_ms"],
    "ttft_p99_over_step": sb["p99_ttft_ms"] / step_ms,
    "completed": sb["completed"], "failed": sb["failed"],
    # Accepted within 10 ms: judged on the raw connects of one process, since curl's
    # time_connect also holds the start-up of 32 curl processes sharing the 2 cores.
    "connect_met": raw_max < 10.0, "ttft_met": sb["p99_ttft_ms"] < 2 * step_ms,
}
json.dump(res, open(out, "w"), indent=1)
print(json.dumps(res, indent=1))
PY

#!/usr/bin/env bash
# Where the CPU goes while `actorllm serve` streams to many clients: each server thread's CPU
# time, and the load generator's, over one serve_bench run, in total and per output token.
#
#   bench/served_cpu.sh [MODEL_DIR] [-- extra serve flags]
#
# Defaults: ../shared/models/stories260K, 32 streams, 64 in / 128 out, 256 prompts (issue 10's
# figure (c)). Environment: CONCURRENCY, INPUT_LEN, OUTPUT_LEN, NUM_PROMPTS, PORT (18094),
# ACTORLLM_BIN (build/actorllm; serve_bench is taken from bench/ beside it).
# Thread CPU comes from /proc/PID/task/TID/stat (utime + stime) before and after the run; a
# thread started during the run (the math helpers start with the first step) counts from 0.
# Names: actorllm.math are the math helpers; the biggest caf.actor is the worker, which leads
# them; the other caf.actor threads are the scheduler, router and gateway; actorllm is the
# network (Asio) thread.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
model=${1:-../shared/models/stories260K}
shift || true
[[ "${1:-}" == "--" ]] && shift
port=${PORT:-18094}
concurrency=${CONCURRENCY:-32}
tmp=$(mktemp -d)
# shellcheck source=bench/serve_lib.sh
source bench/serve_lib.sh
trap 'stop_server; rm -rf "$tmp"' EXIT

bench="$(dirname "${ACTORLLM_BIN:-build/actorllm}")/bench/serve_bench"
start_server "$tmp/serve.log" "$port" --model "$model" "$@"

ticks() {  # tid name ticks, one line per thread of the server
  for task in /proc/"$server_pid"/task/*; do
    echo "$(basename "$task") $(tr ' ' _ <"$task/comm") $(awk '{print $14 + $15}' "$task/stat")"
  done
}
ticks >"$tmp/before"
/usr/bin/time -f "%U %S" -o "$tmp/client" "$bench" \
  --base-url "http://127.0.0.1:$port" --model "$model" \
  --random-input-len "${INPUT_LEN:-64}" --random-output-len "${OUTPUT_LEN:-128}" \
  --num-prompts "${NUM_PROMPTS:-256}" --max-concurrency "$concurrency" --ignore-eos \
  --result-json "$tmp/result.json" >"$tmp/bench.log" 2>&1
ticks >"$tmp/after"

python3 - "$tmp" "$(getconf CLK_TCK)" "$(nproc)" <<'PY'
import json, sys
tmp, hz, cores = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
def read(name):
    rows = {}
    for line in open(f"{tmp}/{name}"):
        tid, comm, t = line.split()
        rows[tid] = (comm, float(t) / hz)
    return rows
before, after = read("before"), read("after")
result = json.load(open(f"{tmp}/result.json"))
tokens = result["total_output_tokens"]  # the timed requests, not serve_bench's warm-up
seconds = result["duration"]
user, system = map(float, open(f"{tmp}/client").read().split())
rows = sorted(((after[t][1] - before.get(t, (None, 0.0))[1], after[t][0], t) for t in after),
              reverse=True)
print(f"served {result['output_throughput']:.0f} output tok/s, {tokens} tokens in {seconds:.2f} s")
print(f"{'thread':<22}{'CPU s':>8}{'us/token':>10}")
total = 0.0
for cpu, comm, tid in rows:
    if cpu <= 0:
        continue
    total += cpu
    print(f"{comm + ' ' + tid:<22}{cpu:>8.2f}{1e6 * cpu / max(tokens, 1):>10.1f}")
print(f"{'server, all threads':<22}{total:>8.2f}{1e6 * total / max(tokens, 1):>10.1f}")
client = user + system
print(f"{'load generator':<22}{client:>8.2f}{1e6 * client / max(tokens, 1):>10.1f}"
      f"   (user {user:.2f}, system {system:.2f})")
print(f"CPU used: {total + client:.2f} s of the {cores * seconds:.2f} s that {cores} cores had")
PY

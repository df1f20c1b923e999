#!/usr/bin/env bash
# End to end: a KV cache of 8 blocks of 16 tokens cannot hold twelve concurrent 100-token
# completions, so the scheduler must preempt by swapping to the CPU pool. /metrics, polled
# during the run, must show num_preemptions_total rise and num_requests_swapped rise and fall
# back to 0, with both KV pools empty once idle; every client still gets its 100 tokens.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"

require_command serve
require_tools curl python3

model="$ACTORLLM_SHARED_DIR/models/stories260K"
port=$(free_port)
base="http://127.0.0.1:$port"

"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" \
  --num-gpu-blocks-override 8 --block-size 16 --max-model-len 128 \
  --preemption-mode swap --num-cpu-blocks-override 64 >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  curl -sf "$base/health" >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "FAIL: serve exited during startup"; cat "$work/serve.log"; exit 1; }
  sleep 0.1
done
curl -sf "$base/health" >/dev/null || { echo "FAIL: /health never became 200"; cat "$work/serve.log"; exit 1; }

# metric <name>: the sum of all series of one metric in /metrics (0 when absent).
metric() {
  curl -s "$base/metrics" |
    awk -v name="$1" 'index($0, name "{") == 1 || index($0, name " ") == 1 { s += $NF } END { print s + 0 }'
}

preemptions_before=$(metric actorllm:num_preemptions_total)

# Poll /metrics while the clients run, recording the swapped gauge: one kept-alive connection
# and no pause, so that a swap that lasts a step or two (a few ms) is still seen.
python3 - "$port" "$work/swapped.txt" "$work/stop_polling" <<'PY' &
import http.client, os, sys
port, out, stop = int(sys.argv[1]), sys.argv[2], sys.argv[3]
name = "actorllm:num_requests_swapped"
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
with open(out, "w") as f:
    while not os.path.exists(stop):
        try:
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            continue
        total = sum(float(line.split()[-1]) for line in text.splitlines()
                    if line.startswith(name + "{") or line.startswith(name + " "))
        f.write(f"{total:g}\n")
        f.flush()
PY
poller=$!
pids+=($poller)
# The clients' whole run can be shorter than Python's start-up: let the poller begin first.
for _ in $(seq 1 200); do [ -s "$work/swapped.txt" ] && break; sleep 0.05; done

num_clients=12
clients=()
for i in $(seq 1 $num_clients); do
  curl -s "$base/v1/completions" -H 'Content-Type: application/json' \
    -d "{\"model\":\"stories260K\",\"prompt\":\"Once upon a time $i\",\"max_tokens\":100,\"ignore_eos\":true,\"temperature\":0}" \
    -o "$work/response.$i.json" &
  clients+=($!)
done
for c in "${clients[@]}"; do wait "$c" || true; done
sleep 0.3  # a few more polls after the last request finished
touch "$work/stop_polling"
wait "$poller" 2>/dev/null || true

num_complete=$(python3 - "$work" "$num_clients" <<'PY'
import json, sys
ok = 0
for i in range(1, int(sys.argv[2]) + 1):
    try:
        ok += json.load(open(f"{sys.argv[1]}/response.{i}.json"))["usage"]["completion_tokens"] == 100
    except (OSError, ValueError, KeyError):
        pass
print(ok)
PY
)
max_swapped=$(sort -n "$work/swapped.txt" | tail -1)
echo "polled /metrics $(wc -l <"$work/swapped.txt") times; num_requests_swapped peaked at $max_swapped"

check "every client got 100 tokens despite preemption" test "$num_complete" -eq "$num_clients"
check "num_preemptions_total rose" test "$(metric actorllm:num_preemptions_total)" -gt "$preemptions_before"
check "num_requests_swapped rose above 0" test "${max_swapped:-0}" -gt 0
check "num_requests_swapped fell back to 0" test "$(metric actorllm:num_requests_swapped)" = 0
check "num_requests_running fell back to 0" test "$(metric actorllm:num_requests_running)" = 0
check "kv_cache_usage_perc fell back to 0" test "$(metric actorllm:kv_cache_usage_perc)" = 0
check "cpu_kv_cache_usage_perc fell back to 0" test "$(metric actorllm:cpu_kv_cache_usage_perc)" = 0

if [ "$failures" -ne 0 ]; then
  echo "--- serve log"; tail -30 "$work/serve.log"
  echo "$failures check(s) failed"
  exit 1
fi
echo "all preemption metric checks passed"

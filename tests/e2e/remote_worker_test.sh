#!/usr/bin/env bash
# Across processes: a server publishes its router (--cluster-port); a second process joins
# with `actorllm worker --connect` and serves as replica 1 (its tokens show in /metrics).
# Then the worker is killed with SIGKILL: the server stays healthy and keeps answering.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}"
require_command serve
require_command worker
require_tools curl python3

model="$ACTORLLM_SHARED_DIR/models/stories260K"
port=$(free_port)
cluster_port=$(free_port)
base="http://127.0.0.1:$port"

"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --cluster-port "$cluster_port" \
  --num-gpu-blocks-override 256 >"$work/serve.log" 2>&1 &
server=$!
pids+=("$server")

for _ in $(seq 1 300); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.1; done
"$ACTORLLM_BIN" worker --connect "127.0.0.1:$cluster_port" --model "$model" --num-gpu-blocks-override 256 \
  --name remote-a >"$work/worker.log" 2>&1 &
worker=$!
pids+=("$worker")
for _ in $(seq 1 300); do grep -q "joined as replica 1" "$work/serve.log" && break; sleep 0.1; done

check "the remote worker joined as replica 1" grep -q "joined as replica 1" "$work/serve.log"

# Concurrent requests spread over both replicas (least outstanding tokens first).
for i in $(seq 1 8); do
  curl -s "$base/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": [1], "max_tokens": 40, "temperature": 0, "ignore_eos": true}' -o "$work/out$i.json" &
done
wait $(jobs -p | grep -v "^$server$" | grep -v "^$worker$") 2>/dev/null || true
sleep 0.5
remote_tokens=$(curl -s "$base/metrics" | awk '/^actorllm:generation_tokens_total\{.*replica="1"/ {print $2}')
check "replica 1 (the remote worker) generated tokens (${remote_tokens:-0})" \
  test "${remote_tokens%.*}" -gt 0 2>/dev/null
same=$(cat "$work"/out*.json | grep -o '"text":"[^"]*"' | sort -u | wc -l)
check "every answer is the same greedy text, whichever replica served it" test "$same" -eq 1

kill -9 "$worker"
wait "$worker" 2>/dev/null || true
sleep 0.5
check "the server stays healthy after the worker died" curl -sf "$base/health" -o /dev/null
ok=0
for _ in 1 2 3; do
  curl -sf "$base/v1/completions" -d '{"prompt": [1], "max_tokens": 8, "temperature": 0}' -o /dev/null && ok=$((ok + 1))
done
check "requests after the loss are served by the local replica ($ok/3)" test "$ok" -eq 3

if ((failures)); then
  echo "--- server log"; tail -20 "$work/serve.log"; echo "--- worker log"; tail -5 "$work/worker.log" || true
  exit 1
fi
echo "all remote worker checks passed"

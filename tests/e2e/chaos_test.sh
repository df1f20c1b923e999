#!/usr/bin/env bash
# The chaos run: 64 streams of greedy completions against a server with a local replica and
# two remote workers, one stopped with SIGSTOP and one killed with SIGKILL mid-stream, and an
# adapter whose files block loaded meanwhile (chaos_client.py says what is checked: every
# stream ends as its solo run or with a clean error, /health tells the truth every half second,
# and no stream waits past --worker-timeout plus a step).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_command serve
require_command worker
require_tools curl python3
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"

model="$work/slow-llama"
slow_random_model "$model"
port=$(free_port)
cluster_port=$(free_port)
base="http://127.0.0.1:$port"
secret_file="$work/cluster.secret"
python3 -c 'import secrets; print(secrets.token_hex(32))' >"$secret_file"
timeout_s=2

"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
  --cluster-port "$cluster_port" --cluster-secret-file "$secret_file" --worker-timeout "$timeout_s" \
  --num-gpu-blocks-override 2048 --enable-lora --enable-lora-runtime-updates --max-loras 1 \
  --disable-log-stats >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.1; done

# The solo runs, before any worker joins.
prompts=("[1]" "[1, 400]" "[1, 300, 301]" "[1, 7, 8, 9]" "[1, 250]" "[1, 50, 60]" "[1, 2, 3]" "[1, 99]")
python3 - "$base" "$work/solo.json" "${prompts[@]}" <<'PY'
import json, sys, urllib.request
base, out, prompts = sys.argv[1], sys.argv[2], sys.argv[3:]
solo = {}
for p in prompts:
    body = json.dumps({"prompt": json.loads(p), "max_tokens": 120, "temperature": 0, "ignore_eos": True})
    req = urllib.request.Request(base + "/v1/completions", body.encode(), {"Content-Type": "application/json"})
    solo[p] = json.load(urllib.request.urlopen(req))["choices"][0]["text"]
json.dump(solo, open(out, "w"))
PY

worker() {  # worker <name>: joins the server in the background; prints its pid
  "$ACTORLLM_BIN" worker --connect "127.0.0.1:$cluster_port" --model "$model" --device cpu \
    --num-gpu-blocks-override 1024 --cluster-secret-file "$secret_file" --name "$1" \
    >"$work/$1.log" 2>&1 &
  echo $!
}
stopped=$(worker chaos-stopped)
killed=$(worker chaos-killed)
pids+=("$stopped" "$killed")
for name in chaos-stopped chaos-killed; do
  for _ in $(seq 1 300); do grep -q "'$name' joined" "$work/serve.log" && break; sleep 0.1; done
  check "worker $name joined" grep -q "'$name' joined" "$work/serve.log"
done
sleep 1  # the workers' first heartbeats answered

# An adapter whose config is a FIFO: reading it would block for ever.
mkdir -p "$work/blocked-adapter"
mkfifo "$work/blocked-adapter/adapter_config.json"

check "64 streams through a stopped and a killed worker" python3 "$e2e_dir/chaos_client.py" \
  "$base" "$work/solo.json" "$stopped" "$killed" "$work/blocked-adapter" "$timeout_s"
kill -CONT "$stopped" 2>/dev/null || true

if ((failures)); then
  echo "--- server log"; tail -30 "$work/serve.log"
  exit 1
fi

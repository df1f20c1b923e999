#!/usr/bin/env bash
# Across processes: a server publishes its join point (--cluster-port); a second process joins
# with `actorllm worker --connect` and serves as replica 1 (its tokens show in /metrics).
# Joining needs the cluster's secret and the same model: a worker without the secret, with a
# wrong one, with another model or as half a tensor-parallel group is refused with one line.
# Then the worker is killed with SIGKILL mid-stream: its streams go on on the local replica
# with exactly the text of a run alone, the lost replica's gauges read 0, and the server keeps
# answering; /health stays 200 (the local replica serves) naming the lost replica until a new worker takes its place, and a
# worker stopped with SIGTERM retires its replica without failing /health; a worker stopped with
# SIGSTOP (alive but silent) is failed over after --worker-timeout, mid-step by the step's
# watchdog and idle by its heartbeat. When the server
# goes away, a worker exits with status 1.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}"
require_command serve
require_command worker
require_tools curl python3

model="$work/slow-llama"  # requests must still be running when a drain, stop or kill lands
slow_random_model "$model"
port=$(free_port)
cluster_port=$(free_port)
base="http://127.0.0.1:$port"
secret_file="$work/cluster.secret"
python3 -c 'import secrets; print(secrets.token_hex(32))' >"$secret_file"
echo "not the secret" >"$work/wrong.secret"

# --- refusals at startup ----------------------------------------------------------------------
set +e
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --cluster-port "$cluster_port" \
  >"$work/nosecret.log" 2>&1
status=$?
set -e
check "serve --cluster-port without a secret exits 2 ($status)" test "$status" -eq 2
check "... saying a secret is required" grep -q "cluster-secret-file" "$work/nosecret.log"
set +e
"$ACTORLLM_BIN" serve --model "$model" --host 0.0.0.0 --port "$port" --cluster-port "$cluster_port" \
  --cluster-insecure-loopback >"$work/insecure.log" 2>&1
status=$?
set -e
check "--cluster-insecure-loopback on 0.0.0.0 exits 2 ($status)" test "$status" -eq 2
check "... saying it is not a loopback address" grep -q "not a loopback address" "$work/insecure.log"
check "serve --help says when joining is refused" \
  bash -c "'$ACTORLLM_BIN' serve --help | grep -q -- '--cluster-insecure-loopback'"

"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --cluster-port "$cluster_port" \
  --cluster-secret-file "$secret_file" --num-gpu-blocks-override 256 --worker-timeout 2 \
  >"$work/serve.log" 2>&1 &
server=$!
pids+=("$server")
for _ in $(seq 1 300); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.1; done

# worker <log> <args...>: runs a worker that should be refused; prints its exit status.
refused_worker() {
  local log=$1; shift
  set +e
  timeout 60 "$ACTORLLM_BIN" worker --connect "127.0.0.1:$cluster_port" --num-gpu-blocks-override 64 \
    --name refused "$@" >"$log" 2>&1
  echo $?
  set -e
}
status=$(refused_worker "$work/w-nosecret.log" --model "$model")
check "a worker without a secret exits 2 ($status)" test "$status" -eq 2
status=$(refused_worker "$work/w-insecure.log" --model "$model" --cluster-insecure-loopback)
check "a worker with no secret is refused by the server: status $status" test "$status" -eq 1
check "... naming the secret it lacks" grep -q "requires the cluster secret" "$work/w-insecure.log"
status=$(refused_worker "$work/w-wrong.log" --model "$model" --cluster-secret-file "$work/wrong.secret")
check "a worker with a wrong secret is refused: status $status" test "$status" -eq 1
check "... with one line saying so" grep -q "refused this worker: wrong cluster secret" "$work/w-wrong.log"
other="$work/other-model"
mkdir -p "$other"
cp "$model/model.safetensors" "$model/tokenizer.json" "$other/"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["rms_norm_eps"]=0.5; json.dump(c, open(sys.argv[2],"w"))' \
  "$model/config.json" "$other/config.json"
status=$(refused_worker "$work/w-model.log" --model "$other" --cluster-secret-file "$secret_file")
check "a worker serving another model is refused: status $status" test "$status" -eq 1
check "... naming both sides' values" grep -q "rms_norm_eps: 1e-05 (server) vs 0.5 (worker)" "$work/w-model.log"
status=$(refused_worker "$work/w-tp.log" --model "$model" --cluster-secret-file "$secret_file" \
  --tensor-parallel-size 2)
check "worker --tensor-parallel-size 2 is refused: status $status" test "$status" -eq 2
check "... saying a remote worker serves the whole model" grep -q "whole model" "$work/w-tp.log"
check "no refused worker became a replica" bash -c "! grep -q 'joined as replica' '$work/serve.log'"

# Greedy outputs of long requests run alone (on the local replica), to compare the streams
# that lose their worker with.
prompts=("[1]" "[1, 400]" "[1, 300, 301]" "[1, 7, 8, 9]" "[1, 250]" "[1, 50, 60]")
for i in "${!prompts[@]}"; do
  curl -sf "$base/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": '"${prompts[$i]}"', "max_tokens": 400, "temperature": 0, "ignore_eos": true}' \
    -o "$work/solo$i.json"
done

# --- a worker with the secret joins -------------------------------------------------------------
"$ACTORLLM_BIN" worker --connect "127.0.0.1:$cluster_port" --model "$model" --num-gpu-blocks-override 256 \
  --cluster-secret-file "$secret_file" --name remote-a >"$work/worker.log" 2>&1 &
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

# --- kill -9 of the worker mid-stream: its streams go on on the local replica -----------------
streams=()
for i in "${!prompts[@]}"; do
  curl -sN "$base/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": '"${prompts[$i]}"', "max_tokens": 400, "temperature": 0, "ignore_eos": true,
         "stream": true, "stream_options": {"include_usage": true}}' -o "$work/stream$i.sse" &
  streams+=($!)
done
# Every stream has started, and the remote replica is running some of them.
for _ in $(seq 1 400); do
  started=0
  for i in "${!prompts[@]}"; do
    chunks=$(grep -c '"text"' "$work/stream$i.sse" 2>/dev/null || true)
    ((${chunks:-0} >= 10)) && started=$((started + 1))
  done
  ((started == ${#prompts[@]})) && break
  sleep 0.01
done
running_remote=$(curl -s "$base/metrics" | awk '/^actorllm:num_requests_running\{.*replica="1"/ {print $2}')
check "mid-stream, the remote replica runs requests (${running_remote:-none})" \
  test "${running_remote%.*}" -gt 0 2>/dev/null
kill -9 "$worker"
wait "$worker" 2>/dev/null || true
for pid in "${streams[@]}"; do wait "$pid" || true; done
for i in "${!prompts[@]}"; do
  verdict=$(python3 - "$work/solo$i.json" "$work/stream$i.sse" <<'PY'
import json, sys
solo = json.load(open(sys.argv[1]))["choices"][0]["text"]
text, finish, usage, errors = "", None, None, []
for line in open(sys.argv[2]):
    if not line.startswith("data: {"):
        continue
    chunk = json.loads(line[6:])
    if "error" in chunk:
        errors.append(chunk["error"].get("message"))
    for c in chunk.get("choices", []):
        text += c.get("text", "")
        finish = c.get("finish_reason") or finish
    usage = chunk.get("usage") or usage
if errors:
    print("error: %s" % errors)
elif text != solo:
    print("text differs from the solo run (%d vs %d chars)" % (len(text), len(solo)))
elif finish != "length" or not usage or usage["completion_tokens"] != 400:
    print("finish %s, usage %s" % (finish, usage))
else:
    print("same")
PY
)
  check "stream $i after the kill: one stream with the solo run's exact text ($verdict)" test "$verdict" = same
done
moved=$(grep -o "replica 1 is down.*moving its [0-9]* requests" "$work/serve.log" | grep -o "its [0-9]*" | grep -o "[0-9]*" || true)
check "the server moved the lost replica's ${moved:-0} requests mid-stream" test "${moved:-0}" -gt 0
metrics=$(curl -s "$base/metrics")
# gauge NAME [LABEL]: the value of NAME{...replica="1"...} (with LABEL among its labels).
gauge() {
  echo "$metrics" | awk -v n="actorllm:$1{" -v r='replica="1"' -v e="${2:-}" \
    'index($0, n) == 1 && index($0, r) && (e == "" || index($0, e)) {print $2}'
}
check "the lost replica's running gauge is 0 ($(gauge num_requests_running))" test "$(gauge num_requests_running)" = 0
check "the lost replica's waiting gauge is 0 ($(gauge num_requests_waiting))" test "$(gauge num_requests_waiting)" = 0
check "the lost replica's KV usage gauge is 0 ($(gauge kv_cache_usage_perc))" test "$(gauge kv_cache_usage_perc)" = 0
check "the lost replica's free device blocks gauge is 0 ($(gauge num_free_blocks 'pool="device"'))" \
  test "$(gauge num_free_blocks 'pool="device"')" = 0
# --- /health: 200 while the local replica serves, naming the lost one ------------------------
health_status() { curl -s -o "$work/health.json" -w '%{http_code}' "$base/health"; }
check "/health is 200 while replica 0 serves and replica 1 is down ($(health_status))" test "$(health_status)" = 200
check "... naming the replica and why: $(cat "$work/health.json")" \
  grep -q "replica 1 (remote worker 'remote-a') is down" "$work/health.json"
check "replica_up{replica=\"1\"} is 0 ($(gauge replica_up))" test "$(gauge replica_up)" = 0
unhealthy=$(echo "$metrics" | awk '/^actorllm:replicas_unhealthy\{/ {print $2}')
check "replicas_unhealthy is 1 (${unhealthy:-none})" test "${unhealthy:-}" = 1
ok=0
for _ in 1 2 3; do
  curl -sf "$base/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": [1], "max_tokens": 8, "temperature": 0}' -o /dev/null && ok=$((ok + 1))
done
check "requests after the loss are served by the local replica ($ok/3)" test "$ok" -eq 3

# start_worker <name> <log>: a worker of 64 blocks joining in the background; its pid in
# $worker_pid.
start_worker() {
  "$ACTORLLM_BIN" worker --connect "127.0.0.1:$cluster_port" --model "$model" --num-gpu-blocks-override 64 \
    --cluster-secret-file "$secret_file" --name "$1" >"$work/$2" 2>&1 &
  worker_pid=$!
  pids+=("$worker_pid")
}
start_worker remote-b worker-b.log
worker_b=$worker_pid
for _ in $(seq 1 300); do grep -q "remote-b' joined" "$work/serve.log" && break; sleep 0.1; done
check "a new worker takes the lost replica's place" grep -q "worker 'remote-b' joined as replica 1" "$work/serve.log"
check "/health is 200 again once every replica serves ($(health_status))" test "$(health_status)" = 200
metrics=$(curl -s "$base/metrics")
check "replica_up{replica=\"1\"} is 1 again ($(gauge replica_up))" test "$(gauge replica_up)" = 1
kill -TERM "$worker_b"
set +e
wait "$worker_b"
status=$?
set -e
check "a worker stopped with SIGTERM exits 0 ($status)" test "$status" -eq 0
sleep 0.3
check "... and its replica retires without failing /health ($(health_status))" test "$(health_status)" = 200

# --- a stopped worker (SIGSTOP: alive, connected, silent) is failed over after --worker-timeout --
# An idle worker stopped with SIGSTOP: no request ever reaches it, and its heartbeat fails it
# over after --worker-timeout all the same (/health names it).
start_worker remote-i worker-i.log
worker_i=$worker_pid
for _ in $(seq 1 300); do grep -q "'remote-i' joined" "$work/serve.log" && break; sleep 0.1; done
sleep 1  # its first heartbeat answered: from now on one unanswered is a failure
kill -STOP "$worker_i"
started=$SECONDS
for _ in $(seq 1 150); do
  [[ "$(health_status)" = 200 ]] && grep -q "(remote worker 'remote-i') is down" "$work/health.json" && break
  sleep 0.1
done
check "an idle stopped worker is failed over by its heartbeat ($((SECONDS - started)) s): $(cat "$work/health.json")" \
  grep -q "(remote worker 'remote-i') is down" "$work/health.json"
kill -CONT "$worker_i" 2>/dev/null || true
kill -9 "$worker_i" 2>/dev/null || true
wait "$worker_i" 2>/dev/null || true

start_worker remote-s worker-s.log
worker_s=$worker_pid
for _ in $(seq 1 300); do grep -q "'remote-s' joined" "$work/serve.log" && break; sleep 0.1; done
kill -STOP "$worker_s"
# Four at once: the router spreads them by outstanding tokens, so the stopped replica gets some.
started=$SECONDS
clients=()
for i in 1 2 3 4; do
  curl -sf --max-time 60 "$base/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": [1], "max_tokens": 16, "temperature": 0}' -o "$work/stopped-$i.json" &
  clients+=($!)
done
answered=0
for c in "${clients[@]}"; do wait "$c" && answered=$((answered + 1)); done
waited=$((SECONDS - started))
check "every request answered though a worker was stopped ($answered/4)" test "$answered" -eq 4
check "... within --worker-timeout and a recompute (${waited} s)" test "$waited" -le 20
check "/health still 200, the local replica serving ($(health_status))" test "$(health_status)" = 200
check "... naming the stopped worker's replica: $(cat "$work/health.json")" \
  grep -q "(remote worker 'remote-s') is down" "$work/health.json"
kill -CONT "$worker_s" 2>/dev/null || true
kill -9 "$worker_s" 2>/dev/null || true
wait "$worker_s" 2>/dev/null || true

# --- the server goes away: its worker exits with status 1 ---------------------------------------
start_worker remote-c worker-c.log
worker_c=$worker_pid
# The worker's own line, not the server's: killed between the two, the server would take the
# join reply with it and the worker would exit on a failed join instead.
for _ in $(seq 1 300); do grep -q "'remote-c' joined" "$work/worker-c.log" && break; sleep 0.1; done
kill -9 "$server"
wait "$server" 2>/dev/null || true
set +e
for _ in $(seq 1 100); do kill -0 "$worker_c" 2>/dev/null || break; sleep 0.1; done
wait "$worker_c"
status=$?
set -e
check "the worker exits with status 1 when its server goes away ($status)" test "$status" -eq 1
check "... saying the server went away" grep -q "went away" "$work/worker-c.log"

if ((failures)); then
  echo "--- server log"; tail -20 "$work/serve.log"; echo "--- worker log"; tail -5 "$work/worker.log" || true
  exit 1
fi
echo "all remote worker checks passed"

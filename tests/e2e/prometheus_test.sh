#!/usr/bin/env bash
# End to end: a real Prometheus (Debian's `prometheus`) scrapes `actorllm serve` with a config
# derived from monitoring/prometheus.yml. After a burst of completions the series read back
# through Prometheus' query API must agree with what the clients were served: token counters
# equal the usage the clients got, the running gauge moved, KV usage is 0 once idle.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"

require_command serve
require_tools prometheus curl python3

# A random Llama whose streams last long enough for the 1 s scrapes to see them running
# (stories260K finishes a 20-token request in milliseconds on a fast CPU, between scrapes).
model="$work/slow-llama"
slow_random_model "$model"
max_tokens=100
port=$(free_port)
prom_port=$(free_port)
base="http://127.0.0.1:$port"
prom="http://127.0.0.1:$prom_port"
fail_with_logs() {
  echo "FAIL: $1"
  echo "--- serve log"; tail -50 "$work/serve.log" || true
  echo "--- prometheus log"; tail -20 "$work/prometheus.log" 2>/dev/null || true
  exit 1
}

# The server, logging its stats line every second.
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --max-model-len 256 \
  --log-stats-interval 1 >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  curl -sf "$base/health" >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || fail_with_logs "serve exited during startup"
  sleep 0.1
done
curl -sf "$base/health" >/dev/null || fail_with_logs "/health never became 200"

# Prometheus with the shipped config, pointed at this server's port.
sed "s/127\.0\.0\.1:8000/127.0.0.1:$port/" "$ACTORLLM_SOURCE_DIR/monitoring/prometheus.yml" \
  >"$work/prometheus.yml"
grep -q "127.0.0.1:$port" "$work/prometheus.yml" || fail_with_logs "prometheus.yml has no 127.0.0.1:8000 target"
prometheus --config.file="$work/prometheus.yml" --web.listen-address="127.0.0.1:$prom_port" \
  --storage.tsdb.path="$work/tsdb" >"$work/prometheus.log" 2>&1 &
pids+=($!)

# query <PromQL>: the value of the first sample of an instant query, or "none".
query() {
  curl -s --get "$prom/api/v1/query" --data-urlencode "query=$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
v = float(r[0]["value"][1]) if r else None
print("none" if v is None else (int(v) if v == int(v) else v))'
}
# wait_for <PromQL> <expected> [seconds]: poll until the query gives expected (scrapes lag).
wait_for() {
  local deadline=$((SECONDS + ${3:-15}))
  while [ "$(query "$1" 2>/dev/null || echo none)" != "$2" ]; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.5
  done
}
wait_for 'up{job="actorllm"}' 1 60 || fail_with_logs "prometheus never scraped the server"

# Eight clients send completions for a few seconds, so that several 1 s scrapes see them.
num_clients=8
run_seconds=4
client() {  # client <index>
  local i=$1 n=0 end=$((SECONDS + run_seconds))
  while :; do
    curl -s "$base/v1/completions" -H 'Content-Type: application/json' \
      -d "{\"model\":\"slow-llama\",\"prompt\":\"Once upon a time, client $i asked $n\",\"max_tokens\":$max_tokens,\"ignore_eos\":true}" \
      -o "$work/response.$i.$n.json" || true
    n=$((n + 1))
    [ $SECONDS -ge $end ] && break
  done
}
clients=()
for i in $(seq 1 $num_clients); do client "$i" & clients+=($!); done
for c in "${clients[@]}"; do wait "$c"; done

read -r num_requests num_bad prompt_tokens completion_tokens < <(python3 - "$work" <<'PY'
import glob, json, sys
requests = bad = prompt = completion = 0
for path in glob.glob(sys.argv[1] + "/response.*.json"):
    try:
        usage = json.load(open(path))["usage"]
    except (OSError, ValueError, KeyError):
        bad += 1
        continue
    requests += 1
    prompt += usage["prompt_tokens"]
    completion += usage["completion_tokens"]
print(requests, bad, prompt, completion)
PY
)
echo "served $num_requests requests: $prompt_tokens prompt and $completion_tokens completion tokens"
check "every request got a completion with usage" test "$num_bad" -eq 0
check "at least one request per client" test "$num_requests" -ge "$num_clients"
check "every completion generated $max_tokens tokens" \
  test "$completion_tokens" -eq $((max_tokens * num_requests))

check "generation_tokens_total equals the completion tokens served" \
  wait_for 'sum(actorllm:generation_tokens_total{job="actorllm"})' "$completion_tokens"
check "prompt_tokens_total equals the prompt tokens served" \
  wait_for 'sum(actorllm:prompt_tokens_total{job="actorllm"})' "$prompt_tokens"
check "request_success_total{finished_reason=length} counts every request" \
  wait_for 'sum(actorllm:request_success_total{finished_reason="length"})' "$num_requests"
check "time_to_first_token_seconds observed every request" \
  wait_for 'sum(actorllm:time_to_first_token_seconds_count)' "$num_requests"
check "e2e_request_latency_seconds observed every request" \
  wait_for 'sum(actorllm:e2e_request_latency_seconds_count)' "$num_requests"
check "http_requests_total counts the completions" \
  wait_for 'sum(actorllm:http_requests_total{path="/v1/completions",status="200"})' "$num_requests"
check "num_requests_running moved above 0 during the run" \
  wait_for 'max(max_over_time(actorllm:num_requests_running[5m])) > bool 0' 1
check "kv_cache_usage_perc moved above 0 during the run" \
  wait_for 'max(max_over_time(actorllm:kv_cache_usage_perc[5m])) > bool 0' 1
check "kv_cache_usage_perc is 0 when idle" wait_for 'max(actorllm:kv_cache_usage_perc)' 0
check "num_requests_running is 0 when idle" wait_for 'max(actorllm:num_requests_running)' 0
check "num_requests_waiting is 0 when idle" wait_for 'max(actorllm:num_requests_waiting)' 0
check "cache_config_info is published" wait_for 'count(actorllm:cache_config_info == 1)' 1
check "the stats line is logged" grep -q "Avg prompt throughput: .* tokens/s, Avg generation throughput: .* tokens/s, Running: [0-9]* reqs" "$work/serve.log"

if [ "$failures" -ne 0 ]; then
  echo "--- serve log"; tail -30 "$work/serve.log"
  echo "$failures check(s) failed"
  exit 1
fi
echo "all prometheus checks passed"

#!/usr/bin/env bash
# End to end: the admin API of a real server (a random Llama slow enough to drain under load)
# through `actorllm admin` and curl.
# Refused without the admin key (401) and with the API key; a replica added while streams
# run serves new requests; one drained under load finishes its streams and goes dead; one
# stopped at once hands its streams to the others, every stream complete; /metrics counts the
# replicas by state and the scale events.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}"
require_tools curl python3
require_command serve
require_command admin

model="$work/slow-llama"  # requests must still be running when a drain, stop or kill lands
slow_random_model "$model"
port=$(free_port)
url="http://127.0.0.1:$port"
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
  --api-key api-k --admin-api-key admin-k --max-num-seqs 1 --disable-log-stats \
  >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "$url/health" >/dev/null 2>&1 && break; sleep 0.1; done
admin() { "$ACTORLLM_BIN" admin --url "$url" --admin-api-key admin-k "$@"; }
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
listed_as() { admin list | grep -Eq "^ *$1 +cpu +1 +$2"; }  # replica $1 is in state $2
becomes() { for _ in $(seq 1 200); do listed_as "$1" "$2" && return 0; sleep 0.1; done; return 1; }
says() { local want=$1; shift; admin "$@" | grep -q "$want"; }  # the answer holds $want
refused() { ! admin "$@" 2>"$work/refusal.txt"; }

check "no key is a 401" test "$(status "$url/admin/replicas")" = 401
check "the API key is not the admin key" \
  test "$(status -H 'Authorization: Bearer api-k' "$url/admin/replicas")" = 401
check "a wrong key is refused by the command, exit 1" \
  bash -c "! '$ACTORLLM_BIN' admin --url '$url' --admin-api-key nope list"
check "list shows replica 0 serving" listed_as 0 serving

# Streams that keep a replica busy for seconds: 400 tokens each, one at a time per replica,
# so that most of them wait in its queue while the admin calls run.
streams() {  # $1: tag; writes $work/$1.N.out, one per request
  for i in $(seq 1 "$2"); do
    curl -sN "$url/v1/completions" -H 'Authorization: Bearer api-k' \
      -H 'Content-Type: application/json' \
      -d "{\"prompt\":\"Once upon a time $i\",\"max_tokens\":400,\"ignore_eos\":true,\"stream\":true}" \
      >"$work/$1.$i.out" &
  done
}
started() {  # some stream of tag $1 has output
  for _ in $(seq 1 200); do
    find "$work" -name "$1.*.out" -size +0 | grep -q . && return 0
    sleep 0.02
  done
  return 1
}
complete() {  # every stream of tag $1 ended with [DONE] and finish_reason length
  python3 - "$work" "$1" <<'PY'
import glob, json, sys
work, tag = sys.argv[1], sys.argv[2]
files = glob.glob(f"{work}/{tag}.*.out")
bad = []
for f in files:
    chunks = [l[6:] for l in open(f) if l.startswith("data: ")]
    if not chunks or chunks[-1].strip() != "[DONE]":
        bad.append(f); continue
    events = [json.loads(c) for c in chunks[:-1]]
    finish = [e["choices"][0].get("finish_reason") for e in events if e.get("choices")]
    usage = [e["usage"] for e in events if e.get("usage")]
    if "length" not in finish and not (usage and usage[-1]["completion_tokens"] == 400):
        bad.append(f)
print(f"{len(files) - len(bad)}/{len(files)} complete")
sys.exit(1 if bad or not files else 0)
PY
}

streams first 8
check "add answers 202 with the new id" says '"ids":\[1\]' add
check "replica 1 serves" becomes 1 serving
streams second 8
started second
check "drain answers 202" says draining drain 0
check "a second drain is a 409, exit 1" refused drain 0
wait_for_streams() { for _ in $(seq 1 600); do pgrep -f "curl -sN $url" >/dev/null || return 0; sleep 0.1; done; return 1; }
check "replica 0 held streams when it began to drain" \
  grep -Eq "draining replica 0 \([1-9][0-9]* requests left\)" "$work/serve.log"
check "every stream ends" wait_for_streams
check "the streams on the drained replica all completed" complete first
check "so did the later ones" complete second
check "the drained replica is dead" becomes 0 dead

# Stop at once under load: its streams move to the replica added next, none lost.
check "a second replica is added" says '"ids":\[2\]' add
check "replica 2 serves" becomes 2 serving
streams third 12
started third
check "stop answers 202" says dead stop 1
check "every stream ends after the stop" wait_for_streams
check "replica 1 held streams when it stopped" \
  grep -Eq "replica 1 is down \(stopped by the operator\); moving its [1-9][0-9]* requests" \
  "$work/serve.log"
check "no stream was lost to the stop" complete third
check "unknown replica: 404, exit 1" refused stop 9
check "the refusal names it" grep -q "no replica 9" "$work/refusal.txt"
metrics=$(curl -s "$url/metrics")
check "replicas by state in /metrics" grep -q 'actorllm:replicas{model_name="slow-llama",state="dead"} 2' <<<"$metrics"
check "scale events in /metrics" grep -q 'actorllm:scale_events_total{direction="down"' <<<"$metrics"
check "the gateway's mailbox is sampled" grep -q 'actor_mailbox_depth{actor="http_gateway"' <<<"$metrics"
[[ $failures -eq 0 ]] || { tail -n 30 "$work/serve.log"; exit 1; }
echo "all admin checks passed"

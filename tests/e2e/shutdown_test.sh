#!/usr/bin/env bash
# End to end: SIGTERM while streams are in flight ends `actorllm serve` cleanly (status 0, no
# watchdog line) within the shutdown bound, and every client's stream ends rather than hangs;
# a second signal during a shutdown ends the process at once.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}"
model="$ACTORLLM_SHARED_DIR/models/stories260K"

start_server() {  # start_server <log>: sets server and base
  local port
  port=$(free_port)
  base="http://127.0.0.1:$port"
  "$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" >"$1" 2>&1 &
  server=$!
  pids+=("$server")
  for _ in $(seq 1 300); do curl -sf "$base/health" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "FAIL: /health never became 200"; cat "$1"; exit 1
}
# exits_within <pid> <seconds>: waits for the child pid to end and sets `status` to its exit
# status, or to "running" if it has not ended by then. (Not in $(...): a subshell cannot wait.)
exits_within() {
  status=running
  for _ in $(seq 1 $(($2 * 10))); do
    if ! kill -0 "$1" 2>/dev/null; then
      status=0
      wait "$1" || status=$?
      return 0
    fi
    sleep 0.1
  done
}

# 1. Sixteen long streams in flight, then SIGTERM.
start_server "$work/serve1.log"
clients=()
for i in $(seq 1 16); do
  curl -sN "$base/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model":"stories260K","prompt":"Once upon a time","max_tokens":480,"ignore_eos":true,"stream":true}' \
    -o "$work/stream.$i.txt" &
  clients+=($!)
done
for _ in $(seq 1 100); do [ -s "$work/stream.1.txt" ] && break; sleep 0.02; done
kill -TERM "$server"
exits_within "$server" 20
check "the server ends within 20 s of SIGTERM with streams in flight (status $status)" \
  test "$status" = 0
check "it logged the shutdown" grep -q "shutting down" "$work/serve1.log"
check "the shutdown finished without the watchdog" \
  bash -c "! grep -q 'exiting now' '$work/serve1.log'"
ended=0
for c in "${clients[@]}"; do
  exits_within "$c" 10
  [ "$status" != running ] && ended=$((ended + 1))
done
check "every client's stream ended ($ended/16)" test "$ended" -eq 16

# 2. A second signal during the shutdown ends the process at once.
start_server "$work/serve2.log"
kill -TERM "$server"
kill -TERM "$server" 2>/dev/null || true
exits_within "$server" 5
check "two signals end the server within 5 s (status $status)" test "$status" != running

if ((failures)); then
  echo "--- serve logs"; tail -5 "$work/serve1.log" "$work/serve2.log"
  exit 1
fi
echo "all shutdown checks passed"

#!/usr/bin/env bash
# Soak test: starts `actorllm serve` on MODEL, runs bench/soak.py against it for --minutes at
# --concurrency, then stops the server with SIGTERM, which must end it with status 0.
#
#   bench/soak.sh [--minutes N=10] [--concurrency C=64] [--model DIR=models-random/llama-15M]
#                 [--blocks N=2048] [--port P=18095] [soak.py flags...] [-- serve flags...]
#
# The default model is made on first use (scripts/make_random_model.py --shape 15M; the folder
# is gitignored). --blocks pins the KV pool (--num-gpu-blocks-override): the block pool hands
# out free blocks first-in first-out, so with the pool sized from host memory every request
# touches fresh pages and RSS climbs toward the whole pool's size, which would hide a leak;
# a pool of N blocks is touched within the warm-up. 0 leaves the server's own sizing.
# ACTORLLM_BIN (default build/actorllm) is the binary; copy it elsewhere for long runs while
# others rebuild. Writes $RESULTS/soak_<model>.json (every sample) and .log (the server's
# output); RESULTS defaults to bench/results/soak. Exit status 1 when soak.py finds a failure
# or the server does not stop cleanly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

minutes=10
concurrency=64
model=models-random/llama-15M
blocks=2048
port=${PORT:-18095}
results=${RESULTS:-bench/results/soak}
soak_args=()
serve_args=()
while (($#)); do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --blocks) blocks=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --) shift; serve_args=("$@"); break ;;
    *) soak_args+=("$1"); shift ;;
  esac
done

if [[ ! -d "$model" ]]; then
  if [[ "$model" == models-random/llama-15M ]]; then
    /usr/bin/python3 scripts/make_random_model.py --shape 15M --out "$model"
  else
    echo "soak.sh: no model folder $model"
    exit 1
  fi
fi
mkdir -p "$results"
label=$(basename "$model")
[[ "$blocks" != 0 ]] && serve_args=(--num-gpu-blocks-override "$blocks" "${serve_args[@]}")

# shellcheck source=bench/serve_lib.sh
source bench/serve_lib.sh
trap stop_server EXIT

start_server "$results/soak_$label.log" "$port" --model "$model" "${serve_args[@]}"
echo "soak.sh: ${ACTORLLM_BIN:-build/actorllm} serve $model ${serve_args[*]} (pid $server_pid, port $port)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
status=0
python3 bench/soak.py --port "$port" --pid "$server_pid" --minutes "$minutes" \
  --concurrency "$concurrency" --json-out "$results/soak_$label.json" "${soak_args[@]}" || status=$?

# A clean stop after the soak: SIGTERM must end the server with status 0 within 30 s.
kill -TERM "$server_pid"
stopped=running
for _ in $(seq 1 300); do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    stopped=0
    wait "$server_pid" || stopped=$?
    break
  fi
  sleep 0.1
done
[[ "$stopped" == running ]] || server_pid=  # else the EXIT trap signals it again
if [[ "$stopped" != 0 ]]; then
  echo "FAIL the server did not stop cleanly after the soak (status $stopped); log: $results/soak_$label.log"
  tail -n 20 "$results/soak_$label.log"
  status=1
else
  echo "ok   the server stopped with status 0 on SIGTERM"
fi
echo "soak.sh: load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
exit "$status"

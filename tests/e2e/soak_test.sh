#!/usr/bin/env bash
# End to end: a 24-second soak (bench/soak.sh) at concurrency 8 on stories260K with every
# client kind (streaming, non-streamed, disconnecting, pipelining, WebSocket with cancels,
# slow and never-reading clients). Every answer must be right, every request end exactly
# once on the server, the KV blocks and queues return to 0, RSS and fds stay within the
# soak's growth rule, and the server stop cleanly on SIGTERM.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}"
require_tools python3 curl
require_command serve
source_dir=${ACTORLLM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}

status=0
RESULTS="$work" PORT=$(free_port) "$source_dir/bench/soak.sh" --minutes 0.4 --concurrency 8 \
  --model "$ACTORLLM_SHARED_DIR/models/stories260K" --blocks 1024 --never-hold 10 \
  --request-timeout 30 --idle 2 --sample-interval 2 >"$work/soak.txt" 2>&1 || status=$?

check "bench/soak.sh exits 0 (status $status)" test "$status" = 0
check "the soak's verdict is PASS" grep -q "^soak verdict: PASS" "$work/soak.txt"
check "the server stopped cleanly" grep -q "server stopped with status 0" "$work/soak.txt"
check "every client kind ran and requests were checked" python3 - "$work/soak_stories260K.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
kinds = d["checks"]
ran = next(c for c in kinds if c["check"] == "every client kind ran")
ok = ran["ok"] and d["requests"]["checked_ok"] > 100 and d["requests"]["interrupted"] > 10
ok = ok and any(c["check"] == "RSS growth after warm-up" and c["ok"] for c in kinds)
sys.exit(0 if ok else 1)
PY
if ((failures)); then
  echo "--- soak output"
  grep -v '^ ' "$work/soak.txt" | tail -n 60
  echo "--- server log tail"
  tail -n 20 "$work/soak_stories260K.log" || true
  exit 1
fi
echo "soak test passed"

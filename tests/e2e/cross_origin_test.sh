#!/usr/bin/env bash
# End to end: another site's page cannot make the server generate. Debian's chromium, driven
# by puppeteer-core (cross_origin_client.mjs), loads pages of other origins (a page server of
# the test's own on another port, and a DNS-rebinding domain that resolves to this machine)
# and tries every way a page has: simple POSTs with a text or Blob body, a JSON POST that needs
# a preflight, the WebSocket; the server's own count of prompt tokens must not move, while a
# request of the server's own origin does move it (the count can see a generation).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl chromium
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir" puppeteer-core

port=$(free_port)
"$ACTORLLM_BIN" serve --model "$ACTORLLM_SHARED_DIR/models/stories260K" --host 127.0.0.1 \
  --port "$port" --device cpu --disable-log-stats >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done

check "pages of other origins cannot generate (chromium)" node "$e2e_dir/cross_origin_client.mjs" \
  "$port" "$(free_port)"

if [[ $failures -ne 0 ]]; then
  echo "--- serve.log"
  tail -n 20 "$work/serve.log"
  exit 1
fi

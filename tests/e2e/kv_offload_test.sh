#!/usr/bin/env bash
# End to end: the second KV tier. A server of stories260K with a device pool of 16 blocks of
# 8 tokens (two of the six prompts below) and a 4 MiB tier in a file (--kv-offload-dir) serves
# six prompts with nothing in common, one after another, three times. The second round finds
# their prefixes in the tier (vLLM's external_prefix_cache_hits_total, the engine view's
# tier_cache_hit_rate); then every byte of the tier's file is overwritten and the third round
# must recompute what no longer matches (kv_offload_failed_loads_total). Every answer, in every
# round, is the greedy text a server without the tier gives.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"

require_command serve
require_tools curl python3

model="$ACTORLLM_SHARED_DIR/models/stories260K"
mkdir -p "$work/tier"

# serve <log> <args...>: a server on a free port; its URL in $base.
serve() {
  local log=$1 port
  shift
  port=$(free_port)
  "$ACTORLLM_BIN" serve "$model" --host 127.0.0.1 --port "$port" --device cpu \
    --block-size 8 --max-model-len 128 --swap-space 0 "$@" >"$log" 2>&1 &
  pids+=($!)
  base="http://127.0.0.1:$port"
  for _ in $(seq 1 600); do curl -sf "$base/health" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "FAIL: the server did not start"
  cat "$log"
  exit 1
}

# round <base> <out>: the six completions, one after another, as a JSON list of texts.
round() {
  python3 - "$1" "$2" <<'PY'
import json, sys, urllib.request
base, out = sys.argv[1], sys.argv[2]
names = ["Lily", "Tom", "Sue", "Ben", "Max", "Mia"]
places = ["park", "sea", "shop", "farm", "hill", "zoo"]
texts = []
for name, place in zip(names, places):
    prompt = (f"{name} went to the {place} with a red ball. {name} saw a big dog and a small cat "
              f"near the {place}. The dog was happy and the cat was sad, so {name} ")
    body = {"prompt": prompt, "max_tokens": 8, "temperature": 0, "ignore_eos": True}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    texts.append(json.load(urllib.request.urlopen(req))["choices"][0]["text"])
json.dump(texts, open(out, "w"))
PY
}

# metric <name>: the sum of its series in /metrics.
metric() {
  curl -s "$base/metrics" |
    awk -v name="$1" 'index($0, name "{") == 1 || index($0, name " ") == 1 { s += $NF } END { print s + 0 }'
}

serve "$work/reference.log" --num-gpu-blocks-override 256
round "$base" "$work/reference.json"
kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()

serve "$work/serve.log" --num-gpu-blocks-override 16 --kv-offload-bytes $((4 << 20)) \
  --kv-offload-dir "$work/tier"
check "the startup log states the tier" grep -q "KV offload tier .* blocks .* in a file under $work/tier" \
  "$work/serve.log"
check "the tier's file is in its folder" test "$(ls "$work/tier" | wc -l)" = 1

round "$base" "$work/first.json"
check "the first round is exact" cmp -s "$work/first.json" "$work/reference.json"
check "evicted prefixes were stored in the tier" test "$(metric actorllm:kv_offload_stored_blocks_total)" -gt 0

round "$base" "$work/second.json"
check "the second round is exact" cmp -s "$work/second.json" "$work/reference.json"
hits=$(metric actorllm:external_prefix_cache_hits_total)
check "the second round's prefixes came from the tier ($hits tokens)" test "$hits" -gt 0
check "the engine view shows the tier's hit rate" python3 -c "
import json, sys, urllib.request
r = json.load(urllib.request.urlopen(sys.argv[1] + '/v1/engine/stats'))['replicas'][0]
sys.exit(not (r['tier_cache_hit_rate'] > 0 and r['kv_offload_usage'] > 0))" "$base"

# Fault injection: the tier's file is overwritten behind the server's back.
tier_file=$(ls "$work/tier"/*)
python3 -c "
import os, sys
path = sys.argv[1]
with open(path, 'r+b') as f:
    f.write(b'\x5a' * os.path.getsize(path))" "$tier_file"
round "$base" "$work/third.json"
check "after the tier's bytes changed, every answer is still exact" \
  cmp -s "$work/third.json" "$work/reference.json"
failed=$(metric actorllm:kv_offload_failed_loads_total)
check "the changed blocks were refused and computed again ($failed)" test "$failed" -gt 0
check "the server is healthy" curl -sf "$base/health" -o /dev/null
check "every KV block came back" test "$(metric actorllm:kv_cache_usage_perc)" = 0

kill "${pids[0]}"
wait "${pids[0]}" 2>/dev/null || true
pids=()
check "the tier's file goes with the server" test -z "$(ls "$work/tier")"

if ((failures)); then
  tail -20 "$work/serve.log"
  exit 1
fi

#!/usr/bin/env bash
# End to end: `actorllm serve --task embed` on stories260K answers /v1/embeddings to the
# official openai SDK (embeddings_client.mjs), the token-id input equal to the float64
# reference pooling (tests/reference/reference_forward.py --embed), and a server started
# without --task embed refuses the endpoint with a 400 that says how to start one.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir"

model="$ACTORLLM_SHARED_DIR/models/stories260K"
/usr/bin/python3 "$ACTORLLM_SOURCE_DIR/tests/reference/reference_forward.py" "$model" \
  --prompt 1,403,407,261 --embed LAST --out "$work/embedding.json"
/usr/bin/python3 -c "
import json, sys
r = json.load(open(sys.argv[1])); r['prompt'] = [1, 403, 407, 261]
json.dump(r, open(sys.argv[1], 'w'))" "$work/embedding.json"

port=$(free_port)
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu --task embed \
  >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
check "the openai SDK's embeddings.create" \
  node "$e2e_dir/embeddings_client.mjs" "http://127.0.0.1:$port" "$work/embedding.json"
for path in completions chat/completions responses; do
  case $path in
    completions) request='{"prompt":"Once","max_tokens":4}' ;;
    chat/completions) request='{"messages":[{"role":"user","content":"hi"}]}' ;;
    responses) request='{"input":"hi"}' ;;
  esac
  code=$(curl -s -o "$work/generate.json" -w '%{http_code}' "http://127.0.0.1:$port/v1/$path" \
    -H 'Content-Type: application/json' -d "$request")
  check "--task embed: /v1/$path is a 400 naming the task ($code)" \
    sh -c "test $code = 400 && grep -q -- '--task embed' '$work/generate.json'"
done

plain=$(free_port)
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$plain" --device cpu \
  >"$work/plain.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$plain/health" >/dev/null 2>&1 && break; sleep 0.1; done
body=$(curl -s "http://127.0.0.1:$plain/v1/embeddings" -H 'Content-Type: application/json' \
  -d '{"input":"x"}')
check "without --task embed the endpoint is a 400 naming the flag" grep -q -- '--task embed' <<<"$body"
[[ $failures -eq 0 ]] || { tail -n 20 "$work/serve.log"; exit 1; }
echo "all embeddings checks passed"

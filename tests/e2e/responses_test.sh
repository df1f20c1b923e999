#!/usr/bin/env bash
# End to end: POST /v1/responses on a random-weight model (Llama-2 vocabulary, the Qwen2.5
# chat template) through two real clients, the official openai SDK and the Vercel AI SDK's
# default provider (responses_client.mjs): text whole and streamed, instructions,
# max_output_tokens (status incomplete), a forced function tool, a function_call_output turn,
# and previous_response_id refused (nothing is stored).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir" ai @ai-sdk/openai

model="$work/model"
small_random_model "$model"
port=$(free_port)
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
  --chat-template "$ACTORLLM_SHARED_DIR/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja" \
  >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done

check "the openai SDK and the Vercel AI SDK on /v1/responses" \
  node "$e2e_dir/responses_client.mjs" "http://127.0.0.1:$port"
body=$(curl -s "http://127.0.0.1:$port/v1/responses" -H 'Content-Type: application/json' \
  -d '{"input":"x","tools":[{"type":"web_search"}]}')
check "a tool type other than function is a 400 naming tools" \
  grep -q '"param":"tools"' <<<"$body"
[[ $failures -eq 0 ]] || { tail -n 20 "$work/serve.log"; exit 1; }
echo "all responses checks passed"

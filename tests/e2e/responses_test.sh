#!/usr/bin/env bash
# End to end: POST /v1/responses on random-weight models (the Qwen2.5 chat template) through
# real clients:
#   - the official openai SDK and the Vercel AI SDK's default provider
#     (responses_client.mjs): text whole and streamed, instructions, max_output_tokens (status
#     incomplete), a forced function tool, a function_call_output turn, and the store: three
#     turns chained by previous_response_id, retrieve, inputItems.list, delete (then a
#     NotFoundError), an unknown previous_response_id (404), store: false;
#   - the OpenAI Agents SDK on its Responses and Chat Completions providers (agents_client.mjs):
#     a function tool and an output type, the run loop completing;
#   - background responses and --responses-store-path on a slower model
#     (responses_store_client.mjs): polled until completed, cancelled while running (the engine
#     request aborted), and every stored response read back after a restart, past a corrupt
#     file in the folder.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir" ai @ai-sdk/openai @openai/agents zod

model="$work/model"
small_random_model "$model"
port=$(free_port)
template="$ACTORLLM_SHARED_DIR/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja"
# The agents SDK turns tool_choice back to auto after a call: the hermes parser reads it.
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
  --chat-template "$template" --enable-auto-tool-choice --tool-call-parser hermes \
  >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done

check "the openai SDK and the Vercel AI SDK on /v1/responses" \
  node "$e2e_dir/responses_client.mjs" "http://127.0.0.1:$port"
check "the OpenAI Agents SDK on its Responses and Chat Completions providers" \
  node "$e2e_dir/agents_client.mjs" "http://127.0.0.1:$port"
body=$(curl -s "http://127.0.0.1:$port/v1/responses" -H 'Content-Type: application/json' \
  -d '{"input":"x","tools":[{"type":"web_search"}]}')
check "a tool type other than function is a 400 naming tools" \
  grep -q '"param":"tools"' <<<"$body"

# Background responses and the store's folder, across a restart.
slow="$work/slow"
slow_random_model "$slow"
store="$work/store"
slow_port=$(free_port)
serve_slow() {
  "$ACTORLLM_BIN" serve --model "$slow" --host 127.0.0.1 --port "$slow_port" --device cpu \
    --chat-template "$template" --responses-store-path "$store" >>"$work/serve-slow.log" 2>&1 &
  slow_server=$!
  pids+=("$slow_server")
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$slow_port/health" >/dev/null 2>&1 && break; sleep 0.1; done
}
serve_slow
check "background responses: completed, cancelled, stored" \
  node "$e2e_dir/responses_store_client.mjs" "http://127.0.0.1:$slow_port" before "$work/state.json"
kill "$slow_server"
wait "$slow_server" 2>/dev/null || true
echo '{"response": {"id": "resp_corr' >"$store/resp_corrupt.json"
serve_slow
check "a corrupt stored file is skipped with a warning" \
  grep -q 'resp_corrupt.json: not a JSON object; skipped' "$work/serve-slow.log"
check "after a restart the folder's responses read back" \
  node "$e2e_dir/responses_store_client.mjs" "http://127.0.0.1:$slow_port" after "$work/state.json"

[[ $failures -eq 0 ]] || { tail -n 20 "$work/serve.log" "$work/serve-slow.log"; exit 1; }
echo "all responses checks passed"

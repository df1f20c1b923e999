#!/usr/bin/env bash
# End to end: POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API)
# through the official @anthropic-ai/sdk (anthropic_client.mjs) against two servers:
# stories260K behind --api-key (text whole and streamed, stop_sequences, countTokens, the key
# in x-api-key, typed errors) and a random-weight model with the Qwen2.5 chat template and the
# hermes tool parser (a tool_use forced by tool_choice, its tool_result turn, tool_choice any
# streamed); then the SSE framing and the error shapes (a 400, a 413) as bytes on the wire.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir" @anthropic-ai/sdk
template="$ACTORLLM_SHARED_DIR/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja"
key=anthropic-e2e-key

# start <log> <args...>: a server on a free port; sets base.
start() {
  local log=$1 port
  shift
  port=$(free_port)
  "$ACTORLLM_BIN" serve --host 127.0.0.1 --port "$port" --device cpu --chat-template "$template" \
    "$@" >"$work/$log" 2>&1 &
  pids+=("$!")
  base="http://127.0.0.1:$port"
  for _ in $(seq 1 300); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.1; done
}

start text.log --model "$ACTORLLM_SHARED_DIR/models/stories260K" --api-key "$key" \
  --max-body-bytes 65536
text_base=$base
model="$work/model"
small_random_model "$model"
start tools.log --model "$model" --enable-auto-tool-choice --tool-call-parser hermes
tools_base=$base

check "the @anthropic-ai/sdk on /v1/messages" \
  node "$e2e_dir/anthropic_client.mjs" "$text_base" "$key" "$tools_base"

# The wire: named events, no [DONE]; errors in Anthropic's shape with its headers tolerated.
body='{"max_tokens":4,"stream":true,"messages":[{"role":"user","content":"Hi"}]}'
stream=$(curl -s "$text_base/v1/messages" -H "x-api-key: $key" -H 'anthropic-version: 2023-06-01' \
  -H 'anthropic-beta: tools-2024-04-04' -H 'Content-Type: application/json' -d "$body")
check "a stream opens with event: message_start and ends with message_stop, no [DONE]" \
  bash -c '[[ $(head -n 1 <<<"$1") == "event: message_start" ]] &&
           grep -qx "event: message_stop" <<<"$1" && ! grep -q "\[DONE\]" <<<"$1"' _ "$stream"
refused=$(curl -s -w '%{http_code}' "$text_base/v1/messages" -H "x-api-key: $key" \
  -H 'Content-Type: application/json' -d '{"max_tokens":4,"messages":[{"role":"user","content":[{"type":"document"}]}]}')
check "an unknown block type is a 400 naming it, in Anthropic's error shape" \
  grep -q "^{\"error\":{\"message\":\"content blocks of type 'document' are not supported here\",\"type\":\"invalid_request_error\"},\"type\":\"error\"}400$" <<<"$refused"
big=$(head -c 70000 /dev/zero | tr '\0' a)
too_large=$(curl -s -w '%{http_code}' "$text_base/v1/messages" -H "x-api-key: $key" \
  -H 'Content-Type: application/json' \
  -d "{\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"$big\"}]}" || true)
check "a body over --max-body-bytes is a 413 request_too_large" \
  grep -q '"type":"request_too_large"},"type":"error"}413$' <<<"$too_large"
[[ $failures -eq 0 ]] || { tail -n 20 "$work/text.log" "$work/tools.log"; exit 1; }
echo "all anthropic checks passed"

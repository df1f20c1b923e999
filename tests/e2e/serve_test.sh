#!/usr/bin/env bash
# End to end: `actorllm serve` on stories260K, checked by real clients: curl, the official
# openai SDK (Node) and a WebSocket client. Content is checked against the golden greedy
# text, not just statuses.
set -euo pipefail
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"

source "$(dirname "$0")/lib.sh"
require_command serve
require_tools curl python3
require_node_clients "$ACTORLLM_SOURCE_DIR/tests/e2e"

model="$ACTORLLM_SHARED_DIR/models/stories260K"
golden="$model/golden_greedy.json"
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
template="$ACTORLLM_SHARED_DIR/chat-templates/mistralai-Mistral-Nemo-Instruct-2407.jinja"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
log="$work/serve.log"

metrics_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --metrics-port "$metrics_port" \
  --chat-template "$template" --max-model-len 512 >"$log" 2>&1 &
pid=$!
pid_interval=
cleanup() {
  kill "$pid" $pid_interval 2>/dev/null || true
  wait "$pid" $pid_interval 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

failures=0
check() {  # check <description> <command...>
  local what=$1; shift
  if "$@"; then echo "ok   curl: $what"; else echo "FAIL curl: $what"; failures=$((failures + 1)); fi
}

for _ in $(seq 1 600); do
  curl -sf "$base/health" >/dev/null 2>&1 && break
  if ! kill -0 "$pid" 2>/dev/null; then echo "FAIL: serve exited during startup"; cat "$log"; exit 1; fi
  sleep 0.1
done
curl -sf "$base/health" >/dev/null || { echo "FAIL: /health never became 200"; cat "$log"; exit 1; }

json_get() {  # json_get <file> <python expression over j>
  python3 -c "import json,sys; j = json.load(open(sys.argv[1])); print($2)" "$1"
}
status_of() {  # status_of <out file> <curl args...>: prints the HTTP status (bodies sent as JSON)
  local out=$1; shift
  curl -s -o "$out" -w '%{http_code}' -H 'Content-Type: application/json' "$@"
}

golden_text=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['output_text'], end='')" "$golden")
greedy='{"model":"stories260K","prompt":[1],"temperature":0,"max_tokens":120,"ignore_eos":true}'

# Small endpoints.
check "/v1/models lists stories260K" \
  test "$(curl -s "$base/v1/models" -o "$work/m.json"; json_get "$work/m.json" "j['data'][0]['id']")" = stories260K
check "/version answers" test "$(status_of "$work/v.json" "$base/version")" = 200
check "/metrics answers" test "$(status_of "$work/metrics.txt" "$base/metrics")" = 200

# The golden greedy text, whole and streamed.
curl -s "$base/v1/completions" -H 'Content-Type: application/json' -d "$greedy" -o "$work/c.json"
check "completion is the golden greedy text" \
  test "$(json_get "$work/c.json" "j['choices'][0]['text']")" = "$golden_text"
check "completion usage counts 120 tokens" test "$(json_get "$work/c.json" "j['usage']['completion_tokens']")" = 120

stream_body=${greedy%\}}',"stream":true}'
curl -sN "$base/v1/completions" -H 'Content-Type: application/json' -d "$stream_body" -o "$work/s.txt"
streamed=$(python3 - "$work/s.txt" <<'PY'
import json, sys
body = open(sys.argv[1]).read()
events = body.split("\n\n")
assert events[-1] == "" and events[-2] == "data: [DONE]", "stream must end with data: [DONE]"
text = ""
for e in events[:-2]:
    assert e.startswith("data: "), e
    for c in json.loads(e[6:])["choices"]:
        text += c["text"]
print(text, end="")
PY
) || true
check "streamed completion is the golden text, framed as SSE" test "$streamed" = "$golden_text"

# Several clients at once: batching must not change greedy output.
clients=()
for i in $(seq 1 16); do
  curl -s "$base/v1/completions" -H 'Content-Type: application/json' -d "$greedy" -o "$work/p$i.json" &
  clients+=($!)
done
for client in "${clients[@]}"; do wait "$client" || true; done
same=0
for i in $(seq 1 16); do
  [[ "$(json_get "$work/p$i.json" "j['choices'][0]['text']")" == "$golden_text" ]] && same=$((same + 1))
done
check "16 concurrent requests all give the golden text ($same/16)" test "$same" = 16

# Errors, each with its status and OpenAI's error object.
check "404 unknown model" test "$(status_of "$work/e.json" "$base/v1/completions" -d '{"model":"nope","prompt":"x"}')" = 404
check "400 bad temperature" test "$(status_of "$work/e.json" "$base/v1/completions" -d '{"prompt":"x","temperature":-1}')" = 400
check "400 names the parameter" test "$(json_get "$work/e.json" "j['error']['param']")" = temperature
long_prompt=$(python3 -c 'print({"prompt": [1] * 600, "max_tokens": 4})' | tr "'" '"')
check "400 prompt longer than max_model_len" test "$(status_of "$work/e.json" "$base/v1/completions" -d "$long_prompt")" = 400
check "the message gives both numbers" \
  python3 -c "import json,sys; m = json.load(open(sys.argv[1]))['error']['message']; sys.exit(not ('600' in m and '512' in m))" "$work/e.json"
check "400 max_tokens beyond the context left, not a completion cut short" \
  test "$(status_of "$work/e.json" "$base/v1/completions" -d '{"prompt":[1,2,3],"max_tokens":510}')" = 400
check "it names max_tokens" test "$(json_get "$work/e.json" "j['error']['param']")" = max_tokens
check "exactly the context left is fine" \
  test "$(status_of "$work/e.json" "$base/v1/completions" -d '{"prompt":[1,2,3],"max_tokens":509}')" = 200
check "400 a priority when requests run first come, first served" \
  test "$(status_of "$work/e.json" "$base/v1/completions" -d '{"prompt":"x","priority":1}')" = 400
check "404 unknown path" test "$(status_of "$work/e.json" "$base/v1/nothing")" = 404
check "405 wrong method" test "$(status_of "$work/e.json" "$base/v1/completions")" = 405
# curl -d alone sends a form; the JSON routes refuse it rather than guess.
check "415 a form body on a JSON route" \
  test "$(curl -s -o "$work/e.json" -w '%{http_code}' "$base/v1/completions" -d '{"prompt":"x"}')" = 415

# Tokenizer endpoints.
curl -s "$base/tokenize" -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time"}' -o "$work/t.json"
check "/tokenize counts tokens and gives max_model_len" \
  python3 -c "import json,sys; j = json.load(open(sys.argv[1])); sys.exit(not (j['count'] == len(j['tokens']) > 0 and j['max_model_len'] == 512))" "$work/t.json"
ids=$(python3 -c "import json,sys; print(json.dumps({'tokens': json.load(open(sys.argv[1]))['output_token_ids']}))" "$golden")
curl -s "$base/detokenize" -H 'Content-Type: application/json' -d "$ids" -o "$work/d.json"
check "/detokenize of the golden ids gives the golden text" \
  test "$(json_get "$work/d.json" "j['prompt'].strip()")" = "$golden_text"

# A client that disconnects mid-stream: the server aborts it and keeps serving.
curl -sN --max-time 0.3 "$base/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt":[1],"max_tokens":400,"ignore_eos":true,"stream":true}' -o /dev/null || true
# The abort lands within a step; on a loaded machine allow a few seconds before judging.
if grep -q '^actorllm:num_requests_running' "$work/metrics.txt" 2>/dev/null; then
  running=1
  for _ in $(seq 1 50); do
    running=$(curl -s "$base/metrics" | awk '/^actorllm:num_requests_running/ {print $2; exit}' || true)
    [[ "${running%.*}" == 0 ]] && break
    sleep 0.1
  done
  check "nothing left running after the disconnect" test "${running%.*}" = 0
fi
check "--metrics-port serves /metrics too" \
  sh -c "curl -s http://127.0.0.1:$metrics_port/metrics | grep -q '^actorllm:num_requests_running'"
check "still healthy after the disconnect" test "$(status_of "$work/h.txt" "$base/health")" = 200

# --stream-interval 3 (a second server): the golden text and one logprob per token, every chunk
# between the first and the last holding at least three tokens (at most 1 + ceil(119 / 3) = 41
# chunks; fewer when the connection merges deltas that arrive together).
port_interval=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port_interval" --stream-interval 3 \
  --max-model-len 512 >"$work/serve_interval.log" 2>&1 &
pid_interval=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port_interval/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sN "http://127.0.0.1:$port_interval/v1/completions" -H 'Content-Type: application/json' \
  -d "${greedy%\}}"',"stream":true,"logprobs":1}' -o "$work/s3.txt"
interval_verdict=$(python3 - "$work/s3.txt" "$golden" <<'PY'
import json, sys
events = [e for e in open(sys.argv[1]).read().split("\n\n") if e.startswith("data: {")]
chunks = [json.loads(e[6:]) for e in events]
chunks = [c["choices"][0] for c in chunks if c["choices"]]
golden = json.load(open(sys.argv[2]))["output_text"]
sizes = [len(c["logprobs"]["tokens"]) for c in chunks]
problems = []
if "".join(c["text"] for c in chunks) != golden: problems.append("text differs from the golden")
if sum(sizes) != 120: problems.append(f"{sum(sizes)} logprobs")
if len(chunks) > 41: problems.append(f"{len(chunks)} chunks")
if any(n < 3 for n in sizes[1:-1]): problems.append(f"chunk sizes {sizes}")
print("; ".join(problems) or "ok")
PY
) || true
check "--stream-interval 3 streams the golden text, 3+ tokens a chunk ($interval_verdict)" \
  test "$interval_verdict" = ok

# Real clients.
node "$e2e_dir/openai_client.mjs" "$base" "$golden" || failures=$((failures + 1))
node "$e2e_dir/ws_client.mjs" "ws://127.0.0.1:$port/v1/ws" "$golden" || failures=$((failures + 1))

if ((failures)); then
  echo "$failures check(s) failed; server log:"
  tail -n 50 "$log"
  exit 1
fi
echo "all end-to-end checks passed"

#!/usr/bin/env bash
# End to end: tool calls from `actorllm serve` on a random-weight model (Llama-2 vocabulary,
# the Qwen2.5 chat template, which renders tools and tool results).
#   - tool_choice "required" and a named function: the structured-output engine forces the
#     calls, and every response's tool_calls arguments validate against the tool's schema
#     (python3-jsonschema), whole, streamed and with n = 2; the official openai SDK too
#     (tool_calls_client.mjs: create, stream, runTools), and over the WebSocket.
#   - tool_choice "auto" through each --tool-call-parser: a regex forces the model to write a
#     call in the parser's own format, and the answer must come back as that call, with
#     finish_reason tool_calls, whole and streamed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir"
py=/usr/bin/python3
"$py" -c 'import jsonschema, numpy' || { echo "FAIL: python3-jsonschema and python3-numpy are needed (./scripts/setup.sh)"; exit 1; }

model="$work/model"
small_random_model "$model"
template="$ACTORLLM_SHARED_DIR/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja"

# serve <parser>: a server with that tool-call parser; sets base and server.
serve() {
  local port
  port=$(free_port)
  "$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
    --max-model-len 2048 --chat-template "$template" --enable-auto-tool-choice \
    --tool-call-parser "$1" >"$work/serve-$1.log" 2>&1 &
  server=$!
  pids+=("$server")
  base="http://127.0.0.1:$port"
  for _ in $(seq 1 300); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.1; done
}
stop() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }

serve hermes
status=0
"$py" - "$base" <<'PY' || status=$?
import json, sys, urllib.request
import jsonschema

base = sys.argv[1]
weather = {"type": "object", "additionalProperties": False, "required": ["city", "days"],
           "properties": {"city": {"enum": ["Paris", "Rome", "Oslo"]},
                          "days": {"type": "integer", "minimum": 1, "maximum": 7}}}
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": weather}},
         {"type": "function", "function": {"name": "noop",
                                           "parameters": {"type": "object", "properties": {},
                                                          "additionalProperties": False}}}]
schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
failures = []

def post(body):
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return r.read().decode()

def calls_of(raw, stream):
    """Per choice: (tool_calls, finish_reason), folding streamed deltas by index."""
    if not stream:
        return {c["index"]: (c["message"].get("tool_calls") or [], c["finish_reason"])
                for c in json.loads(raw)["choices"]}
    out = {}
    for line in raw.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for c in json.loads(line[6:]).get("choices", []):
            calls, finish = out.setdefault(c["index"], ([], None))
            for d in c["delta"].get("tool_calls") or []:
                while len(calls) <= d["index"]:
                    calls.append({"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                if d.get("id"):
                    calls[d["index"]]["id"] = d["id"]
                f = d.get("function", {})
                calls[d["index"]]["function"]["name"] += f.get("name") or ""
                calls[d["index"]]["function"]["arguments"] += f.get("arguments") or ""
            out[c["index"]] = (calls, c.get("finish_reason") or finish)
    return out

for i in range(12):
    stream = i % 2 == 1
    named = i % 3 == 2
    body = {"messages": [{"role": "user", "content": f"Weather {i}?"}], "tools": tools,
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}} if named else "required",
            "max_tokens": 300, "temperature": 1.0, "seed": i, "stream": stream, "n": 2 if i % 4 == 0 else 1}
    try:
        for index, (calls, finish) in calls_of(post(body), stream).items():
            assert calls, f"choice {index}: no tool_calls"
            assert finish == ("stop" if named else "tool_calls"), f"finish_reason {finish}"
            for call in calls:
                assert call["type"] == "function" and call["id"].startswith("call_"), call
                assert not named or call["function"]["name"] == "get_weather", call
                jsonschema.validate(json.loads(call["function"]["arguments"]),
                                    schemas[call["function"]["name"]])
    except Exception as e:  # noqa: BLE001 - reported with its request
        failures.append(f"request {i} ({'named' if named else 'required'}, stream={stream}): {e}")
print(f"{12 - len(failures)} of 12 forced tool-call requests valid")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
PY
check "required and named tool_choice give schema-valid tool_calls" test "$status" -eq 0
check "the openai SDK: create, stream and runTools" node "$e2e_dir/tool_calls_client.mjs" "$base"
check "tool-call deltas over the WebSocket" node "$e2e_dir/ws_tool_calls.mjs" "${base/http/ws}/v1/ws"
stop

# auto: per parser, a regex makes the random model write one call in that parser's format.
declare -A formats=(
  [hermes]='Checking\. <tool_call>\n\{"name": "get_weather", "arguments": \{"city": "(Paris|Rome)"\}\}\n</tool_call>'
  [llama3_json]='\{"name": "get_weather", "parameters": \{"city": "(Paris|Rome)"\}\}'
  [mistral]='\[TOOL_CALLS\]\[\{"name": "get_weather", "arguments": \{"city": "(Paris|Rome)"\}\}\]'
  [pythonic]='\[get_weather\(city="(Paris|Rome)"\)\]'
)
for parser in hermes llama3_json mistral pythonic; do
  serve "$parser"
  status=0
  "$py" - "$base" "${formats[$parser]}" "$parser" <<'PY' || status=$?
import json, sys, urllib.request
base, regex, parser = sys.argv[1:4]
tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
def post(stream):
    body = {"messages": [{"role": "user", "content": "Weather?"}], "tools": tools,
            "tool_choice": "auto", "structured_outputs": {"regex": regex}, "max_tokens": 200,
            "temperature": 1.0, "seed": 1, "stream": stream}
    req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=300).read().decode()
whole = json.loads(post(False))["choices"][0]
calls = whole["message"]["tool_calls"]
assert len(calls) == 1 and calls[0]["function"]["name"] == "get_weather", whole
assert json.loads(calls[0]["function"]["arguments"])["city"] in ("Paris", "Rome"), calls
assert whole["finish_reason"] == "tool_calls", whole["finish_reason"]
assert (whole["message"]["content"] or "") == ("Checking. " if parser == "hermes" else ""), whole
names, args, content = "", "", ""
for line in post(True).splitlines():
    if line.startswith("data: ") and line != "data: [DONE]":
        for c in json.loads(line[6:]).get("choices", []):
            content += c["delta"].get("content") or ""
            for d in c["delta"].get("tool_calls") or []:
                names += d.get("function", {}).get("name") or ""
                args += d.get("function", {}).get("arguments") or ""
assert names == "get_weather" and json.loads(args) == json.loads(calls[0]["function"]["arguments"]), (names, args)
assert "<tool_call>" not in content and "TOOL_CALLS" not in content, content
print(f"{parser}: {calls[0]['function']['arguments']}")
PY
  check "auto with --tool-call-parser $parser turns the written call into tool_calls" test "$status" -eq 0
  stop
done

[[ $failures -eq 0 ]] || { tail -n 20 "$work"/serve-*.log; exit 1; }
echo "all tool call checks passed"

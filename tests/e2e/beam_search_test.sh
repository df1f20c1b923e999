#!/usr/bin/env bash
# End to end: beam search over HTTP on stories260K (vLLM's use_beam_search). The choices of
# /v1/completions are the float64 reference's beams (tests/reference/reference_forward.py
# --beam-width), best first, their texts those of the reference's tokens (/detokenize); chat
# takes it too; streaming is refused by name; and every KV block comes back.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve

model="$ACTORLLM_SHARED_DIR/models/stories260K"
template="$ACTORLLM_SHARED_DIR/chat-templates/mistralai-Mistral-Nemo-Instruct-2407.jinja"
/usr/bin/python3 "$ACTORLLM_SOURCE_DIR/tests/reference/reference_forward.py" "$model" \
  --prompt 1,403,407,261,378 --beam-width 3 --steps 16 --length-penalty 0.8 \
  --out "$work/reference.json"

port=$(free_port)
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
  --chat-template "$template" >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done

beams_as_reference() {
  /usr/bin/python3 - "http://127.0.0.1:$port" "$work/reference.json" <<'PY'
import json, sys, urllib.request
base, ref = sys.argv[1], json.load(open(sys.argv[2]))
def post(path, body):
    req = urllib.request.Request(base + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))
answer = post("/v1/completions", {"prompt": ref["prompt"], "max_tokens": 16, "n": 3,
                                  "use_beam_search": True, "length_penalty": 0.8})
choices = sorted(answer["choices"], key=lambda c: c["index"])
assert len(choices) == 3, answer
for choice, beam in zip(choices, ref["beams"]):
    want = post("/detokenize", {"tokens": beam["tokens"]})["prompt"]
    assert choice["text"] == want, (choice["text"], want)
    assert choice["finish_reason"] == beam["finish"], (choice, beam)
assert answer["usage"]["completion_tokens"] == sum(len(b["tokens"]) for b in ref["beams"])
chat = post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Once upon"}],
                                     "max_tokens": 8, "n": 2, "use_beam_search": True})
assert len(chat["choices"]) == 2 and all(c["message"]["content"] for c in chat["choices"]), chat
PY
}
check "completions' beams are the reference's, best first; chat answers n beams" beams_as_reference

status=$(curl -s -o "$work/err.json" -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
  -H 'Content-Type: application/json' -d '{"prompt":"x","use_beam_search":true,"stream":true}')
check "a streamed beam search is a 400 naming stream" \
  sh -c "test $status -eq 400 && grep -q '\"param\":\"stream\"' '$work/err.json'"
blocks_back() {
  curl -s "http://127.0.0.1:$port/v1/engine/stats" |
    python3 -c "import json,sys; r=json.load(sys.stdin)['replicas']; sys.exit(0 if all(x['kv_cache_usage'] == 0 for x in r) else 1)"
}
check "every KV block is back" blocks_back
((failures)) && { tail -n 20 "$work/serve.log"; exit 1; }
echo "all beam search checks passed"

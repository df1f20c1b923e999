#!/usr/bin/env bash
# End to end: `actorllm serve` on a random checkpoint of each family (the HF tensor names and
# config keys of each, from scripts/make_random_model.py) streams, over HTTP, exactly the
# greedy tokens of the float64 reference forward (tests/reference/reference_forward.py), and
# its startup log names the architecture and the attention layout; a model folder's
# generation_config.json becomes the requests' default sampling.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl python3
require_command serve
py=/usr/bin/python3  # Debian's, with python3-numpy
steps=16

# serve_and_compare <arch> <make_random_model args...>
serve_and_compare() {
  local arch=$1; shift
  local dir="$work/$arch"
  "$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" "$@" --out "$dir" >/dev/null
  "$py" "$ACTORLLM_SOURCE_DIR/tests/reference/reference_forward.py" "$dir" --prompt 1,5,9 \
    --steps "$steps" --out "$work/$arch.ref.json"
  local port log="$work/$arch.log"
  port=$(free_port)
  "$ACTORLLM_BIN" serve --model "$dir" --host 127.0.0.1 --port "$port" --device cpu >"$log" 2>&1 &
  local server=$!
  pids+=("$server")
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sN "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt":[1,5,9],"max_tokens":'"$steps"',"temperature":0,"ignore_eos":true,"stream":true}' \
    -o "$work/$arch.sse" || true
  # The streamed text against the reference's tokens decoded by the same server.
  local verdict
  verdict=$("$py" - "$work/$arch.sse" "$work/$arch.ref.json" "http://127.0.0.1:$port" <<'PY'
import json, sys, urllib.request
sse, ref_path, base = sys.argv[1:4]
ref = json.load(open(ref_path))
text = ""
for line in open(sse):
    line = line.strip()
    if not line.startswith("data: ") or line == "data: [DONE]":
        continue
    chunk = json.loads(line[6:])
    for choice in chunk.get("choices", []):
        text += choice.get("text", "")
def decode(ids):
    req = urllib.request.Request(base + "/detokenize", data=json.dumps({"tokens": ids}).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))["prompt"]
# The continuation's text as the stream gives it: the whole sequence decoded, less the prompt.
def continuation(ids):
    return decode(ref["prompt"] + ids)[len(decode(ref["prompt"])):]
# Steps whose top two logits are within float32 error may pick either token: compare up to
# the first such step.
cut = next((i for i, m in enumerate(ref["margins"]) if m < 1e-3), len(ref["tokens"]))
want = continuation(ref["tokens"][:cut])
same = text.startswith(want) if cut < len(ref["tokens"]) else text == want
print("ok" if same else f"streamed {text!r}, reference {want!r} (first {cut} tokens)")
PY
)
  check "$arch: the stream is the reference's greedy text ($verdict)" test "$verdict" = ok
  check "$arch: the startup log names the architecture" grep -q "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['architectures'][0])" "$dir/config.json")" "$log"
  check "$arch: ... and its attention layout" grep -q "^.*attention .*heads" "$log"
  kill "$server"; wait "$server" 2>/dev/null || true
}

serve_and_compare qwen3 --arch qwen3
serve_and_compare mistral --arch mistral --sliding-window 8
serve_and_compare gemma2 --arch gemma2
serve_and_compare qwen2_moe --arch qwen2_moe
check "the windowed model's log gives its window" grep -q "windowed (8 tokens)" "$work/mistral.log"

# generation_config.json: the defaults apply to a request that sets nothing.
"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" --arch qwen3 \
  --generation-config '{"temperature": 0.0, "top_k": 1}' --out "$work/gencfg" >/dev/null
port=$(free_port)
"$ACTORLLM_BIN" serve --model "$work/gencfg" --host 127.0.0.1 --port "$port" >"$work/gencfg.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
check "the log says the model's sampling defaults apply" grep -q "sampling defaults from generation_config.json: temperature 0" "$work/gencfg.log"
a=$(curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' -d '{"prompt":[1,5,9],"max_tokens":12,"ignore_eos":true}')
b=$(curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' -d '{"prompt":[1,5,9],"max_tokens":12,"ignore_eos":true}')
text_of() { python3 -c "import json,sys; print(json.loads(sys.argv[1])['choices'][0]['text'])" "$1"; }
check "two requests without sampling fields agree (greedy by the model's default)" test "$(text_of "$a")" = "$(text_of "$b")"

if ((failures)); then
  for f in "$work"/*.log; do echo "--- $f"; tail -5 "$f"; done
  exit 1
fi

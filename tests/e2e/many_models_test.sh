#!/usr/bin/env bash
# End to end: one `actorllm serve` with three models of different architectures and
# vocabularies (stories260K, a random Qwen3 on the stories260K vocabulary, a random Gemma 2 on
# the Llama-2 vocabulary of 32,000 tokens) named by the positional argument, --model NAME=PATH
# and --models-dir, plus a model folder that cannot load. Under 64 concurrent requests (the
# three models mixed, streaming and not) every answer is exactly the greedy text that a server
# of that model alone gives; the broken model is listed as failed while the others serve;
# /v1/models, /metrics and /v1/engine/stats report per model; /detokenize reads the named
# model's vocabulary.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl python3
require_command serve
py=/usr/bin/python3  # Debian's, with python3-numpy
export ACTORLLM_SHARED_DIR

stories="$ACTORLLM_SHARED_DIR/models/stories260K"
"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" --arch qwen3 --out "$work/qwen3" >/dev/null
mkdir -p "$work/dir/broken"
"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" --arch gemma2 --vocab 32000 \
  --out "$work/dir/gemma2" >/dev/null
# A folder that looks like a model and is not one: an architecture nobody serves.
echo '{"architectures": ["NoSuchForCausalLM"], "vocab_size": 512}' >"$work/dir/broken/config.json"
cp "$work/qwen3/tokenizer.json" "$work/dir/broken/"

flags=(--host 127.0.0.1 --device cpu --swap-space 0.05 --max-model-len 128 --disable-log-stats)
prompts='["Once upon a time", "The cat sat on", "Lily and Tom went to the park", "A big red"]'

# serve <log> <args...>: starts a server on a free port and waits for /health; its URL in $url.
serve() {
  local log=$1; shift
  local port
  port=$(free_port)
  "$ACTORLLM_BIN" serve "$@" "${flags[@]}" --port "$port" >"$log" 2>&1 &
  pids+=($!)
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 600); do curl -sf "$url/health" >/dev/null 2>&1 && break; sleep 0.1; done
}

# The references: each model served alone, each prompt greedy, one request at a time.
declare -A alone
for model in stories260K:"$stories" qwen3:"$work/qwen3" gemma2:"$work/dir/gemma2"; do
  name=${model%%:*}
  serve "$work/$name.alone.log" "${model#*:}" --served-model-name "$name"
  alone[$name]=$url
done
"$py" - "$work/references.json" "$prompts" "${alone[stories260K]}" "${alone[qwen3]}" \
  "${alone[gemma2]}" <<'PY'
import json, sys, urllib.request
out, prompts, urls = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
refs = {}
for name, url in zip(["stories260K", "qwen3", "gemma2"], urls):
    for prompt in prompts:
        body = {"model": name, "prompt": prompt, "max_tokens": 24, "temperature": 0, "ignore_eos": True}
        req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        refs[f"{name}|{prompt}"] = json.load(urllib.request.urlopen(req))["choices"][0]["text"]
json.dump(refs, open(out, "w"))
PY
for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
pids=()
check "the three single-model servers gave 12 references" \
  test "$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$work/references.json")" = 12
check "the models' vocabularies differ (512 and 32000 tokens)" \
  test "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['vocab_size'])" "$work/dir/gemma2/config.json")" = 32000

# One server, three models (and a broken one), KV shared by a stated budget.
log="$work/many.log"
serve "$log" "$stories" --model qwen3="$work/qwen3" --models-dir "$work/dir" \
  --models-kv-budget $((64 << 20))
base=$url
check "the server serves while the broken model failed" curl -sf "$base/health" -o /dev/null
check "the startup log gives each model's KV pools and share" \
  test "$(grep -c "KV pools .* left" "$log")" = 3
check "the startup log says why the broken model failed" grep -q "model 'broken': failed to load" "$log"

verdict=$("$py" - "$base" "$work/references.json" "$prompts" <<'PY'
import json, sys, threading, urllib.request, urllib.error
base, refs, prompts = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3])
models = ["stories260K", "qwen3", "gemma2"]
results, problems = {}, []

def call(i):
    name, prompt, stream = models[i % 3], prompts[(i // 3) % len(prompts)], i % 2 == 0
    body = {"model": name, "prompt": prompt, "max_tokens": 24, "temperature": 0,
            "ignore_eos": True, "stream": stream}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            if stream:
                text = ""
                for line in r:
                    line = line.decode().strip()
                    if line.startswith("data: ") and line != "data: [DONE]":
                        chunk = json.loads(line[6:])
                        assert chunk["model"] == name, chunk["model"]
                        text += "".join(c.get("text", "") for c in chunk["choices"])
            else:
                answer = json.load(r)
                assert answer["model"] == name, answer["model"]
                text = answer["choices"][0]["text"]
        results[i] = (name, prompt, stream, text)
    except Exception as e:
        problems.append(f"request {i} ({name}): {e}")

threads = [threading.Thread(target=call, args=(i,)) for i in range(64)]
for t in threads: t.start()
for t in threads: t.join()
for i, (name, prompt, stream, text) in sorted(results.items()):
    want = refs[f"{name}|{prompt}"]
    if text != want:
        problems.append(f"request {i} ({name}, {'stream' if stream else 'plain'}, {prompt!r}): "
                        f"{text!r} != alone {want!r}")
print("ok" if len(results) == 64 and not problems else "; ".join(problems[:5]) or "missing answers")
PY
)
check "64 concurrent requests over three models equal each model alone ($verdict)" test "$verdict" = ok

models=$(curl -s "$base/v1/models")
state_of() {
  python3 -c "import json,sys; d={m['id']: m for m in json.loads(sys.argv[1])['data']}; print(d.get(sys.argv[2], {}).get('state'))" "$models" "$1"
}
for name in stories260K qwen3 gemma2; do
  check "/v1/models: $name is loaded" test "$(state_of "$name")" = loaded
done
check "/v1/models: the broken model is failed" test "$(state_of broken)" = failed
check "/v1/models: ... with why" python3 -c "import json,sys; d={m['id']: m for m in json.loads(sys.argv[1])['data']}; sys.exit('NoSuchForCausalLM' not in d['broken']['error'])" "$models"
status=$(curl -s -o "$work/broken.json" -w '%{http_code}' "$base/v1/completions" \
  -H 'Content-Type: application/json' -d '{"model":"broken","prompt":"hi","max_tokens":2}')
check "a request for the broken model is a 503 naming it ($status)" test "$status" = 503
check "... with the code model_not_loaded" grep -q model_not_loaded "$work/broken.json"
status=$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/completions" \
  -H 'Content-Type: application/json' -d '{"model":"nope","prompt":"hi","max_tokens":2}')
check "an unknown model is a 404 ($status)" test "$status" = 404

# /tokenize and /detokenize read the model the body names: the Llama-2 vocabulary's ids come
# back as the text under gemma2, and lie outside stories260K's 512 tokens (a 400 there).
ids=$(curl -s "$base/tokenize" -H 'Content-Type: application/json' \
  -d '{"model":"gemma2","prompt":"Once upon a time","add_special_tokens":false}' |
  python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["tokens"]))')
text=$(curl -s "$base/detokenize" -H 'Content-Type: application/json' \
  -d "{\"model\":\"gemma2\",\"tokens\":$ids}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["prompt"])')
check "/detokenize with gemma2's tokenizer gives the text back ($ids -> '$text')" \
  test "$text" = "Once upon a time"
status=$(curl -s -o /dev/null -w '%{http_code}' "$base/detokenize" -H 'Content-Type: application/json' \
  -d "{\"model\":\"stories260K\",\"tokens\":$ids}")
check "... and stories260K's refuses its ids ($status)" test "$status" = 400

metrics=$(curl -s "$base/metrics")
for name in stories260K qwen3 gemma2; do
  check "/metrics: $name's generated tokens under its model_name" \
    grep -q "actorllm:generation_tokens_total{model_name=\"$name\"" <<<"$metrics"
done
check "/metrics: one TYPE line per family" test "$(grep -c '^# TYPE actorllm:generation_tokens_total ' <<<"$metrics")" = 1
check "/v1/engine/stats: one entry per model" python3 -c "import json,sys; s=json.loads(sys.argv[1]); sys.exit([m['name'] for m in s['models']] != ['stories260K','qwen3','broken','gemma2'])" "$(curl -s "$base/v1/engine/stats")"

if ((failures)); then
  for f in "$work"/*.log; do echo "--- $f"; tail -8 "$f"; done
  exit 1
fi

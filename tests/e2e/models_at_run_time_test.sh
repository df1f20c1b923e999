#!/usr/bin/env bash
# End to end: models loaded, evicted and unloaded while a server of several models runs.
# With --max-loaded-models 2 over three models (stories260K, a random Qwen3, a random Gemma 2
# on a 32,000-token vocabulary) a rotating workload loads each on demand, evicting the least
# recently used, and every answer is exactly what a server of that model alone gives, also
# under concurrent load. Through the admin API (and `actorllm admin models`) a slow model is
# loaded, then unloaded while streams run on it: each stream finishes whole, requests that
# arrive meanwhile get a 503 with Retry-After, and the server's memory (RSS) returns to within
# 5 % of what it was before the load. With --keep-alive a model idle that long unloads and loads
# again on the next request.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl python3
require_command serve
py=/usr/bin/python3  # Debian's, with python3-numpy
export ACTORLLM_SHARED_DIR

stories="$ACTORLLM_SHARED_DIR/models/stories260K"
"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" --arch qwen3 --out "$work/qwen3" >/dev/null
"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" --arch gemma2 --vocab 32000 \
  --out "$work/gemma2" >/dev/null
slow_random_model "$work/slow"

flags=(--host 127.0.0.1 --device cpu --swap-space 0 --max-model-len 128 --disable-log-stats)
prompts='["Once upon a time", "The cat sat on", "A big red"]'

# serve <log> <args...>: starts a server on a free port (its args after the common flags, so
# that they win) and waits for /health; its URL in $url and its process id in $server_pid.
serve() {
  local log=$1; shift
  local port
  port=$(free_port)
  "$ACTORLLM_BIN" serve "${flags[@]}" --port "$port" "$@" >"$log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 600); do curl -sf "$url/health" >/dev/null 2>&1 && break; sleep 0.1; done
}

# The references: each model served alone, greedy.
declare -A alone
for model in stories260K:"$stories" qwen3:"$work/qwen3" gemma2:"$work/gemma2" slow:"$work/slow"; do
  name=${model%%:*}
  serve "$work/$name.alone.log" "${model#*:}" --served-model-name "$name" \
    $([ "$name" = slow ] && echo --max-model-len 512)
  alone[$name]=$url
done
"$py" - "$work/references.json" "$prompts" "${alone[stories260K]}" "${alone[qwen3]}" \
  "${alone[gemma2]}" "${alone[slow]}" <<'PY'
import json, sys, urllib.request
out, prompts, urls = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
refs = {}
for name, url in zip(["stories260K", "qwen3", "gemma2", "slow"], urls):
    for prompt in prompts:
        tokens = 300 if name == "slow" else 16
        body = {"model": name, "prompt": prompt, "max_tokens": tokens, "temperature": 0,
                "ignore_eos": True}
        req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        refs[f"{name}|{prompt}"] = json.load(urllib.request.urlopen(req))["choices"][0]["text"]
json.dump(refs, open(out, "w"))
PY
for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
pids=()

log="$work/server.log"
serve "$log" "$stories" --model qwen3="$work/qwen3" --model gemma2="$work/gemma2" \
  --max-loaded-models 2 --models-kv-budget $((64 << 20)) --admin-api-key adm
base=$url
loaded_count() {
  curl -s "$base/v1/models" | python3 -c "import json,sys; print(sum(m.get('state') == 'loaded' for m in json.load(sys.stdin)['data']))"
}
state_of() {
  curl -s "$base/v1/models" | python3 -c "import json,sys; print({m['id']: m.get('state') for m in json.load(sys.stdin)['data']}.get(sys.argv[1]))" "$1"
}
check "two of three models load at startup" test "$(loaded_count)" = 2
check "the third waits for demand" test "$(state_of gemma2)" = unloaded

# Rotating: each request names the model used longest ago, so each one loads on demand and
# evicts the least recently used.
verdict=$("$py" - "$base" "$work/references.json" "$prompts" <<'PY'
import json, sys, urllib.request
base, refs, prompts = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3])
problems = []
for i in range(9):
    name, prompt = ["gemma2", "stories260K", "qwen3"][i % 3], prompts[i % 3]
    body = {"model": name, "prompt": prompt, "max_tokens": 16, "temperature": 0, "ignore_eos": True}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    text = json.load(urllib.request.urlopen(req, timeout=120))["choices"][0]["text"]
    if text != refs[f"{name}|{prompt}"]:
        problems.append(f"{name}: {text!r} != {refs[f'{name}|{prompt}']!r}")
    models = json.load(urllib.request.urlopen(base + "/v1/models"))["data"]
    if sum(m.get("state") == "loaded" for m in models) > 2:
        problems.append(f"after request {i}: more than 2 models loaded")
print("ok" if not problems else "; ".join(problems[:3]))
PY
)
check "a rotating workload loads each model on demand with exact answers ($verdict)" test "$verdict" = ok
check "each load evicted the least recently used model" \
  test "$(grep -c "unloaded (least recently used; room for" "$log")" -ge 8

# Concurrent: 24 requests over the three models, streaming and not; a load waits until a model
# is idle, and every answer is exact.
verdict=$("$py" - "$base" "$work/references.json" "$prompts" <<'PY'
import json, sys, threading, urllib.request
base, refs, prompts = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3])
models, problems, done = ["stories260K", "qwen3", "gemma2"], [], []
def call(i):
    name, prompt, stream = models[i % 3], prompts[(i // 3) % 3], i % 2 == 0
    body = {"model": name, "prompt": prompt, "max_tokens": 16, "temperature": 0,
            "ignore_eos": True, "stream": stream}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=200) as r:
            if stream:
                text = "".join(c.get("text", "") for line in r
                               if line.startswith(b"data: ") and line.strip() != b"data: [DONE]"
                               for c in json.loads(line[6:])["choices"])
            else:
                text = json.load(r)["choices"][0]["text"]
        if text != refs[f"{name}|{prompt}"]:
            problems.append(f"{i} {name}: {text!r}")
        done.append(i)
    except Exception as e:
        problems.append(f"{i} {name}: {e}")
threads = [threading.Thread(target=call, args=(i,)) for i in range(24)]
for t in threads: t.start()
for t in threads: t.join()
print("ok" if len(done) == 24 and not problems else "; ".join(problems[:3]))
PY
)
check "24 concurrent requests over three models with two loaded are all exact ($verdict)" \
  test "$verdict" = ok

# The admin API: a slow model loaded at run time, then unloaded under load.
rss() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status"; }
admin=(env ACTORLLM_ADMIN_API_KEY=adm "$ACTORLLM_BIN" admin --url "$base")
sleep 1
rss_before=$(rss)
check "actorllm admin models load adds a model folder" \
  "${admin[@]}" models load slow --path "$work/slow" --flags '{"max_model_len": 512}'
for _ in $(seq 1 300); do [ "$(state_of slow)" = loaded ] && break; sleep 0.1; done
check "the added model loads" test "$(state_of slow)" = loaded
check "actorllm admin models list shows it with its memory" \
  bash -c "\"\$@\" models list | grep -E '^slow +loaded'" _ "${admin[@]}"

verdict=$("$py" - "$base" "$work/references.json" "$prompts" <<'PY'
import json, sys, threading, time, urllib.request, urllib.error
base, refs, prompts = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3])
problems, finished, refused = [], [], []
def stream(i):
    prompt = prompts[i % 3]
    body = {"model": "slow", "prompt": prompt, "max_tokens": 300, "temperature": 0,
            "ignore_eos": True, "stream": True}
    req = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    text, reason = "", None
    with urllib.request.urlopen(req, timeout=200) as r:
        for line in r:
            if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                for c in json.loads(line[6:])["choices"]:
                    text += c.get("text", "")
                    reason = c.get("finish_reason") or reason
    if reason != "length" or text != refs[f"slow|{prompt}"]:
        problems.append(f"stream {i}: {reason} {text[:40]!r}")
    finished.append(i)
threads = [threading.Thread(target=stream, args=(i,)) for i in range(6)]
for t in threads: t.start()
time.sleep(0.3)  # the streams are running
req = urllib.request.Request(base + "/admin/models/slow", method="DELETE",
                             headers={"Authorization": "Bearer adm"})
with urllib.request.urlopen(req) as r:
    if r.status != 202: problems.append(f"DELETE answered {r.status}")
body = {"model": "slow", "prompt": "late", "max_tokens": 4}
late = urllib.request.Request(base + "/v1/completions", data=json.dumps(body).encode(),
                              headers={"Content-Type": "application/json"})
try:
    urllib.request.urlopen(late)
    problems.append("a request during the drain was served")
except urllib.error.HTTPError as e:
    if e.code != 503 or e.headers.get("Retry-After") is None:
        problems.append(f"a request during the drain got {e.code} {e.headers.get('Retry-After')}")
    refused.append(json.load(e)["error"]["message"])
for t in threads: t.join()
if len(finished) != 6: problems.append(f"{len(finished)} of 6 streams finished")
print("ok" if not problems else "; ".join(problems[:3]))
PY
)
check "an unload under load finishes every stream and refuses new requests with 503 ($verdict)" \
  test "$verdict" = ok
for _ in $(seq 1 300); do [ "$(state_of slow)" = unloaded ] && break; sleep 0.1; done
check "the drained model is unloaded" test "$(state_of slow)" = unloaded
check "the log says what the unload freed" grep -q "model 'slow': unloaded (unloaded through the admin API)" "$log"
sleep 1
rss_after=$(rss)
check "RSS after the unload ($rss_after kB) is within 5 % of before the load ($rss_before kB)" \
  python3 -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(abs(a - b) > 0.05 * b)" \
  "$rss_after" "$rss_before"
status=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H 'Authorization: Bearer adm' \
  "$base/admin/models/nobody")
check "unloading an unknown model is a 404 ($status)" test "$status" = 404
check "the server is healthy throughout" curl -sf "$base/health" -o /dev/null

# --keep-alive: a model idle that long unloads, and the next request for it loads it again.
keep_log="$work/keep_alive.log"
serve "$keep_log" "$stories" --model qwen3="$work/qwen3" --keep-alive 1
base=$url
complete_qwen3() {
  curl -s "$base/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model": "qwen3", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0, "ignore_eos": true}' |
    python3 -c "import json,sys; print(json.load(sys.stdin)['choices'][0]['text'])"
}
want=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['qwen3|Once upon a time'])" \
  "$work/references.json")
check "a model loaded at startup answers exactly" test "$(complete_qwen3)" = "$want"
for _ in $(seq 1 50); do [ "$(state_of qwen3)" = unloaded ] && break; sleep 0.1; done
check "it unloads after --keep-alive 1 idle" test "$(state_of qwen3)" = unloaded
check "the log gives --keep-alive as the reason" \
  grep -q "model 'qwen3': unloaded (idle for 1.0 s (--keep-alive))" "$keep_log"
check "the next request loads it again and is exact" test "$(complete_qwen3)" = "$want"

if ((failures)); then
  for f in "$work"/*.log; do echo "--- $f"; tail -8 "$f"; done
  exit 1
fi

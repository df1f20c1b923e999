#!/usr/bin/env bash
# End to end: prompt logprobs over HTTP on stories260K. lm-evaluation-harness's loglikelihood
# request (its local-completions model: token-id prompts, echo, logprobs 1, max_tokens 1, and
# max_tokens 0 as older versions send) answered in OpenAI's legacy shape, each prompt token's
# logprob equal to the float64 reference (tests/reference/reference_forward.py
# --prompt-logprobs) to 1e-4, the same again when the prompt is in the prefix cache; vLLM's
# prompt_logprobs on chat; and the harness's own scoring (sum and is_greedy) read from it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve

model="$ACTORLLM_SHARED_DIR/models/stories260K"
template="$ACTORLLM_SHARED_DIR/chat-templates/mistralai-Mistral-Nemo-Instruct-2407.jinja"
prompts=("1,403,407,261,378,11,42,99,7,300,301,302,8,9" "1,261,378,403,407,11,9,17,33")
for i in 0 1; do
  /usr/bin/python3 "$ACTORLLM_SOURCE_DIR/tests/reference/reference_forward.py" "$model" \
    --prompt "${prompts[$i]}" --prompt-logprobs 1 --out "$work/reference$i.json"
done

port=$(free_port)
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
  --chat-template "$template" --max-num-batched-tokens 5 >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done

check_scoring() {  # check_scoring <max_tokens>: the harness's request, then its parse
  /usr/bin/python3 - "http://127.0.0.1:$port" "$work" "$1" <<'PY'
import json, sys, urllib.request
base, work, max_tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
refs = [json.load(open(f"{work}/reference{i}.json")) for i in (0, 1)]
body = {"model": "stories260K", "prompt": [r["prompt"] for r in refs], "temperature": 0,
        "max_tokens": max_tokens, "logprobs": 1, "seed": 1234, "echo": True}
req = urllib.request.Request(base + "/v1/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
answer = json.load(urllib.request.urlopen(req))
assert answer["object"] == "text_completion", answer
choices = sorted(answer["choices"], key=lambda c: c["index"])
assert len(choices) == 2, choices
for ref, choice in zip(refs, choices):
    lp = choice["logprobs"]
    n = len(ref["prompt"])
    assert len(lp["tokens"]) == n + (1 if max_tokens else 0), (len(lp["tokens"]), n)
    for key in ("token_logprobs", "top_logprobs", "text_offset"):
        assert len(lp[key]) == len(lp["tokens"]), key
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    for i in range(1, n):
        want = ref["prompt_logprobs"][i]
        got = lp["token_logprobs"][i]
        assert abs(got - want["logprob"]) < 1e-4, (i, got, want["logprob"])
        top = lp["top_logprobs"][i]
        assert lp["tokens"][i] in top and abs(top[lp["tokens"][i]] - got) < 1e-6, (i, top)
        assert abs(max(top.values()) - want["top"][0][1]) < 1e-4, (i, top, want["top"])
    assert lp["text_offset"] == sorted(lp["text_offset"]) and lp["text_offset"][0] == 0
    assert choice["text"] == "".join(lp["tokens"][1:]), (choice["text"], lp["tokens"])
    # lm-evaluation-harness's parse_logprobs: the continuation is the prompt's last tokens.
    ctxlen = n // 2
    cont = lp["token_logprobs"][ctxlen:n]
    total = sum(cont)
    want_total = sum(ref["prompt_logprobs"][i]["logprob"] for i in range(ctxlen, n))
    assert abs(total - want_total) < 1e-3, (total, want_total)
    is_greedy = all(tok >= max(top.values()) - 1e-6
                    for tok, top in zip(cont, lp["top_logprobs"][ctxlen:n]))
    want_greedy = all(ref["prompt_logprobs"][i]["rank"] == 1 for i in range(ctxlen, n))
    assert is_greedy == want_greedy, (is_greedy, want_greedy)
if max_tokens == 0:
    assert answer["usage"]["completion_tokens"] == 0, answer["usage"]
PY
}
check "the harness's request (max_tokens 1) scores every prompt token as the reference" check_scoring 1
check "the same again with the prompts in the prefix cache" check_scoring 1
check "max_tokens 0 returns the prompt alone, scored" check_scoring 0

chat_prompt_logprobs() {
  /usr/bin/python3 - "http://127.0.0.1:$port" <<'PY'
import json, sys, urllib.request
body = {"messages": [{"role": "user", "content": "Once upon a time"}], "max_tokens": 3,
        "prompt_logprobs": 2}
req = urllib.request.Request(sys.argv[1] + "/v1/chat/completions", json.dumps(body).encode(),
                             {"Content-Type": "application/json"})
answer = json.load(urllib.request.urlopen(req))
plp = answer["prompt_logprobs"]
assert plp[0] is None and len(plp) == answer["usage"]["prompt_tokens"], plp
for entry in plp[1:]:
    assert 2 <= len(entry) <= 3, entry  # the top 2 and the prompt's token
    for token_id, v in entry.items():
        assert int(token_id) >= 0 and v["logprob"] <= 0 and v["rank"] >= 1 and "decoded_token" in v
PY
}
check "vLLM's prompt_logprobs on chat: a list over the prompt, null first" chat_prompt_logprobs

status=$(curl -s -o "$work/err.json" -w '%{http_code}' "http://127.0.0.1:$port/v1/completions" \
  -H 'Content-Type: application/json' -d '{"prompt":"x","max_tokens":0}')
check "max_tokens 0 without echo is a 400 naming max_tokens" \
  sh -c "test $status -eq 400 && grep -q '\"param\":\"max_tokens\"' '$work/err.json'"
((failures)) && { tail -n 20 "$work/serve.log"; exit 1; }
echo "all prompt logprobs checks passed"

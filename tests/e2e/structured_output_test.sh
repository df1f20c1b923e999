#!/usr/bin/env bash
# End to end: structured output from `actorllm serve` on a random-weight model (its free output
# is noise over the Llama-2 vocabulary). For schemas with nested objects, arrays, enums,
# recursion and formats, every response parses and validates against its schema by an
# independent validator (Debian's python3-jsonschema); regex and choice outputs match; and the
# same holds for 32 concurrent requests mixing constrained and free ones in a KV pool small
# enough to preempt, with n = 3, streaming and not, on /v1/completions and /v1/chat/completions.
# Bad schemas are 400s naming the field, and the constrained-request metric counts.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl
require_command serve
py=/usr/bin/python3  # Debian's, with python3-numpy and python3-jsonschema
"$py" -c 'import jsonschema, numpy' || { echo "FAIL: python3-jsonschema and python3-numpy are needed (./scripts/setup.sh)"; exit 1; }

model="$work/model"
small_random_model "$model"
port=$(free_port)
# 48 blocks of 16 tokens for 32 clients of up to ~300 tokens each: preemption is certain.
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
  --max-model-len 512 --block-size 16 --num-gpu-blocks-override 48 --max-num-batched-tokens 64 \
  --chat-template "$ACTORLLM_SHARED_DIR/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja" \
  >"$work/serve.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
check "the server is up" curl -sf "http://127.0.0.1:$port/health" -o /dev/null

status=0
"$py" - "http://127.0.0.1:$port" <<'PY' || status=$?
import concurrent.futures, json, re, sys, urllib.error, urllib.request
import jsonschema

base = sys.argv[1]
failures = []

def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            raw = r.read().decode()
            return r.status, raw
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()

def texts(status, raw, stream, chat):
    """The choices' texts and finish reasons of a response, streamed or not."""
    if status != 200:
        raise AssertionError(f"status {status}: {raw[:300]}")
    out = {}
    if not stream:
        for c in json.loads(raw)["choices"]:
            out[c["index"]] = [c["message"]["content"] if chat else c["text"], c["finish_reason"]]
        return out
    for line in raw.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for c in json.loads(line[6:]).get("choices", []):
            entry = out.setdefault(c["index"], ["", None])
            entry[0] += (c.get("delta", {}).get("content") or "") if chat else c.get("text", "")
            if c.get("finish_reason"):
                entry[1] = c["finish_reason"]
    return out

short = {"type": "string", "maxLength": 8}
schemas = {
    "person": {"type": "object", "properties": {
        "name": short, "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "role": {"enum": ["admin", "user", "guest"]}, "active": {"type": "boolean"}},
        "required": ["name", "age", "role", "active"], "additionalProperties": False},
    "nested": {"type": "object", "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 99},
        "address": {"type": "object", "properties": {
            "city": short, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["city", "zip"], "additionalProperties": False},
        "tags": {"type": "array", "items": {"enum": ["x", "y", "z"]}, "minItems": 1, "maxItems": 3}},
        "required": ["id", "address", "tags"], "additionalProperties": False},
    "formats": {"type": "object", "properties": {
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "ip": {"type": "string", "format": "ipv4"},
        "uid": {"type": "string", "format": "uuid"}},
        "required": ["day", "at", "ip", "uid"], "additionalProperties": False},
    "tree": {"$defs": {"node": {"type": "object", "properties": {
        "v": {"enum": [1, 2, 3]},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["v"], "additionalProperties": False}},
        "$ref": "#/$defs/node"},
    "tuple": {"type": "array", "prefixItems": [{"type": "integer", "minimum": -5, "maximum": 5},
                                               {"enum": ["on", "off"]}, {"type": "null"}],
              "items": False},
    "either": {"anyOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "n": {"type": "integer", "minimum": 0, "maximum": 9}},
                          "required": ["kind", "n"], "additionalProperties": False},
                         {"type": "object", "properties": {"kind": {"const": "b"}, "ok": {"type": "boolean"}},
                          "required": ["kind", "ok"], "additionalProperties": False}]},
}
regex = r"(cat|dog)-[0-9]{2,4}"
rfc3339 = (r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)"
           r"(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)")
choices = ["yes", "no", "maybe later"]

def validate(kind, name, text):
    if kind == "schema":
        value = json.loads(text)
        jsonschema.validate(value, schemas[name],
                            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
        if name == "formats":  # date-time, which this jsonschema checks only with an extra package
            assert re.fullmatch(rfc3339, value["at"]), f"{value['at']!r} is not an RFC 3339 date-time"
    elif kind == "regex":
        assert re.fullmatch(regex, text), f"{text!r} does not match {regex}"
    elif kind == "choice":
        assert text in choices, f"{text!r} is not a choice"

def request(i):
    """The i-th request of the mix: its body, endpoint and what to check."""
    chat = i % 3 == 1
    stream = i % 2 == 1
    shape = i % 8
    body = {"max_tokens": 400, "temperature": 1.0, "seed": 1000 + i, "stream": stream}
    if chat:
        body["messages"] = [{"role": "user", "content": f"Request {i}: answer."}]
    else:
        body["prompt"] = f"Request {i}:"
    kind, name = "free", None
    names = sorted(schemas)
    if shape in (0, 1, 2, 3):
        kind, name = "schema", names[(i // 8 + shape) % len(names)]
        field = ["response_format", "structured_outputs", "guided_json", "response_format"][shape]
        if field == "response_format":
            body[field] = {"type": "json_schema",
                           "json_schema": {"name": name, "schema": schemas[name], "strict": shape == 3}}
        elif field == "structured_outputs":
            body[field] = {"json": schemas[name]}
        else:
            body[field] = schemas[name]
    elif shape == 4:
        kind = "regex"
        body["structured_outputs"] = {"regex": regex}
    elif shape == 5:
        kind = "choice"
        body["guided_choice"] = choices
    elif shape == 6:
        kind, name = "schema", "person"
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "p", "schema": schemas["person"]}}
        body["n"] = 3
    else:
        body["max_tokens"] = 40  # free text: noise, checked only for its length
    return ("/v1/chat/completions" if chat else "/v1/completions"), body, kind, name, stream, chat

def run(i):
    path, body, kind, name, stream, chat = request(i)
    status, raw = post(path, body)
    out = texts(status, raw, stream, chat)
    want = body.get("n", 1)
    assert len(out) == want, f"{len(out)} choices, {want} asked"
    for index, (text, finish) in out.items():
        if kind == "free":
            continue
        assert finish == "stop", f"choice {index} ended with {finish}: {text[:200]!r}"
        validate(kind, name, text)
    return kind, name

def run_all(ids, workers):
    done = {}
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        futures = {pool.submit(run, i): i for i in ids}
        for f in concurrent.futures.as_completed(futures):
            i = futures[f]
            try:
                done[i] = f.result()
            except Exception as e:  # noqa: BLE001 - every failure is reported, with its request
                failures.append(f"request {i} {request(i)[2:4]}: {e}")
    return done

# Every schema, alone and in order, then 64 requests 32 at a time.
for i, name in enumerate(sorted(schemas)):
    body = {"prompt": "x", "max_tokens": 400, "temperature": 1.0, "seed": i,
            "guided_json": schemas[name]}
    try:
        status, raw = post("/v1/completions", body)
        text, finish = texts(status, raw, False, False)[0]
        assert finish == "stop", f"ended with {finish}: {text[:200]!r}"
        validate("schema", name, text)
    except Exception as e:  # noqa: BLE001
        failures.append(f"schema {name} alone: {e}")
done = run_all(range(64), 32)
kinds = sorted({k for k, _ in done.values()})
print(f"{len(done)} of 64 concurrent requests valid; kinds {kinds}")

# Bad constraints are 400s naming the field; the server stays up.
for body, field in [
    ({"prompt": "x", "guided_json": {"type": "object", "properties": {"a": {"type": "nope"}}}}, "guided_json"),
    ({"prompt": "x", "structured_outputs": {"regex": "(a"}}, "structured_outputs"),
    ({"prompt": "x", "guided_grammar": "root ::= undefined_rule"}, "guided_grammar"),
    ({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "string", "minLength": "x"}}}}, "response_format"),
]:
    status, raw = post("/v1/completions", body)
    err = json.loads(raw).get("error", {}) if raw.startswith("{") else {}
    if status != 400 or err.get("param") != field:
        failures.append(f"bad constraint {body} -> {status} {raw[:200]}")

for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)
PY
check "every constrained response validates, alone and 32 at a time" test "$status" -eq 0

metrics=$(curl -sf "http://127.0.0.1:$port/metrics")
constrained=$(echo "$metrics" | awk '/^actorllm:structured_output_requests_total/ {s += $2} END {print s + 0}')
preemptions=$(echo "$metrics" | awk '/^actorllm:num_preemptions_total/ {s += $2} END {print s + 0}')
check "structured_output_requests_total counts the constrained requests ($constrained)" \
  test "${constrained%.*}" -ge 40
check "the pool was small enough to preempt ($preemptions preemptions)" test "${preemptions%.*}" -gt 0
check "the server is still up" curl -sf "http://127.0.0.1:$port/health" -o /dev/null
[[ $failures -eq 0 ]] || { tail -n 30 "$work/serve.log"; exit 1; }
echo "all structured output checks passed"

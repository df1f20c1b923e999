#!/usr/bin/env bash
# End to end: serve_bench against a tiny fake OpenAI server (streaming, chunked, with usage),
# then against `actorllm serve` on stories260K. Every request must complete with exactly the
# requested number of tokens (checked in the result JSON); a server that sends one token too
# few must be reported as failures.
set -euo pipefail
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"

bench="$(dirname "$ACTORLLM_BIN")/bench/serve_bench"
[[ -x "$bench" ]] || { echo "FAIL: $bench is not built"; exit 1; }
model="$ACTORLLM_SHARED_DIR/models/stories260K"
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_healthy() {  # wait_healthy <base url> <pid> <log>
  for _ in $(seq 1 600); do
    curl -sf "$1/health" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { echo "FAIL: server exited during startup"; cat "$3"; exit 1; }
    sleep 0.1
  done
  echo "FAIL: /health never became 200"; cat "$3"; exit 1
}
failures=0
check() {  # check <description> <command...>
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}
# expect_json <file> <completed> <failed>: counts, and every completed request has its tokens.
expect_json() {
  python3 - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
completed, failed = int(sys.argv[2]), int(sys.argv[3])
ok = j["completed"] == completed and j["failed"] == failed
for got, want, err in zip(j["output_lens"], j["expected_output_lens"], j["errors"]):
    ok &= (got == want) if not err else (got == 0 and "expected" in err)
ok &= j["total_output_tokens"] == sum(j["output_lens"]) and j["output_throughput"] > 0
ok &= j["mean_ttft_ms"] > 0 and j["p99_itl_ms"] >= j["median_itl_ms"] > 0
if not ok:
    print({k: j[k] for k in ("completed", "failed", "output_lens", "expected_output_lens", "errors")})
sys.exit(0 if ok else 1)
PY
}

# A fake OpenAI server: max_tokens chunks of "w ", 2 ms apart, chunked transfer encoding, the
# usage chunk when asked. With "short", every second request ends one token early.
cat >"$work/fake.py" <<'PY'
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port, short = int(sys.argv[1]), len(sys.argv) > 2
lock, seen = threading.Lock(), [0]
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "2"); self.end_headers()
        self.wfile.write(b"ok")
    def send_chunk(self, obj):
        data = b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data)); self.wfile.flush()
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        chat = self.path.endswith("/chat/completions")
        n = body.get("max_completion_tokens" if chat else "max_tokens", 16)
        with lock:
            seen[0] += 1
            if short and seen[0] % 2 == 0: n -= 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked"); self.end_headers()
        for i in range(n):
            time.sleep(0.002)
            choice = {"index": 0, "finish_reason": "length" if i == n - 1 else None}
            if chat: choice["delta"] = {"content": "w "}
            else: choice["text"] = "w "
            self.send_chunk({"object": "chunk", "choices": [choice], "usage": None})
        if body.get("stream_options", {}).get("include_usage"):
            self.send_chunk({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": n}})
        self.send_chunk(b"[DONE]")
        self.wfile.write(b"0\r\n\r\n")
ThreadingHTTPServer.request_queue_size = 128  # the default 5 drops SYNs under load
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
PY
start_fake() {  # start_fake [short]: sets fake_url
  local port; port=$(free_port)
  python3 "$work/fake.py" "$port" "$@" >"$work/fake.log" 2>&1 &
  pids+=($!)
  fake_url="http://127.0.0.1:$port"
  wait_healthy "$fake_url" "$!" "$work/fake.log"
}
common=(--model "$model" --dataset-name random --random-input-len 32 --random-output-len 24
        --random-range-ratio 0.5 --num-prompts 16 --ignore-eos --seed 7)

start_fake
check "fake: 16 prompts at concurrency 4 all complete with their tokens" \
  bash -c '"$0" --base-url "$1" "${@:3}" --max-concurrency 4 --result-json "$2" >"$2.log" &&
           grep -q "Successful requests: *16" "$2.log"' \
  "$bench" "$fake_url" "$work/fake.json" "${common[@]}"
check "fake: the result JSON agrees" expect_json "$work/fake.json" 16 0
check "fake: chat endpoint with Poisson arrivals and goodput" \
  bash -c '"$0" --base-url "$1" "${@:3}" --endpoint /v1/chat/completions --request-rate 100 \
             --burstiness 0.5 --goodput ttft:10000 tpot:1000 --label chat \
             --result-json "$2" >"$2.log" && grep -q "Request goodput" "$2.log"' \
  "$bench" "$fake_url" "$work/chat.json" "${common[@]}"
check "fake: chat JSON agrees" expect_json "$work/chat.json" 16 0

start_fake short
"$bench" --base-url "$fake_url" "${common[@]}" --max-concurrency 4 \
  --result-json "$work/short.json" >"$work/short.log" 2>&1 || true
check "fake short by one token every second request: 8 failures reported" \
  expect_json "$work/short.json" 8 8

if ((failures)); then echo "$failures check(s) failed"; exit 1; fi

if ! "$ACTORLLM_BIN" serve --help >/dev/null 2>&1; then
  echo "FAIL: '$ACTORLLM_BIN serve --help' did not run (fake-server checks passed)"
  exit 1
fi
port=$(free_port)
base="http://127.0.0.1:$port"
"$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" >"$work/serve.log" 2>&1 &
pids+=($!)
wait_healthy "$base" "$!" "$work/serve.log"
check "actorllm serve: 16 prompts at concurrency 4" \
  "$bench" --base-url "$base" "${common[@]}" --max-concurrency 4 --result-json "$work/serve.json"
check "actorllm serve: every request completed with the requested tokens" \
  expect_json "$work/serve.json" 16 0
# bench/served_cpu.sh: its own server, a small run, a row per thread and the totals.
check "bench/served_cpu.sh accounts the server's threads and the load generator" \
  bash -c 'PORT=$(python3 -c "import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])") \
           NUM_PROMPTS=8 CONCURRENCY=4 OUTPUT_LEN=16 "$0/bench/served_cpu.sh" "$1" >"$2" 2>&1 &&
           grep -Eq "^server, all threads +[0-9.]+ +[0-9.]+" "$2" &&
           grep -Eq "^load generator +[0-9.]+" "$2" && grep -q "^CPU used: " "$2" ||
           { cat "$2"; exit 1; }' "$ACTORLLM_SOURCE_DIR" "$model" "$work/served_cpu.txt"
# bench/tcp_floor_bench: a short run that reads back every payload and reports its CPU per token.
check "tcp_floor_bench streams every payload and reports the kernel's CPU per token" \
  bash -c '"$0" --streams 4 --rounds 50 --step-us 200 >"$1" &&
           python3 -c "import json, sys; r = json.loads(open(sys.argv[1]).readline())[0]; \
sys.exit(not (r[\"kernel_us_per_token\"] > 0 and r[\"reads_per_token\"] > 0))" "$1" ||
           { cat "$1"; exit 1; }' "$(dirname "$ACTORLLM_BIN")/bench/tcp_floor_bench" "$work/tcp_floor.txt"
if ((failures)); then
  echo "$failures check(s) failed; server log:"
  tail -n 50 "$work/serve.log"
  exit 1
fi
echo "all serve_bench checks passed"

"""What the Python benchmarks share: a free port, waiting for a server's /health, and one
streaming /v1/completions call timed to its first token. Standard library only."""
import http.client
import json
import socket
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, seconds=60):
    """True once GET /health answers 200 within `seconds`."""
    for _ in range(int(seconds * 10)):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def stream_completion(port, body):
    """Streams /v1/completions with `body` (stream and usage added): (seconds to the first
    chunk, completion tokens from the usage, seconds in all). Raises on an HTTP error."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    start = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
    first, tokens = None, 0
    for line in r:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if first is None and chunk["choices"]:
            first = time.perf_counter() - start
        if chunk.get("usage"):  # the last chunk: a chunk may carry several tokens
            tokens = chunk["usage"]["completion_tokens"]
    return first, tokens, time.perf_counter() - start

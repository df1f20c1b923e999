"""What the Python benchmarks share: a free port, waiting for a server's /health, one
streaming /v1/completions call timed to its first token, a metric's sum in /metrics, and the
random Llama whose 1,000-token prefill costs what a prefix-cache hit saves. Standard library
only (the model is written by scripts/make_random_model.py, which needs numpy)."""
import http.client
import json
import os
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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


def _stream(port, path, body, has_text):
    """Streams `path` with `body` (stream and usage added): (seconds to the first chunk that
    `has_text` says carries output, completion tokens from the usage, seconds in all). Raises on
    an HTTP error."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    start = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {r.read()[:200]!r}")
    first, tokens = None, 0
    for line in r:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        if first is None and chunk["choices"] and has_text(chunk["choices"][0]):
            first = time.perf_counter() - start
        if chunk.get("usage"):  # the last chunk: a chunk may carry several tokens
            tokens = chunk["usage"]["completion_tokens"]
    return first, tokens, time.perf_counter() - start


def stream_completion(port, body):
    """Streams /v1/completions with `body`: (seconds to the first chunk, completion tokens,
    seconds in all)."""
    return _stream(port, "/v1/completions", body, lambda choice: True)


def stream_chat(port, body):
    """Streams /v1/chat/completions with `body`: (seconds to the first content, completion
    tokens, seconds in all)."""
    return _stream(port, "/v1/chat/completions", body,
                   lambda choice: bool(choice["delta"].get("content")))


def metrics_text(port):
    """The server's /metrics page."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    return c.getresponse().read().decode()


def metric_sum(text, name, label=None):
    """The sum of every series of metric `name` in a /metrics text (those with `label` in
    their labels, if given)."""
    total = 0.0
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and \
                (label is None or label in line):
            total += float(line.rsplit(" ", 1)[1])
    return total


def make_prefill_model(folder):
    """A random Llama (dim 256, 4 layers, the stories260K tokenizer, 4,096 positions) in
    `folder`."""
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_random_model.py"),
                    "--dim", "256", "--layers", "4", "--heads", "4", "--kv-heads", "4",
                    "--hidden", "688", "--vocab", "512", "--max-pos", "4096", "--out", folder],
                   check=True, stdout=subprocess.DEVNULL)


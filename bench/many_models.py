#!/usr/bin/env python3
"""Many models behind one server (issue 41), in one run on the same cores:

  1. Time to first token of a cold model (not loaded: its load is part of the wait) against a
     warm one (loaded), with --max-loaded-models 1 so that every switch of model is cold.
  2. Output throughput of three models under one `actorllm serve` against three single-model
     servers, one per model, all at once: the same requests, the same clients.

  python3 bench/many_models.py [--bin build/actorllm] [--rounds 5] [--clients 8] [--requests 48]

The models: stories260K (../shared, or ACTORLLM_SHARED_DIR), a random Qwen3 on its vocabulary
and a random Gemma 2 on a 32,000-token vocabulary (scripts/make_random_model.py). Every request
streams MAX_TOKENS tokens (ignore_eos). Writes RESULTS/many_models.json (bench/results) and
prints the tables. Python 3 standard library only.
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from stream_client import free_port, stream_completion, wait_healthy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = ["--host", "127.0.0.1", "--device", "cpu", "--swap-space", "0", "--max-model-len", "128",
         "--disable-log-stats"]


class Server:
    def __init__(self, binary, args, log):
        self.port = free_port()
        self.proc = subprocess.Popen([binary, "serve", *FLAGS, "--port", str(self.port), *args],
                                     stdout=log, stderr=subprocess.STDOUT)
        if not wait_healthy(self.port):
            raise RuntimeError(f"server {args} did not come up")

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def stream(port, model, max_tokens):
    """One streaming completion: (seconds to the first token, tokens, seconds in all)."""
    return stream_completion(port, {"model": model, "prompt": "Once upon a time",
                                    "max_tokens": max_tokens, "temperature": 0,
                                    "ignore_eos": True})


def ttft(binary, models, rounds, log):
    """Cold and warm TTFT per model with one model loaded at a time."""
    names = list(models)
    args = [models[names[0]]] + [a for n in names[1:] for a in ("--model", f"{n}={models[n]}")]
    server = Server(binary, args + ["--served-model-name", names[0], "--max-loaded-models", "1"],
                    log)
    cold, warm = {n: [] for n in names}, {n: [] for n in names}
    try:
        for _ in range(rounds):
            for n in names:  # each names a model that is not loaded: cold, then warm
                cold[n].append(stream(server.port, n, 8)[0])
                warm[n].append(stream(server.port, n, 8)[0])
    finally:
        server.stop()
    return {n: {"cold_ttft_ms": 1000 * statistics.median(cold[n]),
                "warm_ttft_ms": 1000 * statistics.median(warm[n])} for n in names}


def load(targets, clients, requests, max_tokens):
    """`requests` streams per (port, model) target from `clients` threads each, all at once:
    output tokens per second over the wall time."""
    tokens, errors = [0], []
    lock = threading.Lock()

    def client(port, model, count):
        for _ in range(count):
            try:
                _, n, _ = stream(port, model, max_tokens)
                with lock:
                    tokens[0] += n
            except Exception as e:  # counted, shown
                errors.append(str(e))
    threads = []
    for port, model in targets:
        share = [requests // clients + (i < requests % clients) for i in range(clients)]
        threads += [threading.Thread(target=client, args=(port, model, s)) for s in share]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    return {"output_tok_s": tokens[0] / wall, "tokens": tokens[0], "seconds": wall,
            "errors": len(errors), "first_error": errors[0] if errors else None}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "actorllm"))
    p.add_argument("--rounds", type=int, default=5, help="cold/warm pairs per model")
    p.add_argument("--clients", type=int, default=8, help="concurrent streams per model")
    p.add_argument("--requests", type=int, default=48, help="requests per model")
    p.add_argument("--max-tokens", type=int, default=96)
    p.add_argument("--results", default=os.environ.get("RESULTS", os.path.join(ROOT, "bench", "results")))
    a = p.parse_args()
    shared = os.environ.get("ACTORLLM_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    work = tempfile.mkdtemp()
    make = [sys.executable, os.path.join(ROOT, "scripts", "make_random_model.py")]
    subprocess.run(make + ["--arch", "qwen3", "--out", f"{work}/qwen3"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(make + ["--arch", "gemma2", "--vocab", "32000", "--out", f"{work}/gemma2"],
                   check=True, stdout=subprocess.DEVNULL)
    models = {"stories260K": os.path.join(shared, "models", "stories260K"),
              "qwen3": f"{work}/qwen3", "gemma2": f"{work}/gemma2"}
    os.makedirs(a.results, exist_ok=True)
    log = open(os.path.join(a.results, "many_models_servers.log"), "w")

    ttfts = ttft(a.bin, models, a.rounds, log)

    names = list(models)
    one = Server(a.bin, [models[names[0]], "--served-model-name", names[0]]
                 + [a for n in names[1:] for a in ("--model", f"{n}={models[n]}")], log)
    try:
        together = load([(one.port, n) for n in names], a.clients, a.requests, a.max_tokens)
    finally:
        one.stop()
    apart = [Server(a.bin, [models[n], "--served-model-name", n], log) for n in names]
    try:
        separate = load([(s.port, n) for s, n in zip(apart, names)], a.clients, a.requests,
                        a.max_tokens)
    finally:
        for s in apart:
            s.stop()

    result = {"cpu_cores": os.cpu_count(), "max_tokens": a.max_tokens, "clients_per_model": a.clients,
              "requests_per_model": a.requests, "ttft": ttfts, "one_server": together,
              "three_servers": separate,
              "one_over_three": together["output_tok_s"] / separate["output_tok_s"]}
    with open(os.path.join(a.results, "many_models.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(f"{'model':<12} {'cold TTFT ms':>13} {'warm TTFT ms':>13} {'cold/warm':>10}")
    for n, t in ttfts.items():
        print(f"{n:<12} {t['cold_ttft_ms']:>13.1f} {t['warm_ttft_ms']:>13.1f} "
              f"{t['cold_ttft_ms'] / t['warm_ttft_ms']:>10.1f}")
    print(f"\n{'setup':<32} {'output tok/s':>13} {'errors':>7}")
    print(f"{'one server, three models':<32} {together['output_tok_s']:>13.0f} {together['errors']:>7}")
    print(f"{'three servers, one model each':<32} {separate['output_tok_s']:>13.0f} {separate['errors']:>7}")
    print(f"one server / three servers: {result['one_over_three']:.2f}")
    return 1 if together["errors"] or separate["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())

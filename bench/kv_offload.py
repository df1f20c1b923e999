#!/usr/bin/env python3
"""The second KV tier on a workload whose prefixes do not fit the device pool (issue 42):

  python3 bench/kv_offload.py [--bin build/actorllm] [--prefixes 16] [--rounds 3]

The workload: PREFIXES system prompts of SYSTEM tokens each; a request is one of them plus
USER tokens of its own, and streams ANSWER tokens (ignore_eos). CONCURRENCY clients send the
requests in rotation over the prefixes, ROUNDS times, so that each prefix comes back after all
the others; the device pool holds POOL_PREFIXES of them (--num-gpu-blocks-override), so
without a second tier a prefix has always been evicted by its next turn. The model: a random
Llama (scripts/make_random_model.py, 4 layers of 256, the stories260K tokenizer) whose
1,000-token prefill costs what a hit saves.

The same workload runs against `actorllm serve` without a tier, with --kv-offload-bytes in
memory, and with the tier in a file (--kv-offload-dir, a temporary folder). Reported per run:
output tok/s over the wall time, TTFT p50 / p99 of the rounds after the first (the first
finds nothing anywhere), the device prefix-cache hit rate, the tier's hit rate (vLLM's
external_prefix_cache_hits / _queries) and the hit rate over both. Ratios are to the run
without a tier, in the same invocation. Writes RESULTS/kv_offload.json (bench/results) and
prints the table. Python 3 standard library only.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from stream_client import (ROOT, free_port, make_prefill_model, metric_sum, metrics_text,
                           stream_completion, wait_healthy)

BLOCK = 16


def start_server(binary, model, pool_blocks, tier, log):
    port = free_port()
    cmd = [binary, "serve", model, "--served-model-name", "m", "--host", "127.0.0.1",
           "--port", str(port), "--device", "cpu", "--swap-space", "0", "--max-model-len", "2048",
           "--num-gpu-blocks-override", str(pool_blocks), "--cpu-threads", "1",
           "--disable-log-stats"] + tier
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    if not wait_healthy(port):
        raise RuntimeError("the server did not come up")
    return proc, port




def run(port, a, prefixes):
    rng = random.Random(a.seed)
    order = [(r, p) for r in range(a.rounds) for p in range(a.prefixes)]
    requests = [(r, prefixes[p] + [rng.randrange(3, 500) for _ in range(a.user)])
                for r, p in order]
    lock, next_index, ttfts, tokens, errors = threading.Lock(), [0], [], [0], [0]

    def client():
        while True:
            with lock:
                if next_index[0] == len(requests):
                    return
                round_, prompt = requests[next_index[0]]
                next_index[0] += 1
            body = {"model": "m", "prompt": prompt, "max_tokens": a.answer, "temperature": 0,
                    "ignore_eos": True}
            try:
                first, n, _ = stream_completion(port, body)
            except (OSError, RuntimeError):
                with lock:
                    errors[0] += 1
                continue
            with lock:
                tokens[0] += n
                if round_ > 0:
                    ttfts.append(first * 1000)

    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(a.concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ttfts.sort()
    return {"output_tok_s": tokens[0] / wall, "wall_s": wall, "errors": errors[0],
            "ttft_p50_ms": statistics.median(ttfts),
            "ttft_p99_ms": ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "actorllm"))
    p.add_argument("--prefixes", type=int, default=16)
    p.add_argument("--pool-prefixes", type=int, default=4,
                   help="prefixes the device pool holds (its size)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--system", type=int, default=1000, help="tokens of each shared prefix")
    p.add_argument("--user", type=int, default=24, help="tokens of each request's own")
    p.add_argument("--answer", type=int, default=16)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--tier-mib", type=int, default=256)
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--results", default=os.environ.get("RESULTS", os.path.join(ROOT, "bench", "results")))
    a = p.parse_args()
    work = tempfile.mkdtemp()
    model = os.path.join(work, "model")
    make_prefill_model(model)
    rng = random.Random(a.seed)
    prefixes = [[1] + [rng.randrange(3, 500) for _ in range(a.system - 1)]
                for _ in range(a.prefixes)]
    per_request = (a.system + a.user + a.answer + BLOCK - 1) // BLOCK + 1
    pool_blocks = a.pool_prefixes * per_request
    tier_folder = os.path.join(work, "tier")
    os.makedirs(tier_folder)
    tier_bytes = str(a.tier_mib << 20)
    configs = {"no tier": [], "tier in memory": ["--kv-offload-bytes", tier_bytes],
               "tier in a file": ["--kv-offload-bytes", tier_bytes, "--kv-offload-dir", tier_folder]}
    os.makedirs(a.results, exist_ok=True)
    log = open(os.path.join(a.results, "kv_offload_servers.log"), "w")
    results = {}
    for name, tier in configs.items():
        proc, port = start_server(a.bin, model, pool_blocks, tier, log)
        try:
            out = run(port, a, prefixes)
            text = metrics_text(port)
        finally:
            proc.terminate()
            proc.wait(30)
        queries = metric_sum(text, "actorllm:prefix_cache_queries_total")
        hits = metric_sum(text, "actorllm:prefix_cache_hits_total")
        tier_queries = metric_sum(text, "actorllm:external_prefix_cache_queries_total")
        tier_hits = metric_sum(text, "actorllm:external_prefix_cache_hits_total")
        out["device_hit_rate"] = hits / queries if queries else 0.0
        out["tier_hit_rate"] = tier_hits / tier_queries if tier_queries else 0.0
        out["hit_rate"] = (hits + tier_hits) / queries if queries else 0.0
        out["tier_failed_loads"] = metric_sum(text, "actorllm:kv_offload_failed_loads_total")
        results[name] = out
        print(f"{name}: {out['output_tok_s']:.0f} tok/s, TTFT p50 {out['ttft_p50_ms']:.0f} ms, "
              f"hit rate {out['hit_rate']:.2f}, errors {out['errors']}", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    base = results["no tier"]
    ratios = {name: {"throughput": r["output_tok_s"] / base["output_tok_s"],
                     "ttft_p50": r["ttft_p50_ms"] / base["ttft_p50_ms"],
                     "ttft_p99": r["ttft_p99_ms"] / base["ttft_p99_ms"]}
              for name, r in results.items() if name != "no tier"}
    with open(os.path.join(a.results, "kv_offload.json"), "w") as f:
        json.dump({"args": vars(a), "pool_blocks": pool_blocks, "runs": results,
                   "over_no_tier": ratios}, f, indent=2)
    print(f"\n{'run':<15} {'tok/s':>7} {'TTFT p50':>9} {'TTFT p99':>9} {'device hits':>11} "
          f"{'tier hits':>9} {'all hits':>8} {'errors':>6}")
    for name, r in results.items():
        print(f"{name:<15} {r['output_tok_s']:>7.0f} {r['ttft_p50_ms']:>8.0f}ms "
              f"{r['ttft_p99_ms']:>8.0f}ms {r['device_hit_rate']:>11.2f} {r['tier_hit_rate']:>9.2f} "
              f"{r['hit_rate']:>8.2f} {r['errors']:>6}")
    for name, s in ratios.items():
        print(f"{name} / no tier: throughput {s['throughput']:.2f}x, TTFT p50 {s['ttft_p50']:.2f}x, "
              f"p99 {s['ttft_p99']:.2f}x")
    return 1 if any(r["errors"] or r["tier_failed_loads"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

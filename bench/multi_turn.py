#!/usr/bin/env python3
"""Multi-turn conversations against cache-aware and least-load routing (issue 42), in one run:

  python3 bench/multi_turn.py [--bin build/actorllm] [--replicas 2 4] [--conversations 64]

The workload: CONVERSATIONS conversations of TURNS turns; every group of GROUP conversations
shares a SYSTEM-token system prompt. A turn's prompt is the conversation so far (the system
prompt, then each earlier turn's user and answer tokens) plus USER new tokens; it streams
ANSWER tokens (ignore_eos). Conversations start at exponential offsets and each next turn
follows the last one's answer after an exponential think time (mean THINK_S): together the
turns arrive as a Poisson process. Prompts are token ids (the answer tokens the client appends
are its own, drawn like the user's), so that every prefix is exactly known and two runs send
the same requests. The model: a random Llama (scripts/make_random_model.py, the stories260K
tokenizer, 4,096 positions) whose 1,000-token prefill costs what a cache hit saves.

For each replica count, the same workload runs against `actorllm serve --replicas N` with
--routing-policy cache_aware, then least_load. Reported per run: output tokens per second over
the wall time, TTFT p50 and p99, the engine's prefix-cache hit rate (prefix_cache_hits_total /
prefix_cache_queries_total) and the router's decisions by reason. Ratios are cache_aware /
least_load from the same invocation. Writes RESULTS/multi_turn.json (bench/results) and prints
the tables. Python 3 standard library only.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from stream_client import (ROOT, free_port, make_prefill_model, metric_sum, metrics_text,
                           stream_completion, wait_healthy)



def start_server(binary, model, replicas, policy, log):
    port = free_port()
    proc = subprocess.Popen(
        [binary, "serve", model, "--served-model-name", "m", "--host", "127.0.0.1",
         "--port", str(port), "--device", "cpu", "--swap-space", "0", "--max-model-len", "2048",
         "--replicas", str(replicas), "--routing-policy", policy, "--cpu-threads", "1",
         "--disable-log-stats"], stdout=log, stderr=subprocess.STDOUT)
    if not wait_healthy(port):
        raise RuntimeError("the server did not come up")
    return proc, port




def run(port, a, seed):
    rng = random.Random(seed)
    vocab = range(3, 512)  # no BOS/EOS among the drawn tokens
    systems = [[1] + [rng.choice(vocab) for _ in range(a.system)]
               for _ in range((a.conversations + a.group - 1) // a.group)]
    plans = []  # per conversation: its offset, think times and each turn's new tokens
    for i in range(a.conversations):
        plans.append({"system": systems[i // a.group], "offset": rng.expovariate(1 / a.think_s),
                      "think": [rng.expovariate(1 / a.think_s) for _ in range(a.turns)],
                      "user": [[rng.choice(vocab) for _ in range(a.user)] for _ in range(a.turns)],
                      "answer": [[rng.choice(vocab) for _ in range(a.answer)]
                                 for _ in range(a.turns)]})
    ttfts, tokens, errors = [], [0], []
    lock = threading.Lock()

    def conversation(plan):
        time.sleep(plan["offset"])
        history = list(plan["system"])
        for t in range(a.turns):
            prompt = history + plan["user"][t]
            try:
                first, n, _ = stream_completion(port, {"model": "m", "prompt": prompt,
                                                       "max_tokens": a.answer, "temperature": 0,
                                                       "ignore_eos": True})
                with lock:
                    ttfts.append(first)
                    tokens[0] += n
            except Exception as e:  # counted, shown
                errors.append(str(e))
            history = prompt + plan["answer"][t]
            time.sleep(plan["think"][t])

    threads = [threading.Thread(target=conversation, args=(p,)) for p in plans]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ttfts.sort()
    return {"output_tok_s": tokens[0] / wall, "seconds": wall, "requests": len(ttfts),
            "ttft_p50_ms": 1000 * statistics.median(ttfts) if ttfts else None,
            "ttft_p99_ms": 1000 * ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))] if ttfts else None,
            "errors": len(errors), "first_error": errors[0] if errors else None}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "actorllm"))
    p.add_argument("--replicas", type=int, nargs="+", default=[2, 4])
    p.add_argument("--conversations", type=int, default=64)
    p.add_argument("--turns", type=int, default=6)
    p.add_argument("--group", type=int, default=8, help="conversations sharing a system prompt")
    p.add_argument("--system", type=int, default=1000, help="system prompt tokens")
    p.add_argument("--user", type=int, default=40, help="new user tokens per turn")
    p.add_argument("--answer", type=int, default=32, help="answer tokens per turn")
    p.add_argument("--think-s", type=float, default=1.0, help="mean seconds between turns")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--results", default=os.environ.get("RESULTS", os.path.join(ROOT, "bench", "results")))
    a = p.parse_args()
    work = tempfile.mkdtemp()
    model = os.path.join(work, "model")
    make_prefill_model(model)
    os.makedirs(a.results, exist_ok=True)
    log = open(os.path.join(a.results, "multi_turn_servers.log"), "w")
    results = {}
    for replicas in a.replicas:
        for policy in ("cache_aware", "least_load"):
            proc, port = start_server(a.bin, model, replicas, policy, log)
            try:
                out = run(port, a, a.seed)
                text = metrics_text(port)
            finally:
                proc.terminate()
                proc.wait(30)
            queries = metric_sum(text, "actorllm:prefix_cache_queries_total")
            out["prefix_hit_rate"] = metric_sum(text, "actorllm:prefix_cache_hits_total") / queries \
                if queries else None
            out["decisions"] = {m.group(1): float(m.group(2)) for m in re.finditer(
                r'^actorllm:router_decisions_total\{[^}]*reason="([^"]+)"[^}]*\} (\S+)', text, re.M)}
            results[f"{replicas}/{policy}"] = out
            print(f"{replicas} replicas, {policy}: {out['output_tok_s']:.0f} tok/s, TTFT p50 "
                  f"{out['ttft_p50_ms']:.0f} ms, hit rate {out['prefix_hit_rate']:.2f}, "
                  f"errors {out['errors']}", flush=True)
    summary = {}
    for replicas in a.replicas:
        ca, ll = results[f"{replicas}/cache_aware"], results[f"{replicas}/least_load"]
        summary[replicas] = {"throughput": ca["output_tok_s"] / ll["output_tok_s"],
                             "ttft_p50": ca["ttft_p50_ms"] / ll["ttft_p50_ms"],
                             "ttft_p99": ca["ttft_p99_ms"] / ll["ttft_p99_ms"]}
    with open(os.path.join(a.results, "multi_turn.json"), "w") as f:
        json.dump({"args": vars(a), "runs": results, "cache_aware_over_least_load": summary}, f,
                  indent=2)
    print(f"\n{'replicas':>8} {'policy':<12} {'tok/s':>7} {'TTFT p50':>9} {'TTFT p99':>9} "
          f"{'hit rate':>8} {'errors':>6}")
    for key, r in results.items():
        n, policy = key.split("/")
        print(f"{n:>8} {policy:<12} {r['output_tok_s']:>7.0f} {r['ttft_p50_ms']:>8.0f}ms "
              f"{r['ttft_p99_ms']:>8.0f}ms {r['prefix_hit_rate']:>8.2f} {r['errors']:>6}")
    for n, s in summary.items():
        print(f"{n} replicas, cache_aware / least_load: throughput {s['throughput']:.2f}x, "
              f"TTFT p50 {s['ttft_p50']:.2f}x, p99 {s['ttft_p99']:.2f}x")
    return 1 if any(r["errors"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

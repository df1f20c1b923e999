#!/usr/bin/env python3
"""Throughput, TTFT p99 and serving replicas over time across a burst, with autoscaling off
(--replicas 1) and on (--autoscale 1:4), each against a fresh `actorllm serve` of the same model
and the same arrival schedule. Python 3 standard library only; matplotlib when importable.

  python3 bench/autoscale.py [MODEL_DIR] [options]    (--help lists them)

Workload, open loop (arrivals never wait for completions; Poisson, the same seed both runs):
LOW_RATE req/s for WARMUP_S, BURST_RATE req/s for BURST_S, LOW_RATE again for COOL_S (long
enough for the autoscaler to drain back to one replica). Every request streams MAX_TOKENS
tokens (ignore_eos, logprobs 0 so that each chunk says how many tokens it carries, and the
usage at the end) from one of a few short prompts, on its own thread with http.client. A
request that fails, ends short or is still running DRAIN_TIMEOUT_S after the last arrival
counts as an error. A sampler reads /metrics every 0.5 s (serving, starting and draining
replicas, waiting requests) and the CPU time so far of the server (/proc) and of this process.

Binned in BIN_S windows from the first arrival: output tok/s (each token at its chunk's
arrival), TTFT p99 of the requests sent in the window, the most serving replicas, the cores
the server and the load generator used. Ratios are autoscale run / fixed run, both from this
invocation.

Writes RESULTS/autoscale.json (bench/results) and the servers' logs beside it,
FIGURES/autoscale.png with matplotlib or FIGURES/autoscale.svg without it (bench/figures), and
prints the tables; exits 1 when a request failed. `--replot` redraws the figure from the JSON
without running anything. Paths are relative to the repository root; every option's default
comes from the environment variable named in --help.
"""
import argparse
import collections
import http.client
import json
import math
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PHASES = ("warmup", "burst", "cool")
PROMPTS = [
    "Once upon a time",
    "The little dog ran to the park and",
    "Tom and Lily were playing with their toys when",
    "One day, a big red ball rolled down the hill. The children",
    "She looked at the sky and saw",
    "Mom said it was time for bed, but Ben wanted",
]


# (flag, environment variable, default, type, help); a set variable overrides the default.
OPTIONS = [
    ("--port", "PORT", 18097, int, "server port (must be free)"),
    ("--bin", "ACTORLLM_BIN", "build/actorllm", str, "the actorllm binary"),
    ("--low-rate", "LOW_RATE", 2.0, float, "req/s before and after the burst"),
    ("--burst-rate", "BURST_RATE", 45.0, float, "req/s during the burst"),
    ("--warmup-s", "WARMUP_S", 10.0, float, "seconds at the low rate before the burst"),
    ("--burst-s", "BURST_S", 20.0, float, "seconds of burst"),
    ("--cool-s", "COOL_S", 30.0, float, "seconds at the low rate after the burst"),
    ("--max-tokens", "MAX_TOKENS", 200, int, "output tokens of every request"),
    ("--max-num-seqs", "MAX_NUM_SEQS", 4, int, "serve --max-num-seqs (both runs)"),
    ("--cpu-threads", "CPU_THREADS", 1, int, "serve --cpu-threads (both runs)"),
    ("--autoscale", "AUTOSCALE", "1:4", str, "serve --autoscale MIN:MAX of the second run"),
    ("--up-window", "UP_WINDOW_S", 2.0, float, "serve --autoscale-up-window"),
    ("--down-window", "DOWN_WINDOW_S", 8.0, float, "serve --autoscale-down-window"),
    ("--cooldown", "COOLDOWN_S", 4.0, float, "serve --autoscale-cooldown"),
    ("--bin-s", "BIN_S", 2.0, float, "window of the series, seconds"),
    ("--drain-timeout-s", "DRAIN_TIMEOUT_S", 120.0, float,
     "seconds after the last arrival before unfinished requests count as errors"),
    ("--seed", "SEED", 0, int, "seed of the arrival times"),
    ("--results", "RESULTS", "bench/results", str, "folder of autoscale.json and the server logs"),
    ("--figures", "FIGURES", "bench/figures", str, "folder of the figure"),
]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", default="../shared/models/stories260K",
                   help="model folder (default %(default)s)")
    for flag, var, default, kind, text in OPTIONS:
        p.add_argument(flag, type=kind, default=kind(os.environ.get(var, default)),
                       help=f"{text} ({var}, default %(default)s)")
    p.add_argument("--replot", action="store_true", help="only redraw the figure from the JSON")
    p.add_argument("--svg", action="store_true", help="write the SVG even with matplotlib")
    return p.parse_args()


# --------------------------------------------------------------------------- server


class Server:
    """One `actorllm serve` on 127.0.0.1:port, its output in a log file; stop() sends SIGTERM
    and waits (SIGKILL after 30 s), and is safe to call twice."""

    def __init__(self, binary, port, flags, log_path):
        self.port, self.log_path = port, log_path
        self.cmd = [binary, "serve", "--host", "127.0.0.1", "--port", str(port)] + flags
        self.proc = None

    def start(self):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", self.port)) == 0:
                sys.exit(f"port {self.port} is in use; set PORT")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if get(self.port, "/health", 2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        with open(self.log_path, errors="replace") as f:
            tail = "".join(f.readlines()[-20:])
        sys.exit(f"{' '.join(self.cmd)} did not become healthy:\n{tail}")

    def cpu_seconds(self):
        """User + system CPU time of the server so far (Linux /proc), or None."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 2)
        except (OSError, IndexError, ValueError):
            return None

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def get(port, path, timeout):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(errors="replace")
    finally:
        conn.close()


# --------------------------------------------------------------------------- load


def arrivals(args):
    """[(send time from the start, phase)]: Poisson arrivals at each phase's rate."""
    rng, out, start = random.Random(args.seed), [], 0.0
    for phase, rate, length in zip(PHASES, (args.low_rate, args.burst_rate, args.low_rate),
                                   (args.warmup_s, args.burst_s, args.cool_s)):
        t = start + rng.expovariate(rate)
        while t < start + length:
            out.append((t, phase))
            t += rng.expovariate(rate)
        start += length
    return out


def one_request(port, model, index, max_tokens, timeout, t0, rec):
    """Streams one completion, filling rec: sent, first, end (seconds from t0), tokens,
    chunks [(t, tokens)] and error (None when exactly max_tokens came and [DONE] ended it)."""
    body = json.dumps({"model": model, "prompt": PROMPTS[index % len(PROMPTS)],
                       "max_tokens": max_tokens, "ignore_eos": True, "stream": True,
                       "logprobs": 0, "stream_options": {"include_usage": True}})
    rec["sent"] = time.monotonic() - t0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    usage, done = None, False
    try:
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            rec["error"] = f"HTTP {resp.status}: {resp.read(200).decode(errors='replace')}"
            return
        for line in resp:
            if not line.startswith(b"data: "):
                continue
            if line.startswith(b"data: [DONE]"):
                done = True
                break
            chunk = json.loads(line[6:])
            if "error" in chunk:  # the server ended the stream with an error event
                rec["error"] = f"error event: {json.dumps(chunk['error'])[:200]}"
                return
            if chunk.get("usage"):
                usage = chunk["usage"]["completion_tokens"]
            n = sum(len((c.get("logprobs") or {}).get("tokens") or [])
                    for c in chunk.get("choices") or [])
            if n:
                now = time.monotonic() - t0
                if rec["first"] is None:
                    rec["first"] = now
                rec["chunks"].append((now, n))
                rec["tokens"] += n
        if not done:
            rec["error"] = "stream ended without [DONE]"
        elif rec["tokens"] != max_tokens or usage != max_tokens:
            rec["error"] = f"{rec['tokens']} tokens streamed, usage {usage}, asked {max_tokens}"
    except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError) as e:
        rec["error"] = f"{type(e).__name__}: {e}"
    finally:
        rec["end"] = time.monotonic() - t0
        conn.close()


class Sampler(threading.Thread):
    """Reads /metrics every interval into samples: {t, serving, starting, draining, waiting,
    server_cpu, client_cpu} (CPU seconds so far of the server and of this process)."""

    def __init__(self, port, t0, server_cpu, interval=0.5):
        super().__init__(daemon=True)
        self.port, self.t0, self.server_cpu, self.interval = port, t0, server_cpu, interval
        self.samples, self.stopping, self.last_text = [], threading.Event(), ""

    def run(self):
        self.stopping.wait(max(0.0, self.t0 - time.monotonic()))
        while not self.stopping.is_set():
            t = time.monotonic() - self.t0
            try:
                self.last_text = get(self.port, "/metrics", 5)[1]
                states = gauge_sum(self.last_text, "replicas", ("state",))
                waiting = sum(gauge_sum(self.last_text, "num_requests_waiting").values())
                self.samples.append({
                    "t": round(t, 3), "serving": int(states.get("serving", 0)),
                    "starting": int(states.get("starting", 0)),
                    "draining": int(states.get("draining", 0)), "waiting": int(waiting),
                    "server_cpu": self.server_cpu(), "client_cpu": round(time.process_time(), 2)})
            except (OSError, http.client.HTTPException):
                pass  # a missed sample; the server's exit shows in the requests
            self.stopping.wait(max(0.0, self.interval - (time.monotonic() - self.t0 - t)))


def gauge_sum(text, name, labels=()):
    """{"value/value": sum} over the lines of actorllm:NAME, keyed by the given labels' values
    ({"": sum} without labels)."""
    out = {}
    for m in re.finditer(rf"^actorllm:{name}\{{([^}}]*)\}} (\S+)$", text, re.M):
        values = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
        key = "/".join(values.get(label, "?") for label in labels)
        out[key] = out.get(key, 0) + float(m.group(2))
    return out


def run_workload(args, model, schedule, server_cpu):
    """Sends the schedule and waits for every request; returns (records, samples, scale events,
    client CPU seconds, t_end)."""
    t0 = time.monotonic() + 0.2
    sampler = Sampler(args.port, t0, server_cpu)
    sampler.start()
    cpu0, records, threads = time.process_time(), [], []
    for i, (t, phase) in enumerate(schedule):
        delay = t0 + t - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        rec = {"phase": phase, "scheduled": t, "sent": None, "first": None, "end": None,
               "tokens": 0, "chunks": [], "error": None}
        th = threading.Thread(target=one_request, daemon=True,
                              args=(args.port, model, i, args.max_tokens,
                                    args.drain_timeout_s, t0, rec))
        th.start()
        records.append(rec)
        threads.append(th)
    deadline = time.monotonic() + args.drain_timeout_s
    for th in threads:
        while th.is_alive() and time.monotonic() < deadline:
            th.join(0.2)  # short joins, so that Ctrl-C gets through
    for rec in records:
        if rec["end"] is None:
            rec["error"] = f"unfinished {args.drain_timeout_s:g} s after the last arrival"
    t_end = time.monotonic() - t0
    time.sleep(1.0)  # one more sample after the last request
    sampler.stopping.set()
    sampler.join()
    events = {k: int(v) for k, v in gauge_sum(sampler.last_text, "scale_events_total",
                                              ("direction", "reason")).items() if v}
    return records, sampler.samples, events, time.process_time() - cpu0, t_end


# --------------------------------------------------------------------------- statistics


def pct(values, q):
    """The q-th percentile (linear between closest ranks), None for no values."""
    v = sorted(values)
    if not v:
        return None
    k = (len(v) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def ms(x):
    return None if x is None else round(1000 * x, 1)


def tokens_between(records, a, b):
    return sum(n for r in records for t, n in r["chunks"] if a <= t < b)


def series(records, samples, bin_s, t_end):
    """Per-window rows: start, output tok/s, requests sent, TTFT p99 of those (ms), most
    serving replicas, most waiting requests."""
    rows = []
    for i in range(int(math.ceil(t_end / bin_s))):
        a, b = i * bin_s, (i + 1) * bin_s
        sent = [r for r in records if a <= r["sent"] < b]
        ttfts = [r["first"] - r["sent"] for r in sent if r["first"] is not None]
        win = [s for s in samples if a <= s["t"] < b]
        rows.append({"t": a, "tok_s": round(tokens_between(records, a, b) / bin_s, 1),
                     "sent": len(sent), "ttft_p99_ms": ms(pct(ttfts, 99)),
                     "serving": max((s["serving"] for s in win), default=None),
                     "waiting": max((s["waiting"] for s in win), default=None),
                     "server_cores": cores(samples, a, b, "server_cpu"),
                     "client_cores": cores(samples, a, b, "client_cpu")})
    return rows


def cores(samples, a, b, key):
    """Cores used between the first and the last sample in [a, b]: CPU seconds per second."""
    win = [s for s in samples if a <= s["t"] <= b and s[key] is not None]
    if len(win) < 2 or win[-1]["t"] <= win[0]["t"]:
        return None
    return round((win[-1][key] - win[0][key]) / (win[-1]["t"] - win[0]["t"]), 2)


def summarize(args, records, samples, events, client_cpu, server_cpu, t_end):
    ok = [r for r in records if r["error"] is None]
    ttfts = [r["first"] - r["sent"] for r in records if r["first"] is not None]
    tokens = sum(r["tokens"] for r in records)
    bounds = {"warmup": (0, args.warmup_s), "burst": (args.warmup_s, args.warmup_s + args.burst_s),
              "cool": (args.warmup_s + args.burst_s, args.warmup_s + args.burst_s + args.cool_s)}
    phases = {}
    for phase, (a, b) in bounds.items():
        mine = [r for r in records if r["phase"] == phase]
        pt = [r["first"] - r["sent"] for r in mine if r["first"] is not None]
        phases[phase] = {"requests": len(mine),
                         "tok_s": round(tokens_between(records, a, b) / (b - a), 1),
                         "ttft_p50_ms": ms(pct(pt, 50)), "ttft_p99_ms": ms(pct(pt, 99)),
                         "last_end_s": round(max((r["end"] for r in mine), default=0), 2),
                         "server_cores": cores(samples, a, b, "server_cpu"),
                         "client_cores": cores(samples, a, b, "client_cpu")}
    errors = collections.Counter(r["error"] for r in records if r["error"])
    return {
        "requests": len(records), "ok": len(ok), "errors": len(records) - len(ok),
        "error_kinds": dict(errors), "tokens": tokens, "duration_s": round(t_end, 2),
        "tok_s": round(tokens / t_end, 1),
        "ttft_p50_ms": ms(pct(ttfts, 50)), "ttft_p99_ms": ms(pct(ttfts, 99)),
        "max_serving": max((s["serving"] for s in samples), default=0),
        "max_send_lag_ms": ms(max((r["sent"] - r["scheduled"] for r in records), default=0)),
        "scale_events": events, "phases": phases,
        "client_cpu_s": round(client_cpu, 1),
        "server_cpu_s": None if server_cpu is None else round(server_cpu, 1),
    }


def ratios(off, on):
    def r(a, b):
        return None if not a or b is None else round(b / a, 2)
    bo, bn = off["totals"]["phases"]["burst"], on["totals"]["phases"]["burst"]
    return {"burst_ttft_p99": r(bo["ttft_p99_ms"], bn["ttft_p99_ms"]),
            "burst_ttft_p50": r(bo["ttft_p50_ms"], bn["ttft_p50_ms"]),
            "burst_tok_s": r(bo["tok_s"], bn["tok_s"]),
            "burst_last_end": r(bo["last_end_s"], bn["last_end_s"]),
            "total_tok_s": r(off["totals"]["tok_s"], on["totals"]["tok_s"]),
            "ttft_p99": r(off["totals"]["ttft_p99_ms"], on["totals"]["ttft_p99_ms"])}


# --------------------------------------------------------------------------- one run


def run_one(args, label, scale_flags, schedule):
    """One fresh server, the whole schedule against it, stopped afterwards whatever happens."""
    flags = ["--model", args.model, "--max-num-seqs", str(args.max_num_seqs),
             "--cpu-threads", str(args.cpu_threads), "--disable-log-stats"] + scale_flags
    log = os.path.join(args.results, f"autoscale_serve_{label}.log")
    server = Server(args.bin, args.port, flags, log)
    try:
        server.start()
        served = json.loads(get(args.port, "/v1/models", 5)[1])["data"][0]["id"]
        print(f"[{label}] {len(schedule)} requests over "
              f"{args.warmup_s + args.burst_s + args.cool_s:g} s ...", file=sys.stderr, flush=True)
        load_start = os.getloadavg()[0]
        records, samples, events, client_cpu, t_end = run_workload(args, served, schedule,
                                                                   server.cpu_seconds)
        server_cpu = server.cpu_seconds()
    finally:
        server.stop()
    totals = summarize(args, records, samples, events, client_cpu, server_cpu, t_end)
    totals["loadavg_1min"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
    return {"label": label, "serve_flags": flags, "totals": totals,
            "series": series(records, samples, args.bin_s, t_end),
            "samples": samples}


def fmt(x, spec="{:.0f}"):
    return "-" if x is None else spec.format(x)


def print_tables(result):
    runs = result["runs"]
    print("\n| run | requests | errors | TTFT p50 ms | TTFT p99 ms | burst TTFT p99 ms | "
          "burst tok/s | total tok/s | burst done at s | burst cores server / client | "
          "max serving | scale events |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for run in runs:
        t, b = run["totals"], run["totals"]["phases"]["burst"]
        ev = ", ".join(f"{k} {v}" for k, v in sorted(t["scale_events"].items())) or "-"
        print(f"| {run['label']} | {t['requests']} | {t['errors']} | {fmt(t['ttft_p50_ms'])} | "
              f"{fmt(t['ttft_p99_ms'])} | {fmt(b['ttft_p99_ms'])} | {fmt(b['tok_s'])} | "
              f"{fmt(t['tok_s'])} | {fmt(b['last_end_s'], '{:.1f}')} | "
              f"{fmt(b['server_cores'], '{:.2f}')} / {fmt(b['client_cores'], '{:.2f}')} | "
              f"{t['max_serving']} | {ev} |")
    for run in runs:
        for kind, n in run["totals"]["error_kinds"].items():
            print(f"  {run['label']} error x{n}: {kind}")
    print("\nautoscale / fixed: " + ", ".join(f"{k} {fmt(v, '{:.2f}')}"
                                              for k, v in result["ratios"].items()))
    print(f"\nper {result['config']['bin_s']:g} s window (tok/s, TTFT p99 ms, serving replicas):")
    print("| t s | " + " | ".join(f"{r['label']} tok/s | p99 | rep" for r in runs) + " |")
    print("|---|" + "---|---|---|" * len(runs))
    n = max(len(r["series"]) for r in runs)
    for i in range(n):
        cells = []
        for run in runs:
            w = run["series"][i] if i < len(run["series"]) else {}
            cells += [fmt(w.get("tok_s")), fmt(w.get("ttft_p99_ms")), fmt(w.get("serving"))]
        t = i * result["config"]["bin_s"]
        print(f"| {t:g} | " + " | ".join(cells) + " |")


# --------------------------------------------------------------------------- figure

PANELS = [("output tok/s", "tok_s", False), ("TTFT p99 (ms, log)", "ttft_p99_ms", True),
          ("serving replicas", None, False)]
COLORS = {"fixed": "#1f77b4", "autoscale": "#d62728"}


def panel_lines(run, key):
    """(xs, ys) for a panel: window midpoints for the binned series, or the raw replica
    samples (drawn as steps)."""
    if key is None:
        return [s["t"] for s in run["samples"]], [s["serving"] for s in run["samples"]]
    bin_s = run["series"][1]["t"] - run["series"][0]["t"] if len(run["series"]) > 1 else 1
    pts = [(w["t"] + bin_s / 2, w[key]) for w in run["series"] if w[key] is not None]
    return [p[0] for p in pts], [p[1] for p in pts]


def plot_png(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(9, 8))
    cfg = result["config"]
    for ax, (title, key, log) in zip(axes, PANELS):
        ax.axvspan(cfg["warmup_s"], cfg["warmup_s"] + cfg["burst_s"], color="0.92")
        for run in result["runs"]:
            xs, ys = panel_lines(run, key)
            draw = ax.step if key is None else ax.plot
            kw = {"where": "post"} if key is None else {"marker": "."}
            draw(xs, ys, color=COLORS.get(run["label"]), label=run["label"], **kw)
        ax.set_ylabel(title)
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right")
    axes[0].set_title(figure_title(result))
    axes[-1].set_xlabel("seconds from the first request (burst shaded)")
    axes[-1].set_ylim(bottom=0)
    axes[-1].yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def figure_title(result):
    c = result["config"]
    name = os.path.basename(c["model"].rstrip("/"))
    return (f"{name}: {c['low_rate']:g} → {c['burst_rate']:g} → {c['low_rate']:g} req/s, "
            f"{c['max_tokens']} tokens each, --max-num-seqs {c['max_num_seqs']}")


def nice_ticks(lo, hi, n=5):
    step = 10 ** math.floor(math.log10(max(hi - lo, 1e-9) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    return [step * k for k in range(int(math.ceil(lo / step)), int(math.floor(hi / step)) + 1)]


def plot_svg(result, path):
    """The same three panels as plot_png, drawn as SVG paths (no dependencies)."""
    W, ph, left, right, top, gap = 900, 200, 80, 20, 40, 30
    H = top + 3 * ph + 2 * gap + 50
    cfg = result["config"]
    xmax = max(max(panel_lines(r, k)[0] or [0]) for r in result["runs"] for _, k, _ in PANELS)
    xmax = max(xmax, cfg["warmup_s"] + cfg["burst_s"] + cfg["cool_s"])
    sx = lambda x: left + (W - left - right) * x / xmax  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="13">'
           f'{figure_title(result)}</text>']
    for i, (title, key, log) in enumerate(PANELS):
        y0 = top + i * (ph + gap)
        lines = [panel_lines(r, key) for r in result["runs"]]
        ys = [y for _, yv in lines for y in yv if y is not None and (y > 0 or not log)]
        if log:
            lo, hi = math.floor(math.log10(min(ys or [1]))), math.ceil(math.log10(max(ys or [10])))
            hi = max(hi, lo + 1)
            def sy(y, lo=lo, hi=hi, y0=y0):
                return y0 + ph * (1 - (math.log10(y) - lo) / (hi - lo))
            ticks = [10 ** k for k in range(lo, hi + 1)]
        else:
            hi = max(ys or [1]) * 1.05
            def sy(y, hi=hi, y0=y0):
                return y0 + ph * (1 - y / hi)
            ticks = nice_ticks(0, hi)
        a, b = sx(cfg["warmup_s"]), sx(cfg["warmup_s"] + cfg["burst_s"])
        out.append(f'<rect x="{a:.1f}" y="{y0}" width="{b - a:.1f}" height="{ph}" fill="#ebebeb"/>')
        out.append(f'<rect x="{left}" y="{y0}" width="{W - left - right}" height="{ph}" '
                   f'fill="none" stroke="black"/>')
        for t in ticks:
            out.append(f'<line x1="{left}" x2="{W - right}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" '
                       f'stroke="#ccc" stroke-width="0.5"/>')
            out.append(f'<text x="{left - 4}" y="{sy(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
        out.append(f'<text transform="translate(16,{y0 + ph / 2}) rotate(-90)" '
                   f'text-anchor="middle">{title}</text>')
        for run, (xs, yv) in zip(result["runs"], lines):
            pts = [(sx(x), sy(y)) for x, y in zip(xs, yv) if y is not None and (y > 0 or not log)]
            if key is None:  # steps: each sample holds until the next
                steps = pts[:1]
                for (x, y), (_, y_before) in zip(pts[1:], pts):
                    steps += [(x, y_before), (x, y)]
                pts = steps
            d = " ".join(f"{'M' if j == 0 else 'L'}{x:.1f},{y:.1f}" for j, (x, y) in enumerate(pts))
            out.append(f'<path d="{d}" fill="none" stroke="{COLORS.get(run["label"], "black")}" '
                       f'stroke-width="1.5"/>')
    yb = top + 3 * ph + 2 * gap
    for t in nice_ticks(0, xmax, 10):
        for i in range(3):
            y0 = top + i * (ph + gap)
            out.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{y0}" y2="{y0 + ph}" '
                       f'stroke="#ccc" stroke-width="0.5"/>')
        out.append(f'<text x="{sx(t):.1f}" y="{yb + 14}" text-anchor="middle">{t:g}</text>')
    out.append(f'<text x="{(left + W - right) / 2}" y="{yb + 32}" text-anchor="middle">'
               f'seconds from the first request (burst shaded)</text>')
    for j, run in enumerate(result["runs"]):
        x = W - right - 170 + 90 * j
        out.append(f'<line x1="{x}" x2="{x + 20}" y1="{top + 12}" y2="{top + 12}" '
                   f'stroke="{COLORS.get(run["label"], "black")}" stroke-width="2"/>')
        out.append(f'<text x="{x + 24}" y="{top + 16}">{run["label"]}</text>')
    out.append("</svg>\n")
    with open(path, "w") as f:
        f.write("\n".join(out))


def plot(result, figures, force_svg):
    os.makedirs(figures, exist_ok=True)
    if not force_svg:
        try:
            path = os.path.join(figures, "autoscale.png")
            plot_png(result, path)
            return path
        except ImportError:
            pass
    path = os.path.join(figures, "autoscale.svg")
    plot_svg(result, path)
    return path


# --------------------------------------------------------------------------- main


def main():
    args = parse_args()
    os.chdir(ROOT)
    out = os.path.join(args.results, "autoscale.json")
    if args.replot:
        with open(out) as f:
            result = json.load(f)
        print_tables(result)
        print(f"\nwrote {plot(result, args.figures, args.svg)}")
        return
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)  # also where a non-interactive shell ignored it
    schedule = arrivals(args)
    scale = ["--autoscale", args.autoscale, "--autoscale-up-window", f"{args.up_window:g}",
             "--autoscale-down-window", f"{args.down_window:g}",
             "--autoscale-cooldown", f"{args.cooldown:g}"]
    config = {k: v for k, v in vars(args).items() if k not in ("replot", "svg")}
    config.update(nproc=os.cpu_count(), requests=len(schedule), commit=git_head())
    os.makedirs(args.results, exist_ok=True)
    try:
        runs = [run_one(args, "fixed", ["--replicas", "1"], schedule),
                run_one(args, "autoscale", scale, schedule)]
    except KeyboardInterrupt:
        sys.exit("interrupted; servers stopped")
    result = {"config": config, "runs": runs, "ratios": ratios(runs[0], runs[1])}
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print_tables(result)
    print(f"\nwrote {out} and {plot(result, args.figures, args.svg)}")
    if any(r["totals"]["errors"] for r in runs):
        sys.exit(1)


def interrupt(signum, frame):
    """SIGTERM and Ctrl-C end the run through the finally blocks that stop the server."""
    raise KeyboardInterrupt


def git_head():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=ROOT).stdout.strip() or None
    except OSError:
        return None


if __name__ == "__main__":
    main()

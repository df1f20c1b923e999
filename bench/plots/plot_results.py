#!/usr/bin/python3
"""Turns serve_bench result JSON files into PNG charts, one line per label.

  throughput.png  output-token throughput against concurrency (or request rate)
  latency.png     TTFT and ITL (p50 solid, p99 dashed) against output-token throughput

Usage: /usr/bin/python3 bench/plots/plot_results.py [--out DIR] RESULT.json|DIR ...
(Debian's python3-matplotlib; a directory stands for the *.json files in it.)
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


def load(paths):
    """Result dicts from files and directories, skipping JSON that is not a serve_bench result."""
    files = []
    for p in paths:
        if os.path.isdir(p):
            files += sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith(".json"))
        else:
            files.append(p)
    results = []
    for f in files:
        with open(f) as fh:
            r = json.load(fh)
        if isinstance(r, dict) and "output_throughput" in r:
            results.append(r)
    return results


def load_level(r):
    """The x of a run: its concurrency cap, else its request rate (inf when unbounded)."""
    if r.get("max_concurrency"):
        return float(r["max_concurrency"])
    rate = r.get("request_rate", "inf")
    return math.inf if rate == "inf" else float(rate)


def by_label(results):
    lines = defaultdict(list)
    for r in results:
        lines[r.get("label") or r.get("model_id", "?")].append(r)
    for runs in lines.values():
        runs.sort(key=load_level)
    return dict(sorted(lines.items()))


def plot_throughput(lines, out):
    by_concurrency = all(r.get("max_concurrency") for runs in lines.values() for r in runs)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, runs in lines.items():
        xs = [load_level(r) for r in runs]
        ax.plot(xs, [r["output_throughput"] for r in runs], marker="o", label=label)
    ax.set_xlabel("max concurrency" if by_concurrency else "request rate (req/s)")
    if by_concurrency:
        ax.set_xscale("log", base=2)
        levels = sorted({load_level(r) for runs in lines.values() for r in runs})
        ax.set_xticks(levels, [f"{x:g}" for x in levels])
    ax.set_ylabel("output tokens/s")
    ax.set_title("Output-token throughput")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_latency(lines, out):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, metric, title in ((axes[0], "ttft", "Time to first token"),
                              (axes[1], "itl", "Inter-token latency")):
        for i, (label, runs) in enumerate(lines.items()):
            color = f"C{i}"
            xs = [r["output_throughput"] for r in runs]
            ax.plot(xs, [r[f"median_{metric}_ms"] for r in runs], marker="o", color=color,
                    label=f"{label} p50")
            ax.plot(xs, [r[f"p99_{metric}_ms"] for r in runs], marker="x", linestyle="--",
                    color=color, label=f"{label} p99")
        ax.set_xlabel("output tokens/s")
        ax.set_ylabel("ms")
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))  # 3, not 3x10^0
        lo, hi = ax.get_ylim()
        # Label the 2..9 ticks only when fewer than one decade would leave too few labels.
        minor = "%g" if hi / lo < 10 else ""
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FormatStrFormatter(minor))
        ax.set_title(title)
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("inputs", nargs="+", help="result JSON files or directories")
    parser.add_argument("--out", default=".", help="directory for the PNG files")
    args = parser.parse_args()
    results = load(args.inputs)
    if not results:
        sys.exit("no serve_bench results in " + " ".join(args.inputs))
    os.makedirs(args.out, exist_ok=True)
    lines = by_label(results)
    plot_throughput(lines, os.path.join(args.out, "throughput.png"))
    plot_latency(lines, os.path.join(args.out, "latency.png"))
    print(f"{len(results)} runs, {len(lines)} labels -> "
          f"{args.out}/throughput.png, {args.out}/latency.png")


if __name__ == "__main__":
    main()

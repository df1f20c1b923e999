#!/usr/bin/env python3
"""Images in the prompt, served (issue 44): the vision tower's time per image and the served
throughput with one image per request, at concurrency 1 and 8.

  python3 bench/vision.py [--bin build/actorllm] [--arch llava|gemma3|qwen2_5_vl] [--requests 24]
                          [--answer 32]

The model: a random checkpoint (scripts/make_random_vlm.py) whose tower has the shape of a
ViT-B/16 at 224 pixels (12 layers of 768, 196 patches) and whose language model is small (8
layers of 512, the stories260K tokenizer): LLaVA (CLIP; vision_feature_layer -2 runs 11 layers;
196 positions an image) or Gemma 3 (SigLIP, all 12 layers; pooled to 49 positions an image,
attended both ways) or Qwen2.5-VL (12 layers of 768 in windows of 112 pixels, full attention in
every third; a 640x480 image resized to 252x168 by max_pixels 224^2: 216 patches of 14, merged
to 54 positions, M-RoPE in the decoder).
Every request is a chat message with one 640x480 PNG (data: URL) and a question, and streams
ANSWER tokens (ignore_eos).

Runs, each against a fresh `actorllm serve`, at concurrency 1 and 8:
  distinct   every request its own image: the tower runs for each
  repeated   every request the same image: after the first, the encoder cache and the
             prefix cache serve it
  text       the baseline: the same chat with the image's 196 positions as text tokens
             instead (a prompt of the same length, no tower; each request's its own)
Reported per run: requests/s, output tok/s, TTFT p50 / p99, and from /metrics the tower's
time per image (encoder_seconds over encoder_images_total). Ratios are to the text run of the
same concurrency, in the same invocation. Writes RESULTS/vision.json (bench/results) and
prints the table. Needs /usr/bin/python3 with numpy and PIL for the model and the images.
"""
import argparse
import base64
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from stream_client import ROOT, free_port, metric_sum, metrics_text, stream_chat, wait_healthy

PY = "/usr/bin/python3"
QUESTION = "Describe this picture in a few words, please."


def make_model(folder, arch):
    shape = {"llava": ["--image-size", "224", "--patch-size", "16", "--vocab", "514"],
             "gemma3": ["--image-size", "224", "--patch-size", "16", "--mm-tokens-per-image", "49",
                        "--head-dim", "64", "--sliding-window", "512"],
             # 640x480 becomes 252x168 under max_pixels 224^2: 216 patches of 14, 54 positions.
             "qwen2_5_vl": ["--patch-size", "14", "--window-size", "112", "--fullatt-block-indexes",
                            "2,5,8,11", "--max-pixels", str(224 * 224), "--mrope-section", "8,12,12"]}
    subprocess.run([PY, os.path.join(ROOT, "scripts", "make_random_vlm.py"), "--arch", arch,
                    "--vision-dim", "768",
                    "--vision-hidden", "3072", "--vision-heads", "12", "--vision-layers", "12",
                    "--dim", "512", "--hidden", "1376", "--layers", "8", "--heads", "8",
                    "--kv-heads", "8", "--max-pos", "2048", "--out", folder] + shape[arch],
                   check=True, stdout=subprocess.DEVNULL)


# Text tokens standing in for an image's positions in the baseline.
POSITIONS = {"llava": 196, "gemma3": 49, "qwen2_5_vl": 54}


def make_images(count):
    """`count` distinct 640x480 PNGs as data: URLs."""
    script = ("import base64, io, sys, numpy as np\nfrom PIL import Image\n"
              "g = np.random.default_rng(7)\nfor _ in range(int(sys.argv[1])):\n"
              "    b = io.BytesIO()\n"
              "    Image.fromarray(g.integers(0, 256, (480, 640, 3), dtype=np.uint8)).save(b, 'PNG')\n"
              "    print('data:image/png;base64,' + base64.b64encode(b.getvalue()).decode())\n")
    out = subprocess.run([PY, "-c", script, str(count)], check=True, capture_output=True, text=True)
    return out.stdout.split()


def start_server(binary, model, log):
    port = free_port()
    proc = subprocess.Popen([binary, "serve", model, "--host", "127.0.0.1", "--port", str(port),
                             "--device", "cpu"], stdout=log, stderr=subprocess.STDOUT)
    if not wait_healthy(port, 300):
        proc.kill()
        sys.exit("vision: the server did not start (see its log)")
    return proc, port


def body_for(kind, image, answer, index=0, positions=196):
    if kind == "text":
        # The image's positions as ordinary text tokens: a prompt of about the same length, and
        # a number first so that no two requests share a prefix-cache block.
        content = f"{index} " + " ".join(["the"] * positions) + " " + QUESTION
    else:
        content = [{"type": "image_url", "image_url": {"url": image}},
                   {"type": "text", "text": QUESTION}]
    return {"messages": [{"role": "user", "content": content}], "max_tokens": answer,
            "ignore_eos": True, "temperature": 0}


def run(binary, model, kind, images, concurrency, requests, answer, log, positions):
    proc, port = start_server(binary, model, log)
    try:
        stream_chat(port, body_for("text", None, 2, -1))  # warm: weights packed, threads up
        ttfts, tokens, lock = [], [0], threading.Lock()
        queue = list(range(requests))

        def client():
            while True:
                with lock:
                    if not queue:
                        return
                    i = queue.pop(0)
                image = images[i % len(images)] if kind == "distinct" else images[0]
                first, n, _ = stream_chat(port, body_for(kind, image, answer, i, positions))
                with lock:
                    ttfts.append(first)
                    tokens[0] += n

        start = time.perf_counter()
        threads = [threading.Thread(target=client) for _ in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        text = metrics_text(port)
        encoded = metric_sum(text, "actorllm:encoder_images_total")
        encoder_seconds = metric_sum(text, "actorllm:encoder_seconds_sum")
        ttfts.sort()
        return {"kind": kind, "concurrency": concurrency, "requests": requests,
                "requests_per_s": requests / wall, "output_tok_per_s": tokens[0] / wall,
                "ttft_p50_ms": 1000 * statistics.median(ttfts),
                "ttft_p99_ms": 1000 * ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))],
                "images_encoded": encoded,
                "encoder_ms_per_image": 1000 * encoder_seconds / encoded if encoded else None}
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "actorllm"))
    ap.add_argument("--arch", choices=sorted(POSITIONS), default="llava")
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--answer", type=int, default=32)
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="actorllm-vision-")
    model = os.path.join(work, "model")
    make_model(model, args.arch)
    images = make_images(args.requests)
    rows = []
    with open(os.path.join(work, "serve.log"), "w") as log:
        for concurrency in (1, 8):
            for kind in ("text", "distinct", "repeated"):
                rows.append(run(args.bin, model, kind, images, concurrency, args.requests,
                                args.answer, log, POSITIONS[args.arch]))
                print(json.dumps(rows[-1]), flush=True)
    for row in rows:
        base = next(r for r in rows if r["kind"] == "text" and r["concurrency"] == row["concurrency"])
        row["tok_per_s_ratio"] = row["output_tok_per_s"] / base["output_tok_per_s"]
        row["ttft_p50_ratio"] = row["ttft_p50_ms"] / base["ttft_p50_ms"]
    os.makedirs(args.results, exist_ok=True)
    name = "vision.json" if args.arch == "llava" else f"vision_{args.arch}.json"
    with open(os.path.join(args.results, name), "w") as f:
        json.dump({"arch": args.arch, "requests": args.requests, "answer_tokens": args.answer,
                   "runs": rows}, f, indent=1)
    print("\n| run | concurrency | req/s | tok/s (ratio to text) | TTFT p50 (ratio) | TTFT p99 | "
          "tower per image |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        tower = f"{r['encoder_ms_per_image']:.0f} ms" if r["encoder_ms_per_image"] else "-"
        print(f"| {r['kind']} | {r['concurrency']} | {r['requests_per_s']:.2f} | "
              f"{r['output_tok_per_s']:.0f} ({r['tok_per_s_ratio']:.2f}x) | "
              f"{r['ttft_p50_ms']:.0f} ms ({r['ttft_p50_ratio']:.2f}x) | {r['ttft_p99_ms']:.0f} ms | "
              f"{tower} |")


if __name__ == "__main__":
    main()

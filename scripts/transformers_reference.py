#!/usr/bin/env python3
"""actorllm's GPU logits against Hugging Face transformers on the same device, per architecture.

For each architecture the README lists, a random checkpoint (scripts/make_random_model.py,
float32) is run by transformers' own modeling code (the installed version, eager attention) and
by actorllm's CUDA runner (cuda_logits: the server's loader and runner), on one 64-token prompt:

  float32  the logits at every position within --f32-tol of transformers', relative to the
           largest |logit| at that position; the greedy continuations equal, or parting only
           where transformers' own top-2 margin is within that tolerance (a near tie).
  bfloat16 both sides in bf16: the largest |difference| at any position over the RMS of
           transformers' logits there, within --bf16-tol.

  scripts/transformers_reference.py --bin build/bin/cuda_logits --json out.json
  scripts/transformers_reference.py --bin ... --archs llama,qwen3 --work /tmp/ref

Prints a table, writes the JSON (device, versions, one row per architecture with its figures),
and exits 1 when any architecture fails (2 when transformers or torch is missing).
"""
import argparse
import json
import os
import subprocess
import sys
import time

try:
    import numpy as np
except ImportError:  # reported by main, as torch's absence is
    np = None

ARCHS = ["llama", "llama-tied", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3",
         "mixtral", "qwen2_moe", "qwen3_moe"]
# The llama arch's default is a benchmark shape; this is a tiny one like the other families'.
LLAMA_SHAPE = ["--dim", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2", "--hidden", "192",
               "--vocab", "512", "--max-pos", "128"]
PROMPT_TOKENS, GREEDY_TOKENS = 64, 16
HERE = os.path.dirname(os.path.abspath(__file__))


def make_model(arch, out):
    if os.path.exists(os.path.join(out, "model.safetensors")):
        return
    cmd = [sys.executable, os.path.join(HERE, "make_random_model.py"), "--arch", arch, "--out", out]
    if arch == "llama":
        cmd += LLAMA_SHAPE
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def prompt_ids(vocab):
    rng = np.random.default_rng(1234)
    return [1] + [int(x) for x in rng.integers(3, vocab, PROMPT_TOKENS - 1)]


def ours(binary, model_dir, ids, dtype, work):
    """(logits positions x vocab, greedy ids) from cuda_logits."""
    out = os.path.join(work, f"logits-{dtype}.f32")
    run = subprocess.run([binary, model_dir, "--ids", ",".join(map(str, ids)), "--out", out,
                          "--dtype", dtype, "--greedy", str(GREEDY_TOKENS)],
                         capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise RuntimeError(f"cuda_logits: {run.stderr.strip() or run.stdout.strip()}")
    line = json.loads(run.stdout.strip().splitlines()[-1])
    if "skipped" in line:
        raise RuntimeError("cuda_logits: " + line["skipped"])
    logits = np.fromfile(out, dtype="<f4").reshape(line["positions"], line["vocab"])
    return logits, line["greedy"]


def theirs(torch, transformers, model_dir, ids, dtype):
    """(logits, greedy ids, greedy step scores) from transformers on the GPU."""
    torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch_dtype, attn_implementation="eager").to("cuda").eval()
    x = torch.tensor([ids], device="cuda")
    with torch.no_grad():
        logits = model(x).logits[0].float().cpu().numpy()
        gen = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=GREEDY_TOKENS,
                             min_new_tokens=GREEDY_TOKENS, do_sample=False, num_beams=1,
                             output_scores=True, return_dict_in_generate=True,
                             pad_token_id=0, eos_token_id=None)
    greedy = gen.sequences[0, len(ids):].tolist()
    scores = [s[0].float().cpu().numpy() for s in gen.scores]
    del model
    torch.cuda.empty_cache()
    return logits, greedy, scores


def greedy_verdict(mine, ref, scores, tol):
    """'equal', or where they part and whether transformers' margin there allows it."""
    for step, (a, b) in enumerate(zip(mine, ref)):
        if a != b:
            top = np.sort(scores[step])[-2:]
            margin = float(top[1] - top[0])
            allowed = margin <= tol * float(np.max(np.abs(scores[step])))
            return {"equal": False, "parts_at": step, "margin": margin, "ok": allowed}
    same_length = len(mine) == len(ref)
    return {"equal": same_length, "ok": same_length}


def compare_arch(args, torch, transformers, arch):
    work = os.path.join(args.work, arch)
    make_model(arch, work)
    vocab = json.load(open(os.path.join(work, "config.json")))["vocab_size"]
    ids = prompt_ids(vocab)
    row = {"arch": arch}
    t0 = time.time()
    mine, mine_greedy = ours(args.bin, work, ids, "f32", work)
    ref, ref_greedy, scores = theirs(torch, transformers, work, ids, "f32")
    per_position = np.max(np.abs(mine - ref), axis=1) / np.max(np.abs(ref), axis=1)
    worst = int(np.argmax(per_position))
    greedy = greedy_verdict(mine_greedy, ref_greedy, scores, args.f32_tol)
    row["f32"] = {"max_rel": float(per_position[worst]), "worst_position": worst,
                  "greedy": greedy, "ours": mine_greedy, "transformers": ref_greedy,
                  "ok": bool(per_position[worst] <= args.f32_tol and greedy["ok"])}
    mine16, _ = ours(args.bin, work, ids, "bf16", work)
    ref16, _, _ = theirs(torch, transformers, work, ids, "bf16")
    rms = np.sqrt(np.mean(ref16.astype(np.float64) ** 2, axis=1))
    err_over_rms = np.max(np.abs(mine16 - ref16), axis=1) / rms
    worst16 = int(np.argmax(err_over_rms))
    row["bf16"] = {"max_err_over_rms": float(err_over_rms[worst16]), "worst_position": worst16,
                   "argmax_agree": float(np.mean(np.argmax(mine16, 1) == np.argmax(ref16, 1))),
                   "ok": bool(err_over_rms[worst16] <= args.bf16_tol)}
    row["seconds"] = round(time.time() - t0, 1)
    row["ok"] = row["f32"]["ok"] and row["bf16"]["ok"]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", required=True, help="cuda_logits")
    ap.add_argument("--json", required=True, help="where the results go")
    ap.add_argument("--work", default="/tmp/actorllm-transformers-reference")
    ap.add_argument("--archs", default=",".join(ARCHS))
    ap.add_argument("--f32-tol", type=float, default=1e-3)
    ap.add_argument("--bf16-tol", type=float, default=0.1)
    args = ap.parse_args()
    try:
        import numpy  # noqa: F401
        import torch
        import transformers
    except ImportError as e:
        print(f"transformers_reference: {e}; skipped")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 must mean float32 on both sides
    torch.backends.cudnn.allow_tf32 = False
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "transformers": transformers.__version__, "prompt_tokens": PROMPT_TOKENS,
              "greedy_tokens": GREEDY_TOKENS, "f32_tol": args.f32_tol, "bf16_tol": args.bf16_tol,
              "archs": []}
    for arch in args.archs.split(","):
        try:
            row = compare_arch(args, torch, transformers, arch)
        except Exception as e:  # one family's failure is its row's, not the run's
            row = {"arch": arch, "ok": False, "error": f"{type(e).__name__}: {e}"[:400]}
        result["archs"].append(row)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    result["passed"] = sum(r["ok"] for r in result["archs"])
    result["total"] = len(result["archs"])
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)

    print(f"transformers {result['transformers']} vs actorllm on {result['device']}: "
          f"{result['passed']}/{result['total']} architectures agree")
    print(f"{'arch':<11} {'f32 max rel':>11} {'greedy':>14} {'bf16 err/rms':>12} {'bf16 argmax':>11}  ok")
    for r in result["archs"]:
        if "error" in r:
            print(f"{r['arch']:<11} error: {r['error']}")
            continue
        g = r["f32"]["greedy"]
        greedy = "equal" if g["equal"] else f"tie at {g['parts_at']}" if g["ok"] else f"FAIL at {g['parts_at']}"
        print(f"{r['arch']:<11} {r['f32']['max_rel']:>11.2e} {greedy:>14} "
              f"{r['bf16']['max_err_over_rms']:>12.3f} {r['bf16']['argmax_agree']:>11.2f}  "
              f"{'yes' if r['ok'] else 'NO'}")
    return 0 if result["passed"] == result["total"] else 1


if __name__ == "__main__":
    sys.exit(main())

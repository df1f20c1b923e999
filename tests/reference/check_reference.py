#!/usr/bin/env python3
"""Self-test of reference_forward.py and scripts/make_random_model.py (numpy only, ~2 minutes).

  /usr/bin/python3 tests/reference/check_reference.py [--arch NAME ...] [--keep DIR]

For each arch it writes the default tiny model with make_random_model.py, runs the reference CLI
on it and checks: the expected HF tensor names, finite logits, argmax tokens, margins that are
not degenerate. Then it checks the features one by one against the same model with the feature
removed: a sliding window leaves every step whose sequence fits in the window unchanged and
changes the later ones; dynamic NTK and longrope switch on past their thresholds; softcapping,
norm_topk_prob and each rope_scaling type change the logits; F16/BF16 checkpoints decode to the
rounded F32 weights. Where ACTORLLM_SHARED_DIR (or ../shared) has stories260K, the llama path
must reproduce its golden greedy tokens.
"""
import argparse
import copy
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import reference_forward as rf  # noqa: E402

PY = sys.executable
MAKE = os.path.join(ROOT, "scripts", "make_random_model.py")
ARCHS = ["llama-tied", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3", "mixtral", "qwen2_moe", "qwen3_moe"]
PROMPT, STEPS = [1, 5, 9], 64

# Tensor names each arch must have in layer 0 (suffixes after model.layers.0.), and must not.
NAMES = {
    "llama-tied": (["self_attn.q_proj.weight", "mlp.gate_proj.weight"], ["self_attn.q_proj.bias"]),
    "mistral": (["self_attn.k_proj.weight", "mlp.up_proj.weight"], ["self_attn.q_norm.weight"]),
    "qwen2": (["self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"], ["self_attn.o_proj.bias"]),
    "qwen3": (["self_attn.q_norm.weight", "self_attn.k_norm.weight"], ["self_attn.q_proj.bias"]),
    "phi3": (["self_attn.qkv_proj.weight", "mlp.gate_up_proj.weight", "mlp.down_proj.weight"],
             ["self_attn.q_proj.weight", "mlp.gate_proj.weight"]),
    "gemma": (["post_attention_layernorm.weight"], ["pre_feedforward_layernorm.weight", "self_attn.q_norm.weight"]),
    "gemma2": (["pre_feedforward_layernorm.weight", "post_feedforward_layernorm.weight"], ["self_attn.q_norm.weight"]),
    "gemma3": (["pre_feedforward_layernorm.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight"], []),
    "mixtral": (["block_sparse_moe.gate.weight", "block_sparse_moe.experts.7.w1.weight",
                 "block_sparse_moe.experts.0.w2.weight", "block_sparse_moe.experts.0.w3.weight"], ["mlp.gate_proj.weight"]),
    "qwen2_moe": (["mlp.gate.weight", "mlp.experts.7.gate_proj.weight", "mlp.shared_expert.down_proj.weight",
                   "mlp.shared_expert_gate.weight", "self_attn.q_proj.bias"], ["mlp.gate_proj.weight"]),
    "qwen3_moe": (["mlp.gate.weight", "mlp.experts.7.down_proj.weight", "self_attn.q_norm.weight"],
                  ["mlp.shared_expert_gate.weight"]),
}

failures = []


def check(ok, what):
    print(("  ok   " if ok else "  FAIL ") + what)
    if not ok:
        failures.append(what)


def make(out, arch, *flags):
    subprocess.run([PY, MAKE, "--arch", arch, "--out", out, *flags], check=True, stdout=subprocess.DEVNULL)
    return out


def step_logits(config, weights, steps, prompt=PROMPT):
    tokens, logits, _ = rf.greedy(rf.Model(config, weights), prompt, steps)
    return tokens, np.array(logits)


def forced_logits(config, weights, ids):
    """Last-position logits of each prefix ids[:3 + s]: the same token path for two configs."""
    model = rf.Model(config, weights)
    return np.array([model.logits(ids[:n])[-1] for n in range(len(PROMPT), len(ids) + 1)])


def check_arch(tmp, arch):
    print(f"{arch}:")
    d = make(os.path.join(tmp, arch), arch)
    out = os.path.join(tmp, arch + ".json")
    subprocess.run([PY, os.path.join(HERE, "reference_forward.py"), d, "--prompt", ",".join(map(str, PROMPT)),
                    "--steps", str(STEPS), "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        r = json.load(f)
    config, weights = rf.load_model_dir(d)
    must, must_not = NAMES[arch]
    check(all("model.layers.0." + n in weights for n in must) and
          not any("model.layers.0." + n in weights for n in must_not), f"{arch}: HF tensor names")
    check(("lm_head.weight" in weights) != config["tie_word_embeddings"], f"{arch}: lm_head present iff untied")
    logits, margins = np.array(r["logits"]), np.array(r["margins"])
    check(logits.shape == (STEPS, config["vocab_size"]) and np.isfinite(logits).all(), f"{arch}: finite logits")
    check(r["tokens"] == [int(np.argmax(row)) for row in logits], f"{arch}: tokens are the argmax")
    top2 = np.sort(logits, axis=1)[:, -2:]
    check(np.allclose(margins, top2[:, 1] - top2[:, 0]), f"{arch}: margins are top1 - top2")
    check(np.median(margins) > 0.2 and (margins < 1e-3).sum() <= 2 and logits.std(axis=1).mean() > 1.0,
          f"{arch}: margins not degenerate (median {np.median(margins):.3f}, min {margins.min():.2g})")
    check(len(set(r["tokens"])) >= 8, f"{arch}: greedy run not stuck ({len(set(r['tokens']))} distinct tokens)")
    return d, r


def check_window(name, config, weights, window, unwindowed):
    """Steps whose whole sequence fits in the window match the model without it; later ones differ."""
    _, logits = step_logits(config, weights, 30)
    ids = PROMPT + list(np.argmax(logits, axis=1))
    plain = forced_logits(unwindowed, weights, ids[:-1])
    lengths = np.arange(len(PROMPT), len(PROMPT) + len(logits))
    inside, outside = lengths <= window, lengths > window
    check(np.abs(logits[inside] - plain[inside]).max() < 1e-9 and
          np.abs(logits[outside] - plain[outside]).max(axis=1).min() > 1e-6,
          f"{name}: window {window} changes exactly the steps longer than it")


def check_features(tmp, dirs):
    print("features:")
    for arch, flags in [("mistral", []), ("gemma2", []), ("gemma3", []), ("phi3", ["--sliding-window", "8"]),
                        ("mixtral", ["--sliding-window", "8"]), ("qwen2", ["--use-sliding-window"]),
                        ("qwen3_moe", ["--use-sliding-window", "--max-window-layers", "0"])]:
        d = make(os.path.join(tmp, f"{arch}-window"), arch, *flags) if flags else dirs[arch]
        config, weights = rf.load_model_dir(d)
        unwindowed = dict(config, sliding_window=None, use_sliding_window=False)
        check_window(f"{arch} sliding window", config, weights, config["sliding_window"], unwindowed)

    config, weights = rf.load_model_dir(dirs["qwen2"])
    layer_windows = rf.Model(dict(config, use_sliding_window=True, sliding_window=16, max_window_layers=1),
                             weights).windows
    check(layer_windows == [None, 16], "qwen2: use_sliding_window slides layers >= max_window_layers")
    check(rf.Model(*rf.load_model_dir(dirs["gemma2"])).windows == [16, None, 16, None],
          "gemma2: even layers slide")
    g3 = rf.Model(*rf.load_model_dir(dirs["gemma3"]))
    check(g3.windows == [16, 16, None, 16] and g3.ropes[0]["theta"] == 10000.0 and g3.ropes[0]["scaling"] is None
          and g3.ropes[2]["theta"] == 1e6 and g3.ropes[2]["scaling"]["rope_type"] == "linear",
          "gemma3: pattern 3, local rope base and no scaling on sliding layers")

    # Gemma soft-capping.
    config, weights = rf.load_model_dir(dirs["gemma2"])
    _, capped = step_logits(config, weights, 8)
    _, no_attn_cap = step_logits(dict(config, attn_logit_softcapping=None), weights, 8)
    _, no_final_cap = step_logits(dict(config, final_logit_softcapping=None), weights, 8)
    cap = config["final_logit_softcapping"]
    check(np.abs(capped).max() < cap and np.abs(capped - no_attn_cap).max() > 1e-3
          and np.abs(capped - no_final_cap).max() > 1e-3, "gemma2: attention and final soft-capping both act")

    # MoE routing options.
    for arch in ("qwen2_moe", "qwen3_moe"):
        config, weights = rf.load_model_dir(dirs[arch])
        _, a = step_logits(config, weights, 4)
        _, b = step_logits(dict(config, norm_topk_prob=not config["norm_topk_prob"]), weights, 4)
        check(np.abs(a - b).max() > 1e-3, f"{arch}: norm_topk_prob changes the output")
    d = make(os.path.join(tmp, "qwen2_moe-step2"), "qwen2_moe", "--decoder-sparse-step", "2", "--mlp-only-layers", "")
    config, weights = rf.load_model_dir(d)
    sparse = sorted({int(n.split(".")[2]) for n in weights if ".mlp.experts." in n})
    check(sparse == [1] and np.isfinite(step_logits(config, weights, 2)[1]).all(),
          "qwen2_moe: decoder_sparse_step 2 makes layer 1 the only sparse one, and the reference agrees")

    # Tied embeddings: an lm_head equal to the embedding gives the same logits.
    config, weights = rf.load_model_dir(dirs["llama-tied"])
    _, tied = step_logits(config, weights, 4)
    untied = dict(weights, **{"lm_head.weight": weights["model.embed_tokens.weight"].copy()})
    _, same = step_logits(dict(config, tie_word_embeddings=False), untied, 4)
    check(np.abs(tied - same).max() < 1e-12, "llama-tied: the tied head is the embedding")


def check_rope(tmp):
    print("rope scaling:")
    rope = dict(theta=10000.0, scaling=None, dim=16, max_pos=128, original_max_pos=None)
    default, _ = rf.rope_tables(rope, 10)
    for scaling in ({"rope_type": "yarn", "factor": 1.0}, {"rope_type": "llama3", "factor": 1.0,
                     "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                    {"type": "dynamic", "factor": 4.0}):
        inv, att = rf.rope_tables(dict(rope, scaling=scaling), 100)
        check(np.allclose(inv, default) and att == 1.0, f"{scaling.get('rope_type', scaling.get('type'))} "
              "reduces to the default rope (factor 1, or dynamic within max_position_embeddings)")
    inv, _ = rf.rope_tables(dict(rope, scaling={"rope_type": "dynamic", "factor": 4.0}), 256)
    base = 10000.0 * (4.0 * 256 / 128 - 3.0) ** (16 / 14)
    check(np.allclose(inv, 1.0 / base ** (np.arange(0, 16, 2) / 16)), "dynamic: NTK base at seq_len 256")
    inv, att = rf.rope_tables(dict(rope, scaling={"rope_type": "yarn", "factor": 4.0}), 10)
    check(abs(att - (0.1 * math.log(4.0) + 1.0)) < 1e-12 and np.isclose(inv[0], default[0])
          and np.isclose(inv[-1], default[-1] / 4.0), "yarn: mscale, high frequencies kept, low ones / factor")
    lr = dict(rope, original_max_pos=32, scaling={"type": "longrope", "short_factor": [1.0] * 8,
                                                  "long_factor": [2.0] * 8})
    short, att = rf.rope_tables(lr, 32)
    long_, _ = rf.rope_tables(lr, 33)
    check(np.allclose(short, default) and np.allclose(long_, default / 2.0)
          and abs(att - math.sqrt(1 + math.log(4.0) / math.log(32))) < 1e-12,
          "longrope: short factors up to original_max_position_embeddings, long after, attention factor")

    d = make(os.path.join(tmp, "rope-none"), "llama-tied", "--rope-scaling", "none")
    config, weights = rf.load_model_dir(d)
    _, plain = step_logits(config, weights, 40)
    ids = PROMPT + list(np.argmax(plain, axis=1))
    for kind in ("linear", "dynamic", "yarn", "llama3", "longrope"):
        d = make(os.path.join(tmp, "rope-" + kind), "llama-tied", "--rope-scaling", kind)
        config, weights = rf.load_model_dir(d)
        scaled = forced_logits(config, weights, ids[:-1])
        lengths = np.arange(len(PROMPT), len(ids))
        if kind == "dynamic":  # max_position_embeddings 32: acts only on longer sequences
            check(np.abs(scaled - plain)[lengths <= 32].max() < 1e-9 and
                  np.abs(scaled - plain)[lengths > 32].max(axis=1).min() > 1e-6,
                  "dynamic: same as no scaling up to max_position_embeddings, different after")
        else:
            check(np.abs(scaled - plain).max() > 1e-3, f"{kind}: changes the logits")
        if kind == "longrope":
            other = copy.deepcopy(config)
            other["rope_scaling"]["long_factor"] = [1.0] * len(other["rope_scaling"]["long_factor"])
            swapped = forced_logits(other, weights, ids[:-1])
            original = config["original_max_position_embeddings"]
            check(np.abs(scaled - swapped)[lengths <= original].max() < 1e-9 and
                  np.abs(scaled - swapped)[lengths > original].max(axis=1).min() > 1e-6,
                  f"longrope: long_factor used exactly when the sequence passes {original} tokens")


def check_dtypes(tmp):
    print("dtypes:")
    f32 = rf.load_safetensors(os.path.join(make(os.path.join(tmp, "q-f32"), "qwen3"), "model.safetensors"))
    for dtype, rel in (("f16", 2.0 ** -11), ("bf16", 2.0 ** -8)):
        d = make(os.path.join(tmp, "q-" + dtype), "qwen3", "--dtype", dtype)
        low = rf.load_safetensors(os.path.join(d, "model.safetensors"))
        worst = max(np.max(np.abs(low[n] - f32[n]) / (np.abs(f32[n]) + 1e-3)) for n in f32)
        config = json.load(open(os.path.join(d, "config.json")))
        check(worst <= rel * 1.01 and config["torch_dtype"] == {"f16": "float16", "bf16": "bfloat16"}[dtype]
              and np.isfinite(step_logits(config, low, 2)[1]).all(), f"{dtype}: decodes to the rounded weights")
    check(rf.dtype_round(3072 ** 0.5, "bfloat16") == 55.5 and rf.dtype_round(2304 ** 0.5, "bfloat16") == 48.0,
          "gemma normalizer rounded as a bfloat16 tensor")


def check_golden():
    shared = os.environ.get("ACTORLLM_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
    d = os.path.join(shared, "models", "stories260K")
    if not os.path.exists(os.path.join(d, "golden_greedy.json")):
        print("stories260K: not found, skipped")
        return
    print("stories260K:")
    with open(os.path.join(d, "golden_greedy.json")) as f:
        golden = json.load(f)
    prompt, want = golden["prompt_token_ids"], golden["output_token_ids"]
    r = rf.run(d, prompt if isinstance(prompt, list) else [prompt], len(want))
    check(r["tokens"] == want, f"llama: reproduces the {len(want)} golden greedy tokens")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", action="append", choices=ARCHS, help="only these archs (and skip the feature checks)")
    ap.add_argument("--keep", help="write the models and outputs here instead of a temporary directory")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        dirs = {}
        for arch in args.arch or ARCHS:
            dirs[arch], _ = check_arch(tmp, arch)
        if not args.arch:
            check_features(tmp, dirs)
            check_rope(tmp)
            check_dtypes(tmp)
            check_golden()
    print(f"check_reference: {len(failures)} failure(s)" + "".join("\n  " + f for f in failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes a random PEFT LoRA adapter for a model folder (adapter_config.json and
adapter_model.safetensors, as PEFT saves them), and with --merged the base model with the
adapter merged into its weights (W + lora_alpha / r * B @ A): the plain model an adapter's
outputs are checked against, and a server's --lora-modules entry for tests and benchmarks.

  scripts/make_random_lora.py --base ../shared/models/stories260K --rank 8 --out /tmp/lora
  scripts/make_random_lora.py --base M --targets q_proj,down_proj --seed 3 --out A --merged M-A

--targets is a comma-separated list of q_proj k_proj v_proj o_proj gate_proj up_proj down_proj
(all seven by default). A and B are drawn with a standard deviation of --scale / sqrt(in) and
--scale / sqrt(r), large enough that the adapter changes the greedy tokens of a small model.
The merged folder holds float32 weights, config.json and the base folder's other files.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_random_model import write_safetensors  # noqa: E402  (float32 tensors as F32)

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def read_safetensors(path):
    """name -> float32 array (F32, F16, BF16)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw, dtype = data[begin:end], info["dtype"]
        if dtype == "F32":
            a = np.frombuffer(raw, "<f4")
        elif dtype == "F16":
            a = np.frombuffer(raw, "<f2").astype(np.float32)
        elif dtype == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view("<f4")
        else:
            sys.exit(f"make_random_lora: {name}: dtype {dtype} is not a float")
        tensors[name] = a.astype(np.float32).reshape(info["shape"])
    return tensors


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="model folder (config.json, model.safetensors)")
    ap.add_argument("--rank", type=int, default=8)
    ap.add_argument("--alpha", type=float, default=16.0)
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="adapter folder to write")
    ap.add_argument("--merged", help="also write the merged model to this folder")
    args = ap.parse_args()

    targets = [t for t in args.targets.split(",") if t]
    for t in targets:
        if t not in TARGETS:
            sys.exit(f"make_random_lora: unknown target {t}")
    with open(os.path.join(args.base, "config.json")) as f:
        config = json.load(f)
    weights = read_safetensors(os.path.join(args.base, "model.safetensors"))
    rng = np.random.default_rng(args.seed)
    scaling = args.alpha / args.rank

    adapter = {}
    for layer in range(config["num_hidden_layers"]):
        for t in targets:
            module = "mlp" if t in ("gate_proj", "up_proj", "down_proj") else "self_attn"
            name = f"model.layers.{layer}.{module}.{t}"
            w = weights[name + ".weight"]
            out_features, in_features = w.shape
            a = rng.standard_normal((args.rank, in_features)) * args.scale / np.sqrt(in_features)
            b = rng.standard_normal((out_features, args.rank)) * args.scale / np.sqrt(args.rank)
            a, b = a.astype(np.float32), b.astype(np.float32)
            adapter[f"base_model.model.{name}.lora_A.weight"] = a
            adapter[f"base_model.model.{name}.lora_B.weight"] = b
            weights[name + ".weight"] = (w.astype(np.float64) +
                                         scaling * (b.astype(np.float64) @ a.astype(np.float64))).astype(np.float32)

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "adapter_config.json"), "w") as f:
        json.dump({"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": args.base,
                   "r": args.rank, "lora_alpha": args.alpha, "target_modules": targets,
                   "lora_dropout": 0.0, "bias": "none", "fan_in_fan_out": False,
                   "use_rslora": False, "use_dora": False, "modules_to_save": None}, f, indent=2)
    write_safetensors(os.path.join(args.out, "adapter_model.safetensors"), adapter)

    if args.merged:
        os.makedirs(args.merged, exist_ok=True)
        for entry in os.listdir(args.base):
            source = os.path.join(args.base, entry)
            if entry != "model.safetensors" and os.path.isfile(source):
                shutil.copyfile(source, os.path.join(args.merged, entry))
        write_safetensors(os.path.join(args.merged, "model.safetensors"), weights)


if __name__ == "__main__":
    main()

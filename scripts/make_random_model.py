#!/usr/bin/env python3
"""Writes a random-weight Llama model in Hugging Face layout (config.json, model.safetensors,
tokenizer.json copied from a reference tokenizer) for benchmarks.

  scripts/make_random_model.py --shape 15M  --out models-random/llama-15M
  scripts/make_random_model.py --shape 110M --out models-random/llama-110M
  scripts/make_random_model.py --dim 128 --layers 2 --heads 4 --kv-heads 2 --hidden 344 --vocab 512 --out /tmp/m

Shapes follow llama2.c's TinyStories models. The tokenizer (32000 tokens, Llama-2) comes from
ACTORLLM_SHARED_DIR/tokenizers/llama2 when the vocabulary is 32000, else from stories260K.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import numpy as np

SHAPES = {
    "15M": dict(dim=288, layers=6, heads=6, kv_heads=6, hidden=768, vocab=32000, max_pos=256),
    "110M": dict(dim=768, layers=12, heads=12, kv_heads=12, hidden=2048, vocab=32000, max_pos=1024),
}


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, array in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for array in tensors.values():
            f.write(np.ascontiguousarray(array, dtype="<f4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=sorted(SHAPES))
    for flag in ("dim", "layers", "heads", "kv-heads", "hidden", "vocab", "max-pos"):
        ap.add_argument("--" + flag, type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    shape = dict(SHAPES[args.shape]) if args.shape else dict(kv_heads=None, max_pos=512)
    for key in ("dim", "layers", "heads", "kv_heads", "hidden", "vocab", "max_pos"):
        value = getattr(args, key)
        if value is not None:
            shape[key] = value
    missing = [k for k in ("dim", "layers", "heads", "hidden", "vocab") if k not in shape]
    if missing:
        sys.exit("make_random_model: give --shape or all of --dim --layers --heads --hidden --vocab")
    if shape.get("kv_heads") is None:
        shape["kv_heads"] = shape["heads"]

    dim, layers, heads, kv_heads = shape["dim"], shape["layers"], shape["heads"], shape["kv_heads"]
    hidden, vocab, head_dim = shape["hidden"], shape["vocab"], dim // shape["heads"]
    rng = np.random.default_rng(args.seed)

    def weight(*dims):
        return (rng.standard_normal(dims, dtype=np.float32) / np.sqrt(dims[-1])).astype(np.float32)

    tensors = {"model.embed_tokens.weight": weight(vocab, dim)}
    for l in range(layers):
        p = f"model.layers.{l}."
        tensors[p + "input_layernorm.weight"] = np.ones(dim, np.float32)
        tensors[p + "self_attn.q_proj.weight"] = weight(heads * head_dim, dim)
        tensors[p + "self_attn.k_proj.weight"] = weight(kv_heads * head_dim, dim)
        tensors[p + "self_attn.v_proj.weight"] = weight(kv_heads * head_dim, dim)
        tensors[p + "self_attn.o_proj.weight"] = weight(dim, heads * head_dim)
        tensors[p + "post_attention_layernorm.weight"] = np.ones(dim, np.float32)
        tensors[p + "mlp.gate_proj.weight"] = weight(hidden, dim)
        tensors[p + "mlp.up_proj.weight"] = weight(hidden, dim)
        tensors[p + "mlp.down_proj.weight"] = weight(dim, hidden)
    tensors["model.norm.weight"] = np.ones(dim, np.float32)

    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": dim, "intermediate_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "vocab_size": vocab,
        "max_position_embeddings": shape["max_pos"], "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
        "hidden_act": "silu", "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2,
        "torch_dtype": "float32",
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    shared = os.environ.get("ACTORLLM_SHARED_DIR",
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))
    source = (os.path.join(shared, "tokenizers", "llama2", "tokenizer.json") if vocab == 32000
              else os.path.join(shared, "models", "stories260K", "tokenizer.json"))
    if os.path.exists(source) and (vocab in (32000, 512)):
        shutil.copy(source, os.path.join(args.out, "tokenizer.json"))
    print(f"make_random_model: wrote {args.out} ({sum(t.size for t in tensors.values()) / 1e6:.1f}M parameters)")


if __name__ == "__main__":
    main()

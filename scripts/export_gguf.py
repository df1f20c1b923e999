#!/usr/bin/env python3
"""Writes a Llama checkpoint (config.json + safetensors + tokenizer.json) as a GGUF file, so
that llama.cpp can run the same weights beside actorllm in the benchmarks (bench/README.md,
"Against llama.cpp"). numpy only.

  scripts/export_gguf.py MODEL_DIR OUT.gguf [--dtype f32|f16|bf16]

What it writes, from the GGUF specification (version 3):
- the header ("GGUF", version, tensor and key counts), the metadata keys of the "llama"
  architecture, then each tensor's name, dimensions (fastest first: an HF (out, in) matrix is
  [in, out]), type and offset, and the tensor data aligned to 32 bytes;
- the tensors under llama.cpp's names (token_embd, blk.N.attn_q, ..., output_norm, output),
  with q_proj and k_proj rows reordered from HF's rotate-half layout to the interleaved pairs
  that llama.cpp's RoPE rotates (the reorder llama.cpp's own converter applies);
- the vocabulary as a "llama" (SentencePiece) tokenizer: the tokens of tokenizer.json, byte
  tokens <0xNN> typed as bytes, the specials as control tokens, and scores falling with the
  token id. The scores only order merges, which token-id benchmarks never use: text
  tokenized by llama.cpp from this file may differ from ours.

Only LlamaForCausalLM (and Mistral's identical layout) without biases is handled; anything
else is refused by name.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

ALIGNMENT = 32
GGML_TYPES = {"f32": (0, np.float32), "f16": (1, np.float16), "bf16": (30, None)}
FILE_TYPES = {"f32": 0, "f16": 1, "bf16": 32}
# GGUF metadata value types.
UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_BYTE = 1, 2, 3, 6


def read_safetensors(model_dir):
    """name -> float32 array, from every *.safetensors file of the folder."""
    tensors = {}
    names = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
    if not names:
        sys.exit(f"export_gguf: no .safetensors file in {model_dir}")
    for file_name in names:
        with open(os.path.join(model_dir, file_name), "rb") as f:
            header_len = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(header_len))
            data = f.read()
        for name, info in header.items():
            if name == "__metadata__":
                continue
            begin, end = info["data_offsets"]
            raw = data[begin:end]
            if info["dtype"] == "F32":
                array = np.frombuffer(raw, dtype="<f4")
            elif info["dtype"] == "F16":
                array = np.frombuffer(raw, dtype="<f2").astype(np.float32)
            elif info["dtype"] == "BF16":
                array = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
            else:
                sys.exit(f"export_gguf: tensor {name} is {info['dtype']}; only F32, F16 and BF16 "
                         "checkpoints are exported (quantize with llama-quantize)")
            tensors[name] = array.reshape(info["shape"])
    return tensors


def rotate_half_to_pairs(weight, heads):
    """Rows of q_proj / k_proj from HF's layout (each head's first half of dimensions, then
    its second) to llama.cpp's (dimension pairs side by side)."""
    out, cols = weight.shape
    return (weight.reshape(heads, 2, out // heads // 2, cols)
            .swapaxes(1, 2).reshape(out, cols))


def llama_tensors(config, tensors):
    """(gguf name, float32 array) in file order."""
    heads, kv_heads = config["num_attention_heads"], config.get("num_key_value_heads")
    kv_heads = kv_heads or heads
    out = [("token_embd.weight", tensors["model.embed_tokens.weight"])]
    for i in range(config["num_hidden_layers"]):
        p = f"model.layers.{i}."
        names = {
            "attn_norm": p + "input_layernorm.weight",
            "attn_q": p + "self_attn.q_proj.weight",
            "attn_k": p + "self_attn.k_proj.weight",
            "attn_v": p + "self_attn.v_proj.weight",
            "attn_output": p + "self_attn.o_proj.weight",
            "ffn_norm": p + "post_attention_layernorm.weight",
            "ffn_gate": p + "mlp.gate_proj.weight",
            "ffn_up": p + "mlp.up_proj.weight",
            "ffn_down": p + "mlp.down_proj.weight",
        }
        for short, hf in names.items():
            if hf not in tensors:
                sys.exit(f"export_gguf: missing tensor {hf}")
            w = tensors[hf]
            if short == "attn_q":
                w = rotate_half_to_pairs(w, heads)
            elif short == "attn_k":
                w = rotate_half_to_pairs(w, kv_heads)
            out.append((f"blk.{i}.{short}.weight", w))
    out.append(("output_norm.weight", tensors["model.norm.weight"]))
    if not config.get("tie_word_embeddings", False):
        out.append(("output.weight", tensors["lm_head.weight"]))
    return out


def vocabulary(tokenizer):
    """(tokens, scores, types, special ids) of tokenizer.json as a "llama" vocabulary."""
    model = tokenizer["model"]
    if model.get("type") != "BPE" or not model.get("byte_fallback"):
        sys.exit("export_gguf: only byte-fallback BPE vocabularies (Llama 2 / SentencePiece "
                 "style) are exported")
    size = max(model["vocab"].values()) + 1
    tokens = [f"[PAD{i}]" for i in range(size)]
    for piece, token_id in model["vocab"].items():
        tokens[token_id] = piece
    specials = {t["id"]: t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    types = []
    for token_id, piece in enumerate(tokens):
        if token_id in specials:
            types.append(TOKEN_UNKNOWN if piece == model.get("unk_token") else TOKEN_CONTROL)
        elif len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
            types.append(TOKEN_BYTE)
        else:
            types.append(TOKEN_NORMAL)
    scores = [-float(i) for i in range(size)]
    return tokens, scores, types


class gguf_writer:
    def __init__(self):
        self.keys = []

    def key(self, name, value_type, value):
        self.keys.append((name, value_type, value))

    @staticmethod
    def string(text):
        data = text.encode("utf-8")
        return struct.pack("<Q", len(data)) + data

    def value(self, value_type, value):
        if value_type == UINT32:
            return struct.pack("<I", value)
        if value_type == INT32:
            return struct.pack("<i", value)
        if value_type == FLOAT32:
            return struct.pack("<f", value)
        if value_type == BOOL:
            return struct.pack("<?", value)
        if value_type == STRING:
            return self.string(value)
        item_type, items = value
        return (struct.pack("<IQ", item_type, len(items)) +
                b"".join(self.value(item_type, v) for v in items))

    def write(self, path, tensors, dtype):
        ggml_type, numpy_type = GGML_TYPES[dtype]
        blobs = []
        for _, w in tensors:
            if w.ndim == 1 or dtype == "f32":  # norms stay float32, as llama.cpp keeps them
                blobs.append((0, np.ascontiguousarray(w, dtype=np.float32).tobytes()))
            elif dtype == "bf16":
                bits = np.ascontiguousarray(w, dtype=np.float32).view(np.uint32)
                rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
                blobs.append((ggml_type, rounded.tobytes()))
            else:
                blobs.append((ggml_type, np.ascontiguousarray(w, dtype=numpy_type).tobytes()))
        with open(path, "wb") as f:
            f.write(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(self.keys)))
            for name, value_type, value in self.keys:
                f.write(self.string(name) + struct.pack("<I", value_type))
                f.write(self.value(value_type, value))
            offset = 0
            for (name, w), (blob_type, blob) in zip(tensors, blobs):
                dims = list(reversed(w.shape))
                f.write(self.string(name) + struct.pack("<I", len(dims)))
                f.write(struct.pack(f"<{len(dims)}Q", *dims))
                f.write(struct.pack("<IQ", blob_type, offset))
                offset += (len(blob) + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
            f.write(b"\0" * (-f.tell() % ALIGNMENT))
            for _, blob in blobs:
                f.write(blob)
                f.write(b"\0" * (-len(blob) % ALIGNMENT))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("out")
    parser.add_argument("--dtype", choices=sorted(GGML_TYPES), default="f32")
    args = parser.parse_args()
    with open(os.path.join(args.model_dir, "config.json")) as f:
        config = json.load(f)
    architectures = config.get("architectures", [])
    if architectures not in (["LlamaForCausalLM"], ["MistralForCausalLM"]):
        sys.exit(f"export_gguf: architecture {architectures} is not exported (Llama only)")
    with open(os.path.join(args.model_dir, "tokenizer.json")) as f:
        tokenizer = json.load(f)
    tensors = llama_tensors(config, read_safetensors(args.model_dir))
    tokens, scores, types = vocabulary(tokenizer)
    heads = config["num_attention_heads"]
    w = gguf_writer()
    w.key("general.architecture", STRING, "llama")
    w.key("general.name", STRING, os.path.basename(os.path.normpath(args.model_dir)))
    w.key("general.file_type", UINT32, FILE_TYPES[args.dtype])
    w.key("llama.context_length", UINT32, config.get("max_position_embeddings", 2048))
    w.key("llama.embedding_length", UINT32, config["hidden_size"])
    w.key("llama.block_count", UINT32, config["num_hidden_layers"])
    w.key("llama.feed_forward_length", UINT32, config["intermediate_size"])
    w.key("llama.attention.head_count", UINT32, heads)
    w.key("llama.attention.head_count_kv", UINT32, config.get("num_key_value_heads") or heads)
    w.key("llama.attention.layer_norm_rms_epsilon", FLOAT32, config.get("rms_norm_eps", 1e-5))
    w.key("llama.rope.freq_base", FLOAT32, config.get("rope_theta", 10000.0))
    w.key("llama.rope.dimension_count", UINT32, config["hidden_size"] // heads)
    w.key("llama.vocab_size", UINT32, len(tokens))
    w.key("tokenizer.ggml.model", STRING, "llama")
    w.key("tokenizer.ggml.tokens", ARRAY, (STRING, tokens))
    w.key("tokenizer.ggml.scores", ARRAY, (FLOAT32, scores))
    w.key("tokenizer.ggml.token_type", ARRAY, (INT32, types))
    for key, config_key in (("bos", "bos_token_id"), ("eos", "eos_token_id")):
        if isinstance(config.get(config_key), int):
            w.key(f"tokenizer.ggml.{key}_token_id", UINT32, config[config_key])
    unk = tokenizer["model"].get("unk_token")
    if unk in tokenizer["model"]["vocab"]:
        w.key("tokenizer.ggml.unknown_token_id", UINT32, tokenizer["model"]["vocab"][unk])
    w.write(args.out, tensors, args.dtype)
    print(f"export_gguf: {len(tensors)} tensors, {len(tokens)} tokens -> {args.out} ({args.dtype})")


if __name__ == "__main__":
    main()

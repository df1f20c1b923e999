#!/usr/bin/env python3
"""Writes a random-weight model in Hugging Face layout (config.json, model.safetensors,
tokenizer.json copied from a reference tokenizer) for benchmarks and model-family tests.

  scripts/make_random_model.py --shape 15M  --out models-random/llama-15M
  scripts/make_random_model.py --shape 110M --out models-random/llama-110M
  scripts/make_random_model.py --dim 128 --layers 2 --heads 4 --kv-heads 2 --hidden 344 --vocab 512 --out /tmp/m
  scripts/make_random_model.py --arch qwen3 --out /tmp/qwen3
  scripts/make_random_model.py --arch phi3 --rope-scaling longrope --out /tmp/phi3-long
  scripts/make_random_model.py --arch mistral --sliding-window 8 --generation-config '{"do_sample": false}' --out /tmp/m

--arch is one of: llama (the default; the benchmark models, unchanged), llama-tied (Llama 3.2
style), mistral, qwen2, qwen3, phi3, gemma, gemma2, gemma3 (text only, model_type gemma3_text),
mixtral, qwen2_moe, qwen3_moe. Tensor names and config.json keys are those of the published
checkpoints of each family; shapes default to a tiny model per family (see ARCHS) that every
shape flag overrides.

--quantize fp8-channel / fp8-tensor writes the layers' projections as float8 E4M3 with a
weight_scale per output channel or per tensor, in compressed-tensors' layout and
quantization_config (the rest in --dtype):

  scripts/make_random_model.py --dtype bf16 --quantize fp8-channel --out /tmp/m-fp8

--quantize gptq4 / gptq8 / gptq4-act / awq4 / w4a16 / w8a16 writes them as integer codes by
round-to-nearest from the float weights, with --group-size input features per scale (128 by
default; -1: one scale per output channel), in the tensors and quantization_config a real
checkpoint of each has: GPTQ (AutoGPTQ's format, symmetric; gptq4-act with desc_act and a
random g_idx), AWQ's GEMM layout (asymmetric, zero points per group), compressed-tensors
pack-quantized (symmetric, weights only; the scales in --dtype, float16 for f32):

  scripts/make_random_model.py --dtype f16 --quantize gptq4 --group-size 64 --out /tmp/m-gptq

--rope-scaling takes a JSON object (written to config.json as given; a longrope object without
short_factor/long_factor gets generated lists), "none", or one of the presets linear, dynamic,
yarn, llama3, longrope, sized so that a 60-token sequence exercises them (max_position_embeddings
128; dynamic also lowers it to 32 unless --max-pos is given, since dynamic NTK only acts past it;
longrope puts original_max_position_embeddings = max_pos / 4 at the top level, as Phi-3 does).

Shapes of the llama arch follow llama2.c's TinyStories models. The tokenizer (32000 tokens,
Llama-2) comes from ACTORLLM_SHARED_DIR/tokenizers/llama2 when the vocabulary is 32000, else from
stories260K (512 tokens, bos 1, eos 2, which every arch's config uses).
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

# Per family: HF class, model_type and the default tiny shape. head_dim None = dim // heads.
_SMALL = dict(dim=64, layers=2, heads=4, kv_heads=2, head_dim=None, hidden=192, vocab=512, max_pos=128)
ARCHS = {
    "llama-tied": dict(_SMALL, cls="LlamaForCausalLM", model_type="llama", head_dim=16, hidden=176,
                       rope_theta=500000.0, tie=True, rope_scaling="llama3"),
    "mistral": dict(_SMALL, cls="MistralForCausalLM", model_type="mistral", head_dim=16,
                    rope_theta=10000.0, tie=False, sliding_window=16),
    "qwen2": dict(_SMALL, cls="Qwen2ForCausalLM", model_type="qwen2", rope_theta=1000000.0, tie=False),
    "qwen3": dict(_SMALL, cls="Qwen3ForCausalLM", model_type="qwen3", head_dim=32, rope_theta=1000000.0,
                  tie=True),
    "phi3": dict(_SMALL, cls="Phi3ForCausalLM", model_type="phi3", rope_theta=10000.0, tie=False),
    "gemma": dict(_SMALL, cls="GemmaForCausalLM", model_type="gemma", head_dim=32, rope_theta=10000.0,
                  tie=True),
    "gemma2": dict(_SMALL, cls="Gemma2ForCausalLM", model_type="gemma2", layers=4, head_dim=32,
                   rope_theta=10000.0, tie=True, sliding_window=16, query_pre_attn_scalar=24,
                   attn_softcap=5.0, final_softcap=15.0),
    "gemma3": dict(_SMALL, cls="Gemma3ForCausalLM", model_type="gemma3_text", layers=4, head_dim=32,
                   rope_theta=1000000.0, tie=True, sliding_window=16, query_pre_attn_scalar=32,
                   sliding_window_pattern=3, rope_local_base_freq=10000.0,
                   rope_scaling={"factor": 8.0, "rope_type": "linear"}),
    "mixtral": dict(_SMALL, cls="MixtralForCausalLM", model_type="mixtral", hidden=128, rope_theta=1000000.0,
                    tie=False, experts=8, experts_per_tok=2),
    "qwen2_moe": dict(_SMALL, cls="Qwen2MoeForCausalLM", model_type="qwen2_moe", layers=3, rope_theta=1000000.0,
                      tie=False, experts=8, experts_per_tok=4, moe_hidden=64, shared_hidden=128,
                      mlp_only_layers=[1], decoder_sparse_step=1, norm_topk_prob=False),
    "qwen3_moe": dict(_SMALL, cls="Qwen3MoeForCausalLM", model_type="qwen3_moe", head_dim=32,
                      rope_theta=1000000.0, tie=False, experts=8, experts_per_tok=3, moe_hidden=64,
                      mlp_only_layers=[], decoder_sparse_step=1, norm_topk_prob=True),
}
GEMMA = ("gemma", "gemma2", "gemma3")
SANDWICH = ("gemma2", "gemma3")  # norms after each half of a layer too
QWEN = ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe")
# Weight scales: q and k twice the unit scale (sharper attention, so position matters), Gemma's
# post-attention and post-feed-forward norms near 3 (so the tied embedding does not dominate the
# residual), and a final norm near 4 (logits of spread ~4, so greedy top-1 margins are rarely tiny).
QK_GAIN, POST_GAIN, FINAL_GAIN = 2.0, 3.0, 4.0
DTYPES = {"f32": ("F32", "float32"), "f16": ("F16", "float16"), "bf16": ("BF16", "bfloat16")}
INTEGER_SCHEMES = ["gptq4", "gptq8", "gptq4-act", "awq4", "w4a16", "w8a16"]


def bf16_bits(a):
    """float32 values as bfloat16 bit patterns, rounded to nearest even."""
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def round_to(a, dtype):
    """float32 values rounded to the float dtype ("F32", "F16", "BF16") and widened back."""
    a = np.asarray(a, dtype=np.float32)
    if dtype == "F16":
        return a.astype(np.float16).astype(np.float32)
    if dtype == "BF16":
        return (bf16_bits(a).astype(np.uint32) << 16).view(np.float32)
    return a


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    """Writes tensors (float32 arrays) as F32, F16 or BF16 (round to nearest even). A tensor
    given as an (array, dtype) pair is written as that dtype instead: "F32", "F16", "BF16",
    "F8_E4M3" for a uint8 array of float8 codes (see quantize_fp8), or "I32" / "I64" for
    integers (packed codes, g_idx, weight_shape)."""
    blobs, dtypes = {}, {}
    for name, array in tensors.items():
        dtypes[name] = dtype
        if isinstance(array, tuple):
            array, dtypes[name] = array
        kind = dtypes[name]
        if kind == "F8_E4M3":
            blobs[name] = np.ascontiguousarray(array, dtype=np.uint8).tobytes()
        elif kind in ("I32", "I64"):
            blobs[name] = np.ascontiguousarray(array, dtype="<i4" if kind == "I32" else "<i8").tobytes()
        elif kind == "F16":
            blobs[name] = np.ascontiguousarray(array, dtype="<f4").astype("<f2").tobytes()
        elif kind == "BF16":
            blobs[name] = bf16_bits(array).tobytes()
        else:
            blobs[name] = np.ascontiguousarray(array, dtype="<f4").tobytes()
    header, offset = ({"__metadata__": metadata} if metadata else {}), 0
    for name, array in tensors.items():
        shape = list((array[0] if isinstance(array, tuple) else array).shape)
        header[name] = {"dtype": dtypes[name], "shape": shape,
                        "data_offsets": [offset, offset + len(blobs[name])]}
        offset += len(blobs[name])
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for data in blobs.values():
            f.write(data)


def e4m3_values():
    """The 127 non-negative finite values of float8 E4M3FN by code (0x00 - 0x7e): sign, 4
    exponent bits biased by 7, 3 mantissa bits; exponent 0 is subnormal (m / 8 * 2^-6); 0x7f
    is NaN and there are no infinities (the OCP 8-bit floating point specification)."""
    codes = np.arange(0x7F)
    e, m = codes >> 3, codes & 7
    return np.where(e == 0, m / 8.0 * 2.0**-6, (1 + m / 8.0) * 2.0 ** (e - 7))


def quantize_fp8(w, strategy):
    """w (out, in) as float8 E4M3 codes and float32 scales, as compressed-tensors' FP8 format
    lays them out: scale = max |w| / 448 per output channel ((out, 1)) or per tensor ((1,)),
    code = the E4M3 value nearest to w / scale (ties to the even code), saturated at 448."""
    w = np.asarray(w, dtype=np.float32)
    amax = np.abs(w).max(axis=1, keepdims=True) if strategy == "channel" else np.abs(w).max().reshape(1)
    scale = (np.maximum(amax, 1e-12) / np.float32(448.0)).astype(np.float32)
    x = np.abs(w / (scale if strategy == "channel" else scale[0])).astype(np.float64)
    values = e4m3_values()
    x = np.minimum(x, 448.0)
    i = np.clip(np.searchsorted(values, x), 1, 0x7E)
    lo, hi = values[i - 1], values[i]
    up = (hi - x < x - lo) | ((hi - x == x - lo) & (i % 2 == 0))
    codes = np.where(up, i, i - 1).astype(np.uint8)
    codes |= np.where(w < 0, 0x80, 0).astype(np.uint8)
    return codes, scale


def quantize_linears(tensors, strategy):
    """Every projection of the decoder layers (not the embedding, the LM head, norms or
    routers) as float8 with its weight_scale, and the compressed-tensors quantization_config
    that describes them (weights only: no input_activations, as a W8A16 checkpoint)."""
    out = {}
    for name, w in tensors.items():
        if name.startswith("model.layers.") and name.endswith("_proj.weight") and w.ndim == 2:
            codes, scale = quantize_fp8(w, strategy)
            out[name] = (codes, "F8_E4M3")
            out[name[: -len("weight")] + "weight_scale"] = (scale, "F32")
        else:
            out[name] = w
    config = {
        "quant_method": "compressed-tensors", "format": "float-quantized",
        "config_groups": {"group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "float", "symmetric": True, "strategy": strategy,
                        "dynamic": False}}},
        "ignore": ["lm_head"],
    }
    return out, config


def pack_int32(codes, bits, axis):
    """Unsigned codes (< 2^bits) packed 32 / bits to an int32 along `axis` (0 or 1), the
    first in the lowest bits (GPTQ's and compressed-tensors' order); zero-padded to a whole
    int32."""
    per_word = 32 // bits
    c = np.asarray(codes, dtype=np.uint32)
    if axis == 0:
        c = c.T
    pad = -c.shape[1] % per_word
    c = np.pad(c, ((0, 0), (0, pad)))
    c = c.reshape(c.shape[0], -1, per_word)
    packed = np.zeros(c.shape[:2], dtype=np.uint32)
    for i in range(per_word):
        packed |= c[:, :, i] << np.uint32(bits * i)
    packed = packed.view(np.int32)
    return packed.T.copy() if axis == 0 else packed


def groups_of(w, group_size, order=None):
    """w (out, in) with its input features in `order` (default: as they are), cut into groups
    of group_size (-1: one group): (out, groups, group_size)."""
    out, cols = w.shape
    size = cols if group_size == -1 else group_size
    if cols % size:
        sys.exit(f"make_random_model: --group-size {group_size} does not divide {cols} input features")
    wo = w if order is None else w[:, order]
    return wo.reshape(out, cols // size, size), size


def quantize_gptq(w, bits, group_size, rng, act_order):
    """AutoGPTQ's symmetric quantizer by round to nearest: per output feature and group,
    scale = 2 max |w| / (2^bits - 1) (2 / (2^bits - 1) for a group of zeros), zero 2^(bits-1),
    code = clamp(round(w / scale) + zero, 0, 2^bits - 1) with the scale as stored (float16).
    act_order: the input features are taken in a random order (as desc_act's Hessian order
    would), group j being order[j * size : (j + 1) * size]; g_idx gives each feature's group.
    Tensors as AutoGPTQ packs them: qweight (in * bits / 32, out) along the input features,
    qzeros (groups, out * bits / 32) holding zero - 1 along the output features, scales
    (groups, out) float16, g_idx (in) int32."""
    out, cols = w.shape
    maxq = 2**bits - 1
    order = rng.permutation(cols) if act_order else np.arange(cols)
    grouped, size = groups_of(w, group_size, order)
    xmax = np.abs(grouped).max(axis=2)
    scale = np.where(xmax == 0, 2.0, 2.0 * xmax) / maxq
    scale16 = scale.astype(np.float16).astype(np.float32)  # (out, groups)
    zero = (maxq + 1) // 2
    g_idx = np.empty(cols, dtype=np.int32)
    g_idx[order] = np.arange(cols) // size
    codes = np.clip(np.round(w / scale16[:, g_idx]) + zero, 0, maxq).astype(np.uint32)  # (out, in)
    zeros = np.full(scale.shape, zero - 1, dtype=np.uint32)  # (out, groups)
    return {"qweight": (pack_int32(codes.T, bits, 0), "I32"),
            "qzeros": (pack_int32(zeros.T, bits, 1), "I32"),
            "scales": (scale16.T.copy(), "F16"),
            "g_idx": (g_idx, "I32")}


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble i of an int32 holds column AWQ_ORDER[i] of its 8


def pack_awq(values):
    """(rows, cols) nibbles as AWQ's GEMM layout packs them: (rows, cols / 8) int32."""
    v = np.asarray(values, dtype=np.uint32).reshape(values.shape[0], -1, 8)
    packed = np.zeros(v.shape[:2], dtype=np.uint32)
    for i, column in enumerate(AWQ_ORDER):
        packed |= v[:, :, column] << np.uint32(4 * i)
    return packed.view(np.int32)


def quantize_awq(w, group_size):
    """AutoAWQ's zero-point quantizer by round to nearest (no activation-aware scaling): per
    output feature and group, scale = max(max - min, 1e-5) / 15, zero = clamp(round(-min /
    scale), 0, 15), code = clamp(round(w / scale) + zero, 0, 15) with the scale as stored
    (float16). Tensors in the GEMM layout: qweight (in, out / 8), qzeros (groups, out / 8),
    scales (groups, out) float16."""
    grouped, size = groups_of(w, group_size)
    hi, lo = grouped.max(axis=2), grouped.min(axis=2)
    scale = np.maximum(hi - lo, 1e-5) / 15.0
    scale16 = scale.astype(np.float16).astype(np.float32)
    zero = np.clip(np.round(-lo / scale16), 0, 15)
    codes = np.clip(np.round(grouped / scale16[:, :, None]) + zero[:, :, None], 0, 15)
    codes = codes.reshape(w.shape).astype(np.uint32)
    return {"qweight": (pack_awq(codes.T), "I32"),
            "qzeros": (pack_awq(zero.T.astype(np.uint32)), "I32"),
            "scales": (scale16.T.copy(), "F16")}


def quantize_pack(w, bits, group_size, scale_dtype):
    """compressed-tensors' symmetric integer quantizer (minmax observer) by round to nearest:
    per output feature and group, scale = max |w| / ((2^bits - 1) / 2), stored in the model's
    dtype, q = clamp(round(w / scale), -2^(bits-1), 2^(bits-1) - 1) (0 for a group of zeros);
    packed as pack_to_int32 does: q + 2^(bits-1) along the input features, first in the
    lowest bits. Tensors: weight_packed (out, ceil(in * bits / 32)) int32, weight_scale (out,
    groups), weight_shape (2) int64."""
    grouped, size = groups_of(w, group_size)
    scale = round_to(np.abs(grouped).max(axis=2) / ((2**bits - 1) / 2.0), scale_dtype)
    half = 2 ** (bits - 1)
    safe = np.where(scale == 0, 1.0, scale)
    q = np.clip(np.round(grouped / safe[:, :, None]), -half, half - 1)
    q = np.where(scale[:, :, None] == 0, 0, q).reshape(w.shape)
    return {"weight_packed": (pack_int32((q + half).astype(np.uint32), bits, 1), "I32"),
            "weight_scale": (scale, scale_dtype),
            "weight_shape": (np.array(w.shape, dtype=np.int64), "I64")}


def quantize_integer(tensors, scheme, group_size, dtype, seed):
    """Every projection of the decoder layers (as quantize_linears chooses them) as `scheme`
    lays it out, and that scheme's quantization_config."""
    rng = np.random.default_rng(seed + 1)
    out, orders = {}, {}
    for name, w in tensors.items():
        if not (name.startswith("model.layers.") and name.endswith("_proj.weight") and w.ndim == 2):
            out[name] = w
            continue
        prefix = name[: -len(".weight")]
        if scheme in ("gptq4", "gptq8", "gptq4-act"):
            # desc_act: projections that read the same input (q k v; gate up) share one order,
            # as GPTQ's Hessian of that input gives them.
            block, proj = prefix.rsplit(".", 1)
            key = (block, proj if proj in ("o_proj", "down_proj") else "input")
            orders.setdefault(key, int(rng.integers(2**32)))
            parts = quantize_gptq(w, 8 if scheme == "gptq8" else 4, group_size,
                                  np.random.default_rng(orders[key]), scheme == "gptq4-act")
        elif scheme == "awq4":
            parts = quantize_awq(w, group_size)
        else:
            parts = quantize_pack(w, 4 if scheme == "w4a16" else 8, group_size, dtype)
        for suffix, value in parts.items():
            out[prefix + "." + suffix] = value
    bits = 8 if scheme in ("gptq8", "w8a16") else 4
    if scheme.startswith("gptq"):
        config = {"bits": bits, "checkpoint_format": "gptq", "damp_percent": 0.01,
                  "desc_act": scheme == "gptq4-act", "group_size": group_size, "model_file_base_name": "model",
                  "quant_method": "gptq", "static_groups": False, "sym": True, "true_sequential": True}
    elif scheme == "awq4":
        config = {"bits": 4, "group_size": group_size, "modules_to_not_convert": None, "quant_method": "awq",
                  "version": "gemm", "zero_point": True}
    else:
        weights = {"actorder": None, "block_structure": None, "dynamic": False,
                   "group_size": None if group_size == -1 else group_size, "num_bits": bits,
                   "observer": "minmax", "observer_kwargs": {}, "strategy": "channel" if group_size == -1 else "group",
                   "symmetric": True, "type": "int"}
        config = {"config_groups": {"group_0": {"input_activations": None, "output_activations": None,
                                                "targets": ["Linear"], "weights": weights}},
                  "format": "pack-quantized", "global_compression_ratio": None, "ignore": ["lm_head"],
                  "kv_cache_scheme": None, "quant_method": "compressed-tensors",
                  "quantization_status": "compressed"}
    return out, config


def rope_preset(kind, rot_dim, max_pos):
    """A rope_scaling object of the given type that acts within a short test sequence."""
    if kind == "linear":
        return {"factor": 2.0, "rope_type": "linear"}
    if kind == "dynamic":
        return {"factor": 4.0, "rope_type": "dynamic"}
    if kind == "yarn":  # factor == max_pos / original, so either HF reading of factor agrees
        return {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0,
                "original_max_position_embeddings": max_pos // 4, "rope_type": "yarn"}
    if kind == "llama3":
        return {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                "original_max_position_embeddings": max_pos // 2, "rope_type": "llama3"}
    if kind == "longrope":
        return {"long_factor": longrope_factors(rot_dim, 8.0), "short_factor": longrope_factors(rot_dim, 1.5),
                "type": "longrope"}
    sys.exit(f"make_random_model: unknown rope scaling preset {kind!r}")


def longrope_factors(rot_dim, top):
    """rot_dim / 2 factors rising from 1 to top, the shape of Phi-3's lists."""
    return [round(float(x), 4) for x in np.geomspace(1.0, top, rot_dim // 2)]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="llama", choices=["llama"] + sorted(ARCHS))
    ap.add_argument("--shape", choices=sorted(SHAPES), help="llama only")
    for flag in ("dim", "layers", "heads", "kv-heads", "hidden", "vocab", "max-pos", "head-dim", "experts",
                 "experts-per-tok", "moe-hidden", "shared-hidden", "decoder-sparse-step", "max-window-layers",
                 "sliding-window-pattern", "original-max-pos"):
        ap.add_argument("--" + flag, type=int)
    ap.add_argument("--sliding-window", type=int, help="window size; 0 writes null")
    ap.add_argument("--use-sliding-window", action="store_true", help="Qwen families: turn sliding window on")
    ap.add_argument("--mlp-only-layers", help="comma-separated layer indices (qwen2_moe, qwen3_moe)")
    ap.add_argument("--norm-topk-prob", choices=["true", "false"])
    ap.add_argument("--tie-word-embeddings", choices=["true", "false"])
    ap.add_argument("--rope-theta", type=float)
    ap.add_argument("--rope-scaling", help="JSON object, 'none', or a preset: linear dynamic yarn llama3 longrope")
    ap.add_argument("--partial-rotary-factor", type=float)
    ap.add_argument("--query-pre-attn-scalar", type=float)
    ap.add_argument("--attn-logit-softcapping", type=float, help="gemma; 0 writes null")
    ap.add_argument("--final-logit-softcapping", type=float, help="gemma; 0 writes null")
    ap.add_argument("--generation-config", help="JSON object written as generation_config.json")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    ap.add_argument("--quantize", choices=["fp8-channel", "fp8-tensor"] + INTEGER_SCHEMES,
                    help="write the layers' projections as float8 E4M3 with per-channel or per-tensor "
                         "scales (compressed-tensors), or as GPTQ, AWQ or compressed-tensors "
                         "pack-quantized integer codes; the rest in --dtype")
    ap.add_argument("--group-size", type=int, default=128,
                    help="integer --quantize: input features per scale, -1 for one per output channel")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    return ap.parse_args()


def llama_model(args):
    """The benchmark Llama, byte for byte as it has always been written."""
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
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": dim, "intermediate_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "vocab_size": vocab,
        "max_position_embeddings": shape["max_pos"], "rms_norm_eps": 1e-5,
        "rope_theta": args.rope_theta if args.rope_theta is not None else 10000.0,
        "hidden_act": "silu", "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2,
        "torch_dtype": "float32",
    }
    if args.rope_scaling is not None:
        config["rope_scaling"] = rope_scaling_arg(args.rope_scaling, head_dim, config["max_position_embeddings"])
    return tensors, config, None


def rope_scaling_arg(text, rot_dim, max_pos):
    if text.strip() in ("none", "null"):
        return None
    if text.strip().startswith("{"):
        value = json.loads(text)
        kind = value.get("rope_type", value.get("type"))
        if kind in ("longrope", "su"):
            value.setdefault("short_factor", longrope_factors(rot_dim, 1.5))
            value.setdefault("long_factor", longrope_factors(rot_dim, 8.0))
        return value
    return rope_preset(text.strip(), rot_dim, max_pos)


def family_model(args):
    arch = args.arch
    s = dict(ARCHS[arch])
    for key in ("dim", "layers", "heads", "kv_heads", "hidden", "vocab", "max_pos", "head_dim", "experts",
                "experts_per_tok", "moe_hidden", "shared_hidden", "decoder_sparse_step", "sliding_window_pattern"):
        value = getattr(args, key)
        if value is not None:
            s[key] = value
    if args.kv_heads is None and args.heads is not None and s["heads"] % s["kv_heads"]:
        s["kv_heads"] = s["heads"]
    dim, layers, heads, kv_heads, vocab = s["dim"], s["layers"], s["heads"], s["kv_heads"], s["vocab"]
    head_dim = s["head_dim"] or dim // heads
    hidden = s["hidden"]
    tie = s["tie"] if args.tie_word_embeddings is None else args.tie_word_embeddings == "true"
    gemma, moe = arch in GEMMA, "experts" in s
    partial = args.partial_rotary_factor if args.partial_rotary_factor is not None else 1.0
    rot_dim = int(head_dim * partial)

    rope_scaling = s.get("rope_scaling")
    if args.rope_scaling is not None:
        preset = args.rope_scaling.strip()
        if preset == "dynamic" and args.max_pos is None:
            s["max_pos"] = 32
        rope_scaling = rope_scaling_arg(args.rope_scaling, rot_dim, s["max_pos"])
    elif isinstance(rope_scaling, str):
        rope_scaling = rope_preset(rope_scaling, rot_dim, s["max_pos"])
    max_pos = s["max_pos"]
    # Phi-3 keeps the pretrained context as a top-level original_max_position_embeddings; the
    # longrope preset sets it to max_pos / 4 (for any family) so short and long factors both occur.
    original_max_pos = args.original_max_pos
    if original_max_pos is None and (args.rope_scaling or "").strip() == "longrope":
        original_max_pos = max_pos // 4
    if original_max_pos is None and arch == "phi3":
        original_max_pos = max_pos

    rng = np.random.default_rng(args.seed)

    # Gemma 1 has no norms after a layer's halves: its attention and MLP outputs are scaled up
    # instead, so that the embedding (times sqrt(hidden_size)) does not dominate the residual.
    out_gain = float(np.sqrt(dim)) if arch == "gemma" else 1.0

    def weight(*dims, gain=1.0):
        return (rng.standard_normal(dims, dtype=np.float32) * (gain / np.sqrt(dims[-1]))).astype(np.float32)

    def norm(n, gain=1.0):
        # Gemma's RMSNorm multiplies by (1 + w): store w so that 1 + w is near gain.
        w = gain + 0.1 * rng.standard_normal(n, dtype=np.float32)
        return (w - 1.0 if gemma else w).astype(np.float32)

    def bias(n):
        return (0.5 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    def dense_mlp(prefix, inner):
        t[prefix + "gate_proj.weight"] = weight(inner, dim)
        t[prefix + "up_proj.weight"] = weight(inner, dim)
        t[prefix + "down_proj.weight"] = weight(dim, inner, gain=out_gain)

    mlp_only = s.get("mlp_only_layers", [])
    if args.mlp_only_layers is not None:
        mlp_only = [int(x) for x in args.mlp_only_layers.split(",") if x.strip()]
    sparse_step = s.get("decoder_sparse_step", 1)

    t = {"model.embed_tokens.weight": weight(vocab, dim)}
    for l in range(layers):
        p = f"model.layers.{l}."
        t[p + "input_layernorm.weight"] = norm(dim)
        a = p + "self_attn."
        if arch == "phi3":
            t[a + "qkv_proj.weight"] = np.concatenate([weight(heads * head_dim, dim, gain=QK_GAIN),
                                                       weight(kv_heads * head_dim, dim, gain=QK_GAIN),
                                                       weight(kv_heads * head_dim, dim)])
        else:
            t[a + "q_proj.weight"] = weight(heads * head_dim, dim, gain=QK_GAIN)
            t[a + "k_proj.weight"] = weight(kv_heads * head_dim, dim, gain=QK_GAIN)
            t[a + "v_proj.weight"] = weight(kv_heads * head_dim, dim)
            if arch in ("qwen2", "qwen2_moe"):
                t[a + "q_proj.bias"] = bias(heads * head_dim)
                t[a + "k_proj.bias"] = bias(kv_heads * head_dim)
                t[a + "v_proj.bias"] = bias(kv_heads * head_dim)
        t[a + "o_proj.weight"] = weight(dim, heads * head_dim, gain=out_gain)
        if arch in ("qwen3", "qwen3_moe", "gemma3"):
            t[a + "q_norm.weight"] = norm(head_dim, gain=QK_GAIN)
            t[a + "k_norm.weight"] = norm(head_dim, gain=QK_GAIN)
        t[p + "post_attention_layernorm.weight"] = norm(dim, gain=POST_GAIN if arch in SANDWICH else 1.0)
        if arch in SANDWICH:
            t[p + "pre_feedforward_layernorm.weight"] = norm(dim)
            t[p + "post_feedforward_layernorm.weight"] = norm(dim, gain=POST_GAIN)
        if arch == "phi3":
            t[p + "mlp.gate_up_proj.weight"] = weight(2 * hidden, dim)
            t[p + "mlp.down_proj.weight"] = weight(dim, hidden)
        elif arch == "mixtral":
            m = p + "block_sparse_moe."
            t[m + "gate.weight"] = weight(s["experts"], dim, gain=2.0)
            for e in range(s["experts"]):
                t[m + f"experts.{e}.w1.weight"] = weight(hidden, dim)
                t[m + f"experts.{e}.w2.weight"] = weight(dim, hidden)
                t[m + f"experts.{e}.w3.weight"] = weight(hidden, dim)
        elif moe and l not in mlp_only and (l + 1) % sparse_step == 0:
            t[p + "mlp.gate.weight"] = weight(s["experts"], dim, gain=2.0)
            for e in range(s["experts"]):
                dense_mlp(p + f"mlp.experts.{e}.", s["moe_hidden"])
            if arch == "qwen2_moe":
                dense_mlp(p + "mlp.shared_expert.", s["shared_hidden"])
                t[p + "mlp.shared_expert_gate.weight"] = weight(1, dim)
        else:
            dense_mlp(p + "mlp.", hidden)
    t["model.norm.weight"] = norm(dim, gain=FINAL_GAIN)
    if not tie:
        t["lm_head.weight"] = weight(vocab, dim)

    c = {
        "architectures": [s["cls"]], "model_type": s["model_type"], "attention_dropout": 0.0,
        "bos_token_id": 1, "eos_token_id": 2, "hidden_size": dim, "initializer_range": 0.02,
        "intermediate_size": hidden, "max_position_embeddings": max_pos, "num_attention_heads": heads,
        "num_hidden_layers": layers, "num_key_value_heads": kv_heads, "rms_norm_eps": 1e-6,
        "rope_scaling": rope_scaling,
        "rope_theta": args.rope_theta if args.rope_theta is not None else s["rope_theta"],
        "tie_word_embeddings": tie, "torch_dtype": DTYPES[args.dtype][1], "use_cache": True,
        "vocab_size": vocab,
    }
    if not gemma:
        c["hidden_act"] = "silu"
    if arch in ("llama-tied", "mistral", "phi3", "mixtral"):
        c["rms_norm_eps"] = 1e-5
    if arch in ("llama-tied", "mistral", "qwen3", "qwen3_moe", "gemma", "gemma2", "gemma3") or s["head_dim"]:
        c["head_dim"] = head_dim
    if arch in ("llama-tied", "qwen3", "qwen3_moe", "phi3", "gemma", "gemma2", "gemma3"):
        c["attention_bias"] = False
    if arch == "llama-tied":
        c.update(mlp_bias=False, pretraining_tp=1)

    window = args.sliding_window if args.sliding_window is not None else s.get("sliding_window")
    if window == 0:
        window = None
    if arch in ("mistral", "mixtral", "phi3", "gemma2", "gemma3"):
        c["sliding_window"] = window
    if arch in QWEN:
        if args.use_sliding_window:
            window = window or 16
        elif window is None and arch in ("qwen2", "qwen2_moe"):
            window = 4096  # as Qwen2/Qwen1.5 checkpoints: a number, unused while use_sliding_window is false
        c.update(use_sliding_window=args.use_sliding_window, sliding_window=window,
                 max_window_layers=args.max_window_layers if args.max_window_layers is not None
                 else (layers // 2 if args.use_sliding_window else layers))
    if arch == "phi3":
        c.update(embd_pdrop=0.0, resid_pdrop=0.0, original_max_position_embeddings=original_max_pos)
    elif original_max_pos is not None:
        c["original_max_position_embeddings"] = original_max_pos
    if args.partial_rotary_factor is not None:
        c["partial_rotary_factor"] = partial
    if arch == "gemma":
        # Gemma 1's configs name "gelu", which transformers runs as the tanh approximation.
        c.update(hidden_act="gelu", hidden_activation="gelu_pytorch_tanh", pad_token_id=0)
    if arch in SANDWICH:
        softcaps = dict(attn_logit_softcapping=s.get("attn_softcap"), final_logit_softcapping=s.get("final_softcap"))
        if args.attn_logit_softcapping is not None:
            softcaps["attn_logit_softcapping"] = args.attn_logit_softcapping or None
        if args.final_logit_softcapping is not None:
            softcaps["final_logit_softcapping"] = args.final_logit_softcapping or None
        c.update(softcaps, cache_implementation="hybrid", hidden_activation="gelu_pytorch_tanh", pad_token_id=0,
                 query_pre_attn_scalar=args.query_pre_attn_scalar if args.query_pre_attn_scalar is not None
                 else s["query_pre_attn_scalar"])
    if arch == "gemma2":
        c["hidden_act"] = "gelu_pytorch_tanh"
    if arch == "gemma3":
        pattern = s["sliding_window_pattern"]
        c.update(sliding_window_pattern=pattern, rope_local_base_freq=s["rope_local_base_freq"],
                 layer_types=["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)])
    if arch == "mixtral":
        c.update(num_local_experts=s["experts"], num_experts_per_tok=s["experts_per_tok"], output_router_logits=False,
                 router_aux_loss_coef=0.02, router_jitter_noise=0.0)
    if arch in ("qwen2_moe", "qwen3_moe"):
        norm_topk = s["norm_topk_prob"] if args.norm_topk_prob is None else args.norm_topk_prob == "true"
        c.update(num_experts=s["experts"], num_experts_per_tok=s["experts_per_tok"],
                 moe_intermediate_size=s["moe_hidden"], decoder_sparse_step=sparse_step, mlp_only_layers=mlp_only,
                 norm_topk_prob=norm_topk, output_router_logits=False, router_aux_loss_coef=0.001)
    if arch == "qwen2_moe":
        c["shared_expert_intermediate_size"] = s["shared_hidden"]
    return t, dict(sorted(c.items())), {"format": "pt"}


def main():
    args = parse_args()
    if args.arch != "llama" and args.shape:
        sys.exit("make_random_model: --shape is for --arch llama")
    tensors, config, metadata = llama_model(args) if args.arch == "llama" else family_model(args)

    os.makedirs(args.out, exist_ok=True)
    size = sum((t[0] if isinstance(t, tuple) else t).size for t in tensors.values())
    if args.quantize in INTEGER_SCHEMES:
        scale_dtype = "F16" if args.dtype == "f32" else DTYPES[args.dtype][0]
        tensors, config["quantization_config"] = quantize_integer(tensors, args.quantize, args.group_size,
                                                                  scale_dtype, args.seed)
    elif args.quantize:
        tensors, config["quantization_config"] = quantize_linears(tensors, args.quantize.split("-")[1])
    if args.arch == "llama" and args.dtype == "f32" and not args.quantize:
        write_safetensors(os.path.join(args.out, "model.safetensors"), tensors)
    else:
        config["torch_dtype"] = DTYPES[args.dtype][1]
        write_safetensors(os.path.join(args.out, "model.safetensors"), tensors, DTYPES[args.dtype][0], metadata)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if args.generation_config is not None:
        with open(os.path.join(args.out, "generation_config.json"), "w") as f:
            json.dump(json.loads(args.generation_config), f, indent=2)

    vocab = config["vocab_size"]
    shared = os.environ.get("ACTORLLM_SHARED_DIR",
                            os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))
    source = (os.path.join(shared, "tokenizers", "llama2", "tokenizer.json") if vocab == 32000
              else os.path.join(shared, "models", "stories260K", "tokenizer.json"))
    if os.path.exists(source) and (vocab in (32000, 512)):
        shutil.copy(source, os.path.join(args.out, "tokenizer.json"))
    label = "" if args.arch == "llama" else args.arch + ", "
    print(f"make_random_model: wrote {args.out} ({label}{size / 1e6:.1f}M parameters)")


if __name__ == "__main__":
    main()

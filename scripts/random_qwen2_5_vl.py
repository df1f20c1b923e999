"""make_random_vlm.py --arch qwen2_5_vl: a tiny random Qwen2_5_VLForConditionalGeneration in the
layout of the published Qwen checkpoints (Qwen/Qwen2.5-VL-3B-Instruct, -7B-Instruct).

Files: config.json (the text keys at the top level as the published config.json has them, with
rope_scaling {"type": "mrope", "mrope_section"}; vision_config; image_token_id,
video_token_id, vision_start_token_id, vision_end_token_id), model.safetensors, tokenizer.json
(stories260K's 512 tokens plus <|endoftext|> 512, <|im_start|> 513, <|im_end|> 514,
<|vision_start|> 515, <|vision_end|> 516, <|image_pad|> 517, <|video_pad|> 518 as added special
tokens), tokenizer_config.json and chat_template.json (Qwen2.5-VL's chat template),
preprocessor_config.json (Qwen2VLImageProcessor with small min_pixels / max_pixels) and
generation_config.json.

Tensors (vh: vision hidden, vi: vision intermediate, th: text hidden, p: patch, tp: temporal patch,
m: spatial merge size):
  visual.patch_embed.proj.weight                          (vh, 3, tp, p, p), a Conv3d, no bias
  visual.blocks.{i}.norm1.weight, norm2.weight            (vh), RMSNorm
  visual.blocks.{i}.attn.qkv.{weight,bias}                (3 vh, vh), (3 vh)
  visual.blocks.{i}.attn.proj.{weight,bias}               (vh, vh), (vh)
  visual.blocks.{i}.mlp.{gate_proj,up_proj}.{weight,bias} (vi, vh), (vi)
  visual.blocks.{i}.mlp.down_proj.{weight,bias}           (vh, vi), (vh)
  visual.merger.ln_q.weight                               (vh)
  visual.merger.mlp.0.{weight,bias}                       (m^2 vh, m^2 vh), (m^2 vh)
  visual.merger.mlp.2.{weight,bias}                       (th, m^2 vh), (th)
  model.embed_tokens.weight, model.layers.{i}.* (Qwen2 names, q/k/v biases), model.norm.weight,
  lm_head.weight (absent with --tie-word-embeddings, as in the 3B checkpoint)
"""
import json
import os

import numpy as np

from make_random_model import FINAL_GAIN, QK_GAIN
from make_random_vlm import BASE_VOCAB, CLIP_MEAN, CLIP_STD, special_token

# Qwen's special tokens in Qwen's order (151643, 151644, 151645, 151652, 151653, 151655, 151656
# there), at 512.. here.
TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
          "<|video_pad|>"]
TOKEN_IDS = {name: BASE_VOCAB + i for i, name in enumerate(TOKENS)}

# The chat template of Qwen/Qwen2.5-VL-*-Instruct's chat_template.json and tokenizer_config.json:
# a default system turn, <|vision_start|><|image_pad|><|vision_end|> per image part in place.
CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in "
    "messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful "
    "assistant.<|im_end|>\n{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}{% if content['type'] "
    "== 'image' or 'image' in content or 'image_url' in content %}{% set image_count.value = image_count.value "
    "+ 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|>"
    "<|vision_end|>{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = "
    "video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|>"
    "<|video_pad|><|vision_end|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}"
    "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

# make_random_vlm.py's shared flags where Qwen2.5-VL's tiny model differs from llava's.
DEFAULTS = dict(vision_layers=4, hidden_act="silu")


def add_args(ap):
    g = ap.add_argument_group("qwen2_5_vl (--vision-layers is vision_config.depth)")
    g.add_argument("--window-size", type=int, default=56,
                   help="vision_config.window_size in pixels: 56 is 2 x 2 merged tokens per window")
    g.add_argument("--fullatt-block-indexes", default="1,3", help="the tower's full-attention layers")
    g.add_argument("--spatial-merge-size", type=int, default=2)
    g.add_argument("--temporal-patch-size", type=int, default=2)
    g.add_argument("--tokens-per-second", type=int, default=2)
    g.add_argument("--mrope-section", default="2,3,3", help="rope_scaling.mrope_section: sums to head_dim / 2")
    g.add_argument("--min-pixels", type=int, default=56 * 56)
    g.add_argument("--max-pixels", type=int, default=28 * 28 * 64)
    g.add_argument("--tie-word-embeddings", action="store_true", help="no lm_head.weight (as Qwen2.5-VL-3B)")


def check_args(a):
    """An error message, or None."""
    a.fullatt = [int(x) for x in a.fullatt_block_indexes.split(",") if x.strip()]
    a.mrope = [int(x) for x in a.mrope_section.split(",") if x.strip()]
    if len(a.mrope) != 3 or sum(a.mrope) * 2 != a.dim // a.heads:
        return f"--mrope-section must be 3 numbers summing to head_dim / 2 = {a.dim // a.heads // 2}"
    if any(not 0 <= i < a.vision_layers for i in a.fullatt):
        return "--fullatt-block-indexes must be layers of the tower"
    if (a.vision_dim // a.vision_heads) % 4:
        return "the vision head size must be a multiple of 4 (2-D rotary over (h, w))"
    if a.window_size // a.spatial_merge_size // a.patch_size < 1:
        return "--window-size must hold at least one merged patch"
    if not 1 <= a.min_pixels <= a.max_pixels:
        return "--min-pixels and --max-pixels must satisfy 1 <= min <= max"
    if a.vocab < BASE_VOCAB + len(TOKENS):
        return f"--vocab must be at least {BASE_VOCAB + len(TOKENS)}"
    return None


def vision_tower(a, d):
    vh, vi, p, tp, m2 = a.vision_dim, a.vision_hidden, a.patch_size, a.temporal_patch_size, a.spatial_merge_size ** 2
    t = {"visual.patch_embed.proj.weight": d.weight(vh, 3 * tp * p * p).reshape(vh, 3, tp, p, p)}
    for i in range(a.vision_layers):
        b = f"visual.blocks.{i}."
        t[b + "norm1.weight"] = d.norm(vh)
        t[b + "attn.qkv.weight"] = np.concatenate([d.weight(vh, vh, gain=QK_GAIN), d.weight(vh, vh, gain=QK_GAIN),
                                                   d.weight(vh, vh)])
        t[b + "attn.qkv.bias"] = d.bias(3 * vh)
        t[b + "attn.proj.weight"], t[b + "attn.proj.bias"] = d.weight(vh, vh), d.bias(vh)
        t[b + "norm2.weight"] = d.norm(vh)
        for name, rows, cols in (("gate_proj", vi, vh), ("up_proj", vi, vh), ("down_proj", vh, vi)):
            t[f"{b}mlp.{name}.weight"], t[f"{b}mlp.{name}.bias"] = d.weight(rows, cols), d.bias(rows)
    # mlp.2 at a quarter of the unit gain, as llava's linear_2: image rows a few times the token
    # embeddings' scale, so that the prompt's text still steers the output.
    t["visual.merger.ln_q.weight"] = d.norm(vh)
    t["visual.merger.mlp.0.weight"], t["visual.merger.mlp.0.bias"] = d.weight(m2 * vh, m2 * vh), d.bias(m2 * vh)
    t["visual.merger.mlp.2.weight"] = d.weight(a.dim, m2 * vh, gain=0.25)
    t["visual.merger.mlp.2.bias"] = d.bias(a.dim)
    return t


def language_model(a, d):
    """Qwen2ForCausalLM's tensors under their published names (model.*, lm_head)."""
    dim, head_dim = a.dim, a.dim // a.heads
    t = {"model.embed_tokens.weight": d.weight(a.vocab, dim)}
    for i in range(a.layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = d.norm(dim)
        for name, heads, gain in (("q_proj", a.heads, QK_GAIN), ("k_proj", a.kv_heads, QK_GAIN),
                                  ("v_proj", a.kv_heads, 1.0)):
            t[f"{p}self_attn.{name}.weight"] = d.weight(heads * head_dim, dim, gain=gain)
            t[f"{p}self_attn.{name}.bias"] = d.bias(heads * head_dim, scale=0.5)
        t[p + "self_attn.o_proj.weight"] = d.weight(dim, a.heads * head_dim)
        t[p + "post_attention_layernorm.weight"] = d.norm(dim)
        t[p + "mlp.gate_proj.weight"] = d.weight(a.hidden, dim)
        t[p + "mlp.up_proj.weight"] = d.weight(a.hidden, dim)
        t[p + "mlp.down_proj.weight"] = d.weight(dim, a.hidden)
    t["model.norm.weight"] = d.norm(dim, gain=FINAL_GAIN)
    if not a.tie_word_embeddings:
        t["lm_head.weight"] = d.weight(a.vocab, dim)
    return t


def tensors(a, d):
    return {**vision_tower(a, d), **language_model(a, d)}


def config(a, torch_dtype):
    """The published config.json's layout: Qwen2 text keys at the top level."""
    return {
        "architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0,
        "bos_token_id": TOKEN_IDS["<|endoftext|>"], "eos_token_id": TOKEN_IDS["<|im_end|>"],
        "vision_start_token_id": TOKEN_IDS["<|vision_start|>"], "vision_end_token_id": TOKEN_IDS["<|vision_end|>"],
        "image_token_id": TOKEN_IDS["<|image_pad|>"], "video_token_id": TOKEN_IDS["<|video_pad|>"],
        "hidden_act": "silu", "hidden_size": a.dim, "initializer_range": 0.02, "intermediate_size": a.hidden,
        "max_position_embeddings": a.max_pos, "max_window_layers": a.layers, "model_type": "qwen2_5_vl",
        "num_attention_heads": a.heads, "num_hidden_layers": a.layers, "num_key_value_heads": a.kv_heads,
        "rms_norm_eps": 1e-06, "rope_theta": a.rope_theta, "sliding_window": a.max_pos,
        "tie_word_embeddings": a.tie_word_embeddings, "torch_dtype": torch_dtype, "use_cache": True,
        "use_sliding_window": False,
        "vision_config": {
            "depth": a.vision_layers, "hidden_act": a.hidden_act, "hidden_size": a.vision_dim,
            "intermediate_size": a.vision_hidden, "num_heads": a.vision_heads, "in_chans": 3,
            "out_hidden_size": a.dim, "patch_size": a.patch_size, "spatial_merge_size": a.spatial_merge_size,
            "spatial_patch_size": a.patch_size, "window_size": a.window_size,
            "fullatt_block_indexes": a.fullatt, "tokens_per_second": a.tokens_per_second,
            "temporal_patch_size": a.temporal_patch_size,
        },
        "rope_scaling": {"type": "mrope", "mrope_section": a.mrope},
        "vocab_size": a.vocab,
    }


def tokens_per_image(a, height, width):
    """The image tokens of an image already smart-resized to height x width."""
    return (height // a.patch_size) * (width // a.patch_size) // a.spatial_merge_size ** 2


def write_tokenizer(a, out, source):
    """stories260K's tokenizer.json with Qwen's special tokens added and no BOS, Qwen2.5-VL's
    tokenizer_config.json, chat_template.json, preprocessor_config.json and generation_config.json."""
    with open(source) as f:
        tok = json.load(f)
    tok["added_tokens"] += [special_token(TOKEN_IDS[name], name) for name in TOKENS]
    tok["post_processor"] = None  # Qwen's tokenizer adds no BOS
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)
    decoder = {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tok["added_tokens"]}
    tokenizer_config = {
        "add_prefix_space": False, "added_tokens_decoder": decoder,
        "additional_special_tokens": TOKENS[1:], "bos_token": None, "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
        "model_max_length": a.max_pos, "pad_token": "<|endoftext|>", "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer", "unk_token": None,
    }
    preprocessor = {
        "min_pixels": a.min_pixels, "max_pixels": a.max_pixels, "patch_size": a.patch_size,
        "temporal_patch_size": a.temporal_patch_size, "merge_size": a.spatial_merge_size,
        "image_mean": CLIP_MEAN, "image_std": CLIP_STD, "image_processor_type": "Qwen2VLImageProcessor",
        "processor_class": "Qwen2_5_VLProcessor",
    }
    generation = {"bos_token_id": TOKEN_IDS["<|endoftext|>"], "do_sample": False, "pad_token_id": TOKEN_IDS["<|endoftext|>"],
                  "eos_token_id": [TOKEN_IDS["<|im_end|>"], TOKEN_IDS["<|endoftext|>"]]}
    for name, value in (("tokenizer_config.json", tokenizer_config),
                        ("chat_template.json", {"chat_template": CHAT_TEMPLATE}),
                        ("preprocessor_config.json", preprocessor), ("generation_config.json", generation)):
        with open(os.path.join(out, name), "w") as f:
            json.dump(value, f, indent=2)

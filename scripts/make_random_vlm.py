#!/usr/bin/env python3
"""Writes a tiny random-weight vision-language checkpoint in the layout of the published
llava-hf checkpoints (llava-hf/llava-1.5-7b-hf): a CLIP vision tower, the two-layer projector
and a Llama decoder, for the engine's multimodal tests and tests/reference/vision_reference.py.

  scripts/make_random_vlm.py --arch llava --out /tmp/llava
  scripts/make_random_vlm.py --arch llava --dtype bf16 --seed 3 --out /tmp/llava-bf16
  scripts/make_random_vlm.py --arch llava --vision-feature-select-strategy full --vision-feature-layer -1 \\
      --hidden-act gelu --out /tmp/llava-full
  scripts/make_random_vlm.py --arch qwen2_5_vl --out /tmp/qwen2_5_vl   (see random_qwen2_5_vl.py)
  scripts/make_random_vlm.py --arch gemma3 --out /tmp/gemma3   (see random_gemma3.py)

Files: config.json (LlavaConfig: text_config, vision_config, image_token_index, projector and
feature-selection keys), model.safetensors (F32, F16 or BF16), tokenizer.json (stories260K's 512
tokens plus <image> at image_token_index and <pad> after it as added special tokens),
tokenizer_config.json and chat_template.json (llava-1.5-hf's chat template; the engine reads the
former, transformers' processors the latter), preprocessor_config.json (CLIPImageProcessor sized
to --image-size), processor_config.json (LlavaProcessor) and generation_config.json.

Tensors (vh: vision hidden, th: text hidden, p: patch size, n: (image_size / p)^2 patches):
  vision_tower.vision_model.embeddings.class_embedding            (vh)
  vision_tower.vision_model.embeddings.patch_embedding.weight     (vh, 3, p, p), no bias
  vision_tower.vision_model.embeddings.position_embedding.weight  (n + 1, vh)
  vision_tower.vision_model.pre_layrnorm.{weight,bias}            (vh)
  vision_tower.vision_model.encoder.layers.{i}.self_attn.{q,k,v,out}_proj.{weight,bias}
  vision_tower.vision_model.encoder.layers.{i}.{layer_norm1,layer_norm2}.{weight,bias}
  vision_tower.vision_model.encoder.layers.{i}.mlp.{fc1,fc2}.{weight,bias}
  vision_tower.vision_model.post_layernorm.{weight,bias}
  multi_modal_projector.linear_1.{weight,bias}                    (th, vh * feature layers), (th)
  multi_modal_projector.linear_2.{weight,bias}                    (th, th), (th)
  language_model.model.embed_tokens.weight, language_model.model.layers.{i}.* (Llama names),
  language_model.model.norm.weight, language_model.lm_head.weight

Weights are drawn as make_random_model.py draws them (standard deviation gain / sqrt(fan-in),
queries and keys at twice the unit gain, norms near 1, the final norm near 4) so that greedy
margins are clear. The writers and scales are make_random_model.py's.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_random_model import DTYPES, FINAL_GAIN, QK_GAIN, write_safetensors  # noqa: E402

# CLIPImageProcessor's OPENAI_CLIP_MEAN / OPENAI_CLIP_STD, as llava-hf's preprocessor_config.json has them.
CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
BASE_VOCAB = 512  # stories260K's tokenizer: <unk> 0, <s> 1, </s> 2

# llava-hf/llava-1.5-7b-hf's chat_template: a message's images first, one "<image>\n" each, then its
# text parts, each followed by a space; "USER: " / "ASSISTANT: " role prefixes (none for system).
CHAT_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] != 'system' %}{{ message['role'].upper() + ': '}}"
    "{% endif %}{# Render all images first #}{% for content in message['content'] | selectattr('type', "
    "'equalto', 'image') %}{{ '<image>\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != "
    "'assistant' %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ content['text'] + ' '}}{% endfor %}{% else %}{% for content in message['content'] | "
    "selectattr('type', 'equalto', 'text') %}{% generation %}{{ content['text'] + ' '}}{% endgeneration %}"
    "{% endfor %}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="llava", choices=["llava", "qwen2_5_vl", "gemma3"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="f32")
    g = ap.add_argument_group("vision tower (CLIP)")
    g.add_argument("--image-size", type=int, default=56)
    g.add_argument("--patch-size", type=int, default=14)
    g.add_argument("--vision-dim", type=int, default=64, help="vision_config.hidden_size")
    g.add_argument("--vision-hidden", type=int, default=128, help="vision_config.intermediate_size")
    g.add_argument("--vision-heads", type=int, default=2)
    g.add_argument("--vision-layers", type=int, help="default 3 (llava, gemma3), 4 (qwen2_5_vl)")
    g.add_argument("--projection-dim", type=int, default=64, help="vision_config.projection_dim (unused by Llava)")
    g.add_argument("--hidden-act", help="vision_config.hidden_act: quick_gelu (llava's default), gelu, silu "
                   "(qwen2_5_vl's default), gelu_pytorch_tanh (gemma3's default)")
    g = ap.add_argument_group("projector and feature selection")
    g.add_argument("--vision-feature-layer", default="-2",
                   help="an index into the tower's hidden states, or comma-separated indices (concatenated)")
    g.add_argument("--vision-feature-select-strategy", choices=["default", "full"], default="default",
                   help="default drops the CLS position, full keeps it")
    g.add_argument("--projector-hidden-act", default="gelu")
    g.add_argument("--image-token-index", type=int, default=BASE_VOCAB)
    g = ap.add_argument_group("language model (Llama)")
    g.add_argument("--dim", type=int, default=64, help="text_config.hidden_size")
    g.add_argument("--hidden", type=int, default=192, help="text_config.intermediate_size")
    g.add_argument("--layers", type=int, default=2)
    g.add_argument("--heads", type=int, default=4)
    g.add_argument("--kv-heads", type=int, default=2)
    g.add_argument("--vocab", type=int, default=520)
    g.add_argument("--max-pos", type=int, default=1024)
    g.add_argument("--rope-theta", type=float, help="default 10000 (llava, qwen2_5_vl), 1000000 (gemma3)")
    import random_qwen2_5_vl as qwen2_5_vl
    qwen2_5_vl.add_args(ap)
    import random_gemma3 as gemma3
    gemma3.add_args(ap)
    args = ap.parse_args()
    defaults = {"qwen2_5_vl": qwen2_5_vl.DEFAULTS, "gemma3": gemma3.DEFAULTS}.get(
        args.arch, dict(vision_layers=3, hidden_act="quick_gelu"))
    for key, value in {"rope_theta": 10000.0, **defaults}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.arch == "qwen2_5_vl" and (error := qwen2_5_vl.check_args(args)):
        sys.exit("make_random_vlm: " + error)
    if args.arch == "gemma3" and (error := gemma3.check_args(args)):
        sys.exit("make_random_vlm: " + error)
    args.feature_layers = [int(x) for x in args.vision_feature_layer.split(",") if x.strip()]
    if not args.feature_layers:
        sys.exit("make_random_vlm: --vision-feature-layer is empty")
    if args.image_size % args.patch_size:
        sys.exit("make_random_vlm: --image-size must be a multiple of --patch-size")
    if args.vision_dim % args.vision_heads or args.dim % args.heads or args.heads % args.kv_heads:
        sys.exit("make_random_vlm: heads must divide the hidden sizes and kv heads the heads")
    if not BASE_VOCAB <= args.image_token_index < args.vocab - 1:
        sys.exit(f"make_random_vlm: --image-token-index must lie in [{BASE_VOCAB}, vocab - 1) "
                 "(after the tokenizer's tokens, with room for <pad> after it)")
    for i in args.feature_layers:
        if not -(args.vision_layers + 1) <= i <= args.vision_layers:
            sys.exit(f"make_random_vlm: --vision-feature-layer {i} is not one of the tower's "
                     f"{args.vision_layers + 1} hidden states")
    return args


class Draw:
    """Random tensors at make_random_model.py's scales."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def weight(self, *dims, gain=1.0):
        return (self.rng.standard_normal(dims, dtype=np.float32) * (gain / np.sqrt(dims[-1]))).astype(np.float32)

    def norm(self, n, gain=1.0):
        return (gain + 0.1 * self.rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    def bias(self, n, scale=0.1):
        return (scale * self.rng.standard_normal(n, dtype=np.float32)).astype(np.float32)


def vision_tower(a, d):
    """CLIPVisionModel's tensors under vision_tower.vision_model."""
    vh, p, num_patches = a.vision_dim, a.patch_size, (a.image_size // a.patch_size) ** 2
    v = "vision_tower.vision_model."
    t = {v + "embeddings.class_embedding": d.rng.standard_normal(vh, dtype=np.float32),
         v + "embeddings.patch_embedding.weight": d.weight(vh, 3 * p * p).reshape(vh, 3, p, p),
         v + "embeddings.position_embedding.weight": 0.5 * d.rng.standard_normal((num_patches + 1, vh),
                                                                               dtype=np.float32),
         v + "pre_layrnorm.weight": d.norm(vh), v + "pre_layrnorm.bias": d.bias(vh)}
    for i in range(a.vision_layers):
        q = f"{v}encoder.layers.{i}."
        for name, gain in (("q_proj", QK_GAIN), ("k_proj", QK_GAIN), ("v_proj", 1.0), ("out_proj", 1.0)):
            t[f"{q}self_attn.{name}.weight"] = d.weight(vh, vh, gain=gain)
            t[f"{q}self_attn.{name}.bias"] = d.bias(vh)
        t[q + "layer_norm1.weight"], t[q + "layer_norm1.bias"] = d.norm(vh), d.bias(vh)
        t[q + "mlp.fc1.weight"], t[q + "mlp.fc1.bias"] = d.weight(a.vision_hidden, vh), d.bias(a.vision_hidden)
        t[q + "mlp.fc2.weight"], t[q + "mlp.fc2.bias"] = d.weight(vh, a.vision_hidden), d.bias(vh)
        t[q + "layer_norm2.weight"], t[q + "layer_norm2.bias"] = d.norm(vh), d.bias(vh)
    t[v + "post_layernorm.weight"], t[v + "post_layernorm.bias"] = d.norm(vh), d.bias(vh)
    return t


def projector(a, d):
    """linear_2 at a quarter of the unit gain: image features a few times the token embeddings'
    scale (rms about 0.3 against 1 / sqrt(dim)), so that the prompt's text still steers the output."""
    th, vin = a.dim, a.vision_dim * len(a.feature_layers)
    return {"multi_modal_projector.linear_1.weight": d.weight(th, vin),
            "multi_modal_projector.linear_1.bias": d.bias(th),
            "multi_modal_projector.linear_2.weight": d.weight(th, th, gain=0.25),
            "multi_modal_projector.linear_2.bias": d.bias(th)}


def language_model(a, d):
    """LlamaForCausalLM's tensors under language_model."""
    dim, head_dim = a.dim, a.dim // a.heads
    m = "language_model.model."
    t = {m + "embed_tokens.weight": d.weight(a.vocab, dim)}
    for i in range(a.layers):
        p = f"{m}layers.{i}."
        t[p + "input_layernorm.weight"] = d.norm(dim)
        t[p + "self_attn.q_proj.weight"] = d.weight(a.heads * head_dim, dim, gain=QK_GAIN)
        t[p + "self_attn.k_proj.weight"] = d.weight(a.kv_heads * head_dim, dim, gain=QK_GAIN)
        t[p + "self_attn.v_proj.weight"] = d.weight(a.kv_heads * head_dim, dim)
        t[p + "self_attn.o_proj.weight"] = d.weight(dim, a.heads * head_dim)
        t[p + "post_attention_layernorm.weight"] = d.norm(dim)
        t[p + "mlp.gate_proj.weight"] = d.weight(a.hidden, dim)
        t[p + "mlp.up_proj.weight"] = d.weight(a.hidden, dim)
        t[p + "mlp.down_proj.weight"] = d.weight(dim, a.hidden)
    t[m + "norm.weight"] = d.norm(dim, gain=FINAL_GAIN)
    t["language_model.lm_head.weight"] = d.weight(a.vocab, dim)
    return t


def num_image_tokens(a):
    return (a.image_size // a.patch_size) ** 2 + (1 if a.vision_feature_select_strategy == "full" else 0)


def llava_config(a):
    torch_dtype = DTYPES[a.dtype][1]
    layer = a.feature_layers[0] if len(a.feature_layers) == 1 else a.feature_layers
    return {
        "architectures": ["LlavaForConditionalGeneration"],
        "ignore_index": -100,
        "image_seq_length": num_image_tokens(a),
        "image_token_index": a.image_token_index,
        "model_type": "llava",
        "pad_token_id": a.image_token_index + 1,
        "projector_hidden_act": a.projector_hidden_act,
        "text_config": {
            "architectures": ["LlamaForCausalLM"], "hidden_size": a.dim, "intermediate_size": a.hidden,
            "max_position_embeddings": a.max_pos, "model_type": "llama", "num_attention_heads": a.heads,
            "num_hidden_layers": a.layers, "num_key_value_heads": a.kv_heads, "rms_norm_eps": 1e-05,
            "rope_theta": a.rope_theta, "torch_dtype": torch_dtype, "vocab_size": a.vocab,
        },
        "tie_word_embeddings": False,
        "torch_dtype": torch_dtype,
        "vision_config": {
            "hidden_act": a.hidden_act, "hidden_size": a.vision_dim, "image_size": a.image_size,
            "intermediate_size": a.vision_hidden, "layer_norm_eps": 1e-05, "model_type": "clip_vision_model",
            "num_attention_heads": a.vision_heads, "num_channels": 3, "num_hidden_layers": a.vision_layers,
            "patch_size": a.patch_size, "projection_dim": a.projection_dim, "torch_dtype": torch_dtype,
        },
        "vision_feature_layer": layer,
        "vision_feature_select_strategy": a.vision_feature_select_strategy,
        "vocab_size": a.vocab,
    }


def shared_dir():
    return os.environ.get("ACTORLLM_SHARED_DIR",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared"))


def special_token(token_id, content):
    return {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def write_tokenizer(a, out):
    """stories260K's tokenizer.json with <image> and <pad> added, and llava-hf's tokenizer_config.json
    (with the chat template), chat_template.json, preprocessor_config.json and processor_config.json."""
    source = os.path.join(shared_dir(), "models", "stories260K", "tokenizer.json")
    if not os.path.exists(source):
        print(f"make_random_vlm: {source} not found, no tokenizer written")
        return
    with open(source) as f:
        tok = json.load(f)
    image_id, pad_id = a.image_token_index, a.image_token_index + 1
    tok["added_tokens"] += [special_token(image_id, "<image>"), special_token(pad_id, "<pad>")]
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)

    decoder = {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tok["added_tokens"]}
    tokenizer_config = {
        "add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": decoder, "bos_token": "<s>",
        "chat_template": CHAT_TEMPLATE, "clean_up_tokenization_spaces": False, "eos_token": "</s>",
        "legacy": False, "model_max_length": a.max_pos, "pad_token": "<pad>", "padding_side": "left",
        "processor_class": "LlavaProcessor", "tokenizer_class": "LlamaTokenizer", "unk_token": "<unk>",
        "use_default_system_prompt": False,
    }
    preprocessor = {
        "crop_size": {"height": a.image_size, "width": a.image_size}, "do_center_crop": True,
        "do_convert_rgb": True, "do_normalize": True, "do_rescale": True, "do_resize": True,
        "image_mean": CLIP_MEAN, "image_processor_type": "CLIPImageProcessor", "image_std": CLIP_STD,
        "processor_class": "LlavaProcessor", "resample": 3, "rescale_factor": 1 / 255,
        "size": {"shortest_edge": a.image_size},
    }
    processor = {"image_token": "<image>", "num_additional_image_tokens": 1, "patch_size": a.patch_size,
                 "processor_class": "LlavaProcessor",
                 "vision_feature_select_strategy": a.vision_feature_select_strategy}
    for name, value in (("tokenizer_config.json", tokenizer_config), ("chat_template.json",
                                                                      {"chat_template": CHAT_TEMPLATE}),
                        ("preprocessor_config.json", preprocessor), ("processor_config.json", processor),
                        ("generation_config.json", {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": pad_id})):
        with open(os.path.join(out, name), "w") as f:
            json.dump(value, f, indent=2)


def main_qwen2_5_vl(a):
    import random_qwen2_5_vl as qwen2_5_vl
    tensors = qwen2_5_vl.tensors(a, Draw(a.seed))
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), tensors, DTYPES[a.dtype][0], {"format": "pt"})
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(qwen2_5_vl.config(a, DTYPES[a.dtype][1]), f, indent=2)
    source = os.path.join(shared_dir(), "models", "stories260K", "tokenizer.json")
    if os.path.exists(source):
        qwen2_5_vl.write_tokenizer(a, a.out, source)
    else:
        print(f"make_random_vlm: {source} not found, no tokenizer written")
    size = sum(t.size for t in tensors.values())
    print(f"make_random_vlm: wrote {a.out} (qwen2_5_vl, {size / 1e6:.2f}M parameters)")


def main_gemma3(a):
    import random_gemma3 as gemma3
    tensors = gemma3.tensors(a, Draw(a.seed))
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), tensors, DTYPES[a.dtype][0], {"format": "pt"})
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(gemma3.config(a, DTYPES[a.dtype][1]), f, indent=2)
    source = os.path.join(shared_dir(), "models", "stories260K", "tokenizer.json")
    if os.path.exists(source):
        gemma3.write_tokenizer(a, a.out, source)
    else:
        print(f"make_random_vlm: {source} not found, no tokenizer written")
    size = sum(t.size for t in tensors.values())
    print(f"make_random_vlm: wrote {a.out} (gemma3, {size / 1e6:.2f}M parameters, "
          f"{a.mm_tokens_per_image} tokens per image)")


def main():
    a = parse_args()
    if a.arch == "qwen2_5_vl":
        return main_qwen2_5_vl(a)
    if a.arch == "gemma3":
        return main_gemma3(a)
    d = Draw(a.seed)
    tensors = {**vision_tower(a, d), **projector(a, d), **language_model(a, d)}
    os.makedirs(a.out, exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), tensors, DTYPES[a.dtype][0], {"format": "pt"})
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(llava_config(a), f, indent=2)
    write_tokenizer(a, a.out)
    size = sum(t.size for t in tensors.values())
    print(f"make_random_vlm: wrote {a.out} (llava, {size / 1e6:.2f}M parameters, "
          f"{num_image_tokens(a)} tokens per image)")


if __name__ == "__main__":
    main()

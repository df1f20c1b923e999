"""make_random_vlm.py --arch gemma3: a tiny random Gemma3ForConditionalGeneration in the layout of
the published Gemma 3 checkpoints (google/gemma-3-4b-it).

Files: config.json (Gemma3Config: text_config of model_type gemma3_text, vision_config of
model_type siglip_vision_model, mm_tokens_per_image, boi_token_index, eoi_token_index,
image_token_index), model.safetensors, tokenizer.json (stories260K's 512 tokens plus
<start_of_image> 512, <end_of_image> 513, <image_soft_token> 514, <start_of_turn> 515,
<end_of_turn> 516 and <pad> 517 as added special tokens, and Gemma's normalizer: spaces to "▁",
no "▁" prepended, so "\\n\\n" is [13, 13] wherever it stands), tokenizer_config.json and
chat_template.json (Gemma 3's chat template), preprocessor_config.json (Gemma3ImageProcessor:
bilinear resize to image_size squared, mean and std 0.5, no pan and scan), processor_config.json
(Gemma3Processor, image_seq_length = mm_tokens_per_image) and generation_config.json.

The text model has one sliding layer for every --sliding-window-pattern layers (the last of each
group is full; the default 2 makes layer 0 sliding and layer 1 full) with a small --sliding-window
so that the window matters in short prompts; its rope_theta (global layers, with Gemma 3's linear
rope_scaling of factor 8) and rope_local_base_freq (sliding layers) differ.

Tensors (vh: vision hidden, vi: vision intermediate, th: text hidden, p: patch size,
n: (image_size / p)^2 patches, hd: head_dim):
  vision_tower.vision_model.embeddings.patch_embedding.{weight,bias}   (vh, 3, p, p), (vh)
  vision_tower.vision_model.embeddings.position_embedding.weight       (n, vh), no class position
  vision_tower.vision_model.encoder.layers.{i}.self_attn.{q,k,v,out}_proj.{weight,bias}
  vision_tower.vision_model.encoder.layers.{i}.{layer_norm1,layer_norm2}.{weight,bias}
  vision_tower.vision_model.encoder.layers.{i}.mlp.{fc1,fc2}.{weight,bias}   (vi, vh), (vh, vi)
  vision_tower.vision_model.post_layernorm.{weight,bias}
  multi_modal_projector.mm_input_projection_weight                     (vh, th), used as x @ W
  multi_modal_projector.mm_soft_emb_norm.weight                        (vh), Gemma's (1 + w) RMSNorm
  language_model.model.embed_tokens.weight                             (vocab, th)
  language_model.model.layers.{i}.{input_layernorm,post_attention_layernorm,
      pre_feedforward_layernorm,post_feedforward_layernorm}.weight     (th)
  language_model.model.layers.{i}.self_attn.{q,k,v,o}_proj.weight, self_attn.{q,k}_norm.weight (hd)
  language_model.model.layers.{i}.mlp.{gate,up,down}_proj.weight
  language_model.model.norm.weight
  language_model.lm_head.weight                                        only with --untied-lm-head

Gemma's RMSNorm weights are stored as w with 1 + w near the gain make_random_model.py gives the
same norm; the projection at unit gain gives image rows of about the scale of the normalised
token embeddings (rms 1), as in the published model.
"""
import json
import os

import numpy as np

from make_random_model import FINAL_GAIN, POST_GAIN, QK_GAIN
from make_random_vlm import BASE_VOCAB, special_token

TOKENS = ["<start_of_image>", "<end_of_image>", "<image_soft_token>", "<start_of_turn>", "<end_of_turn>", "<pad>"]
TOKEN_IDS = {name: BASE_VOCAB + i for i, name in enumerate(TOKENS)}

# google/gemma-3-4b-it's chat template (chat_template.json and tokenizer_config.json): the system
# message folded into the first user turn, "model" for the assistant, <start_of_image> per image
# part in place, each text part trimmed.
CHAT_TEMPLATE = (
    "{{ bos_token }}\n"
    "{%- if messages[0]['role'] == 'system' -%}\n"
    "    {%- if messages[0]['content'] is string -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
    "    {%- else -%}\n"
    "        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '\\n\\n' -%}\n"
    "    {%- endif -%}\n"
    "    {%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "    {%- set first_user_prefix = \"\" -%}\n"
    "    {%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
    "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
    "    {%- endif -%}\n"
    "    {%- if (message['role'] == 'assistant') -%}\n"
    "        {%- set role = \"model\" -%}\n"
    "    {%- else -%}\n"
    "        {%- set role = message['role'] -%}\n"
    "    {%- endif -%}\n"
    "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
    "    {%- if message['content'] is string -%}\n"
    "        {{ message['content'] | trim }}\n"
    "    {%- elif message['content'] is iterable -%}\n"
    "        {%- for item in message['content'] -%}\n"
    "            {%- if item['type'] == 'image' -%}\n"
    "                {{ '<start_of_image>' }}\n"
    "            {%- elif item['type'] == 'text' -%}\n"
    "                {{ item['text'] | trim }}\n"
    "            {%- endif -%}\n"
    "        {%- endfor -%}\n"
    "    {%- else -%}\n"
    "        {{ raise_exception(\"Invalid content type\") }}\n"
    "    {%- endif -%}\n"
    "    {{ '<end_of_turn>\\n' }}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "    {{'<start_of_turn>model\\n'}}\n"
    "{%- endif -%}\n")

# make_random_vlm.py's shared flags where Gemma 3's tiny model differs from llava's.
DEFAULTS = dict(vision_layers=3, hidden_act="gelu_pytorch_tanh", rope_theta=1000000.0)


def add_args(ap):
    g = ap.add_argument_group("gemma3 (the vision flags size the SigLIP tower, the text flags Gemma 3's text model)")
    g.add_argument("--mm-tokens-per-image", type=int, default=4,
                   help="image tokens per image, a square: the patch grid is average-pooled to its side")
    g.add_argument("--head-dim", type=int, default=16, help="text_config.head_dim")
    g.add_argument("--query-pre-attn-scalar", type=int, default=24,
                   help="text_config.query_pre_attn_scalar: attention scores scale by its -1/2 power")
    g.add_argument("--sliding-window", type=int, default=8)
    g.add_argument("--sliding-window-pattern", type=int, default=2,
                   help="the last layer of every group of this many is full, the others sliding")
    g.add_argument("--rope-local-base-freq", type=float, default=10000.0, help="rope theta of the sliding layers")
    g.add_argument("--untied-lm-head", action="store_true",
                   help="write language_model.lm_head.weight and tie_word_embeddings false")


def check_args(a):
    """An error message, or None."""
    side = round(a.mm_tokens_per_image ** 0.5)
    patches = a.image_size // a.patch_size
    if side * side != a.mm_tokens_per_image or side < 1 or patches % side:
        return (f"--mm-tokens-per-image must be a square whose side divides the {patches} x {patches} patch grid "
                "(Gemma3MultiModalProjector's AvgPool2d)")
    if a.vocab < BASE_VOCAB + len(TOKENS):
        return f"--vocab must be at least {BASE_VOCAB + len(TOKENS)}"
    if a.sliding_window < 1 or a.sliding_window_pattern < 1:
        return "--sliding-window and --sliding-window-pattern must be positive"
    return None


def layer_types(a):
    return ["sliding_attention" if (i + 1) % a.sliding_window_pattern else "full_attention" for i in range(a.layers)]


def vision_tower(a, d):
    """SiglipVisionModel's tensors under vision_tower.vision_model: a patch conv with bias, one
    position per patch, pre-LN layers, post_layernorm; no class embedding, no pre-layernorm, no head."""
    vh, vi, p = a.vision_dim, a.vision_hidden, a.patch_size
    v = "vision_tower.vision_model."
    t = {v + "embeddings.patch_embedding.weight": d.weight(vh, 3 * p * p).reshape(vh, 3, p, p),
         v + "embeddings.patch_embedding.bias": d.bias(vh),
         v + "embeddings.position_embedding.weight": 0.5 * d.rng.standard_normal(((a.image_size // p) ** 2, vh),
                                                                               dtype=np.float32)}
    for i in range(a.vision_layers):
        q = f"{v}encoder.layers.{i}."
        for name, gain in (("q_proj", QK_GAIN), ("k_proj", QK_GAIN), ("v_proj", 1.0), ("out_proj", 1.0)):
            t[f"{q}self_attn.{name}.weight"] = d.weight(vh, vh, gain=gain)
            t[f"{q}self_attn.{name}.bias"] = d.bias(vh)
        t[q + "layer_norm1.weight"], t[q + "layer_norm1.bias"] = d.norm(vh), d.bias(vh)
        t[q + "mlp.fc1.weight"], t[q + "mlp.fc1.bias"] = d.weight(vi, vh), d.bias(vi)
        t[q + "mlp.fc2.weight"], t[q + "mlp.fc2.bias"] = d.weight(vh, vi), d.bias(vh)
        t[q + "layer_norm2.weight"], t[q + "layer_norm2.bias"] = d.norm(vh), d.bias(vh)
    t[v + "post_layernorm.weight"], t[v + "post_layernorm.bias"] = d.norm(vh), d.bias(vh)
    return t


def gemma_norm(d, n, gain=1.0):
    """Gemma's RMSNorm multiplies by (1 + w): w such that 1 + w is near gain."""
    return d.norm(n, gain=gain) - 1.0


def projector(a, d):
    """Gemma3MultiModalProjector: mm_input_projection_weight is (vision hidden, text hidden)."""
    return {"multi_modal_projector.mm_input_projection_weight": d.weight(a.dim, a.vision_dim).T.copy(),
            "multi_modal_projector.mm_soft_emb_norm.weight": gemma_norm(d, a.vision_dim)}


def language_model(a, d):
    """Gemma3ForCausalLM's tensors under language_model (Gemma 3 text names), at
    make_random_model.py's gemma3 scales."""
    dim, hd = a.dim, a.head_dim
    m = "language_model.model."
    t = {m + "embed_tokens.weight": d.weight(a.vocab, dim)}
    for i in range(a.layers):
        p = f"{m}layers.{i}."
        t[p + "input_layernorm.weight"] = gemma_norm(d, dim)
        t[p + "self_attn.q_proj.weight"] = d.weight(a.heads * hd, dim, gain=QK_GAIN)
        t[p + "self_attn.k_proj.weight"] = d.weight(a.kv_heads * hd, dim, gain=QK_GAIN)
        t[p + "self_attn.v_proj.weight"] = d.weight(a.kv_heads * hd, dim)
        t[p + "self_attn.o_proj.weight"] = d.weight(dim, a.heads * hd)
        t[p + "self_attn.q_norm.weight"] = gemma_norm(d, hd, gain=QK_GAIN)
        t[p + "self_attn.k_norm.weight"] = gemma_norm(d, hd, gain=QK_GAIN)
        t[p + "post_attention_layernorm.weight"] = gemma_norm(d, dim, gain=POST_GAIN)
        t[p + "pre_feedforward_layernorm.weight"] = gemma_norm(d, dim)
        t[p + "post_feedforward_layernorm.weight"] = gemma_norm(d, dim, gain=POST_GAIN)
        t[p + "mlp.gate_proj.weight"] = d.weight(a.hidden, dim)
        t[p + "mlp.up_proj.weight"] = d.weight(a.hidden, dim)
        t[p + "mlp.down_proj.weight"] = d.weight(dim, a.hidden)
    t[m + "norm.weight"] = gemma_norm(d, dim, gain=FINAL_GAIN)
    if a.untied_lm_head:
        t["language_model.lm_head.weight"] = d.weight(a.vocab, dim)
    return t


def tensors(a, d):
    return {**vision_tower(a, d), **projector(a, d), **language_model(a, d)}


def config(a, torch_dtype):
    """Gemma3Config as google/gemma-3-4b-it's config.json lays it out, every key written."""
    tie = not a.untied_lm_head
    return {
        "architectures": ["Gemma3ForConditionalGeneration"],
        "boi_token_index": TOKEN_IDS["<start_of_image>"],
        "eoi_token_index": TOKEN_IDS["<end_of_image>"],
        "eos_token_id": [2, TOKEN_IDS["<end_of_turn>"]],
        "image_token_index": TOKEN_IDS["<image_soft_token>"],
        "initializer_range": 0.02,
        "mm_tokens_per_image": a.mm_tokens_per_image,
        "model_type": "gemma3",
        "text_config": {
            "attention_bias": False, "attention_dropout": 0.0, "attn_logit_softcapping": None, "bos_token_id": 1,
            "cache_implementation": "hybrid", "eos_token_id": 2, "final_logit_softcapping": None,
            "head_dim": a.head_dim, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": a.dim,
            "initializer_range": 0.02, "intermediate_size": a.hidden, "layer_types": layer_types(a),
            "max_position_embeddings": a.max_pos, "model_type": "gemma3_text", "num_attention_heads": a.heads,
            "num_hidden_layers": a.layers, "num_key_value_heads": a.kv_heads,
            "pad_token_id": TOKEN_IDS["<pad>"], "query_pre_attn_scalar": a.query_pre_attn_scalar,
            "rms_norm_eps": 1e-06, "rope_local_base_freq": a.rope_local_base_freq,
            "rope_scaling": {"factor": 8.0, "rope_type": "linear"}, "rope_theta": a.rope_theta,
            "sliding_window": a.sliding_window, "sliding_window_pattern": a.sliding_window_pattern,
            "tie_word_embeddings": tie, "torch_dtype": torch_dtype, "use_cache": True, "vocab_size": a.vocab,
        },
        "tie_word_embeddings": tie,
        "torch_dtype": torch_dtype,
        "vision_config": {
            "attention_dropout": 0.0, "hidden_act": a.hidden_act, "hidden_size": a.vision_dim,
            "image_size": a.image_size, "intermediate_size": a.vision_hidden, "layer_norm_eps": 1e-06,
            "model_type": "siglip_vision_model", "num_attention_heads": a.vision_heads, "num_channels": 3,
            "num_hidden_layers": a.vision_layers, "patch_size": a.patch_size, "torch_dtype": torch_dtype,
            "vision_use_head": False,
        },
    }


def write_tokenizer(a, out, source):
    """stories260K's tokenizer.json with Gemma 3's special tokens added and Gemma's normalizer and
    decoder; Gemma 3's tokenizer_config.json, chat_template.json, preprocessor_config.json,
    processor_config.json and generation_config.json."""
    with open(source) as f:
        tok = json.load(f)
    tok["added_tokens"] += [special_token(TOKEN_IDS[name], name) for name in TOKENS]
    # Gemma's SentencePiece model adds no dummy prefix: spaces become "▁", nothing is prepended,
    # and decoding strips no leading space.
    tok["normalizer"] = {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}
    tok["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
        {"type": "Fuse"}]}
    with open(os.path.join(out, "tokenizer.json"), "w") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)
    decoder = {str(t["id"]): {k: v for k, v in t.items() if k != "id"} for t in tok["added_tokens"]}
    tokenizer_config = {
        "add_bos_token": True, "add_eos_token": False, "added_tokens_decoder": decoder,
        "boi_token": "<start_of_image>", "bos_token": "<s>", "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False, "eoi_token": "<end_of_image>", "eos_token": "</s>",
        "extra_special_tokens": {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                 "image_token": "<image_soft_token>"},
        "image_token": "<image_soft_token>", "model_max_length": a.max_pos, "pad_token": "<pad>",
        "padding_side": "left", "processor_class": "Gemma3Processor", "spaces_between_special_tokens": False,
        "tokenizer_class": "GemmaTokenizer", "unk_token": "<unk>", "use_default_system_prompt": False,
    }
    preprocessor = {
        "do_convert_rgb": True, "do_normalize": True, "do_pan_and_scan": False, "do_rescale": True,
        "do_resize": True, "image_mean": [0.5, 0.5, 0.5], "image_processor_type": "Gemma3ImageProcessor",
        "image_seq_length": a.mm_tokens_per_image, "image_std": [0.5, 0.5, 0.5],
        "processor_class": "Gemma3Processor", "resample": 2, "rescale_factor": 1 / 255,
        "size": {"height": a.image_size, "width": a.image_size},
    }
    processor = {"image_seq_length": a.mm_tokens_per_image, "processor_class": "Gemma3Processor"}
    generation = {"bos_token_id": 1, "cache_implementation": "hybrid",
                  "eos_token_id": [2, TOKEN_IDS["<end_of_turn>"]], "pad_token_id": TOKEN_IDS["<pad>"]}
    for name, value in (("tokenizer_config.json", tokenizer_config),
                        ("chat_template.json", {"chat_template": CHAT_TEMPLATE}),
                        ("preprocessor_config.json", preprocessor), ("processor_config.json", processor),
                        ("generation_config.json", generation)):
        with open(os.path.join(out, name), "w") as f:
            json.dump(value, f, indent=2)

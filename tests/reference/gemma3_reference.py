"""Float64 reference of Gemma3ForConditionalGeneration, run by vision_reference.py for a config of
model_type "gemma3" (same CLI and output as for llava). Written from transformers' modeling_gemma3.py,
processing_gemma3.py, image_processing_gemma3.py and modeling_siglip.py:

  - Gemma3ImageProcessor.preprocess (slow, PIL): vLLM's RGB conversion (vision_reference.load_rgb),
    a resize of the uint8 image to size.height x size.width with PIL's resample filter (bilinear,
    reducing_gap None, the aspect ratio not kept), rescale (uint8 as float64 * rescale_factor, cast
    to float32), normalize in float32 ((x - mean) / std, mean and std 0.5), channels first. Pan and
    scan is not supported (do_pan_and_scan must be false, the processor's default).
  - SiglipVisionTransformer: the patch conv (with bias) as a matmul over each patch's (c, y, x)
    values, patches in row-major order, plus one position embedding per patch; no class token,
    no pre-layernorm; pre-LN encoder layers (layer_norm1, bidirectional attention with biases and
    scale head_dim^-0.5, residual; layer_norm2, fc1, hidden_act (gelu_pytorch_tanh), fc2,
    residual); post_layernorm on the last layer's output (last_hidden_state). No head.
  - Gemma3MultiModalProjector: the (patches, vh) rows as a (vh, side, side) grid, side = image_size
    // patch_size; AvgPool2d with kernel = stride = side // sqrt(mm_tokens_per_image); the pooled
    grid row-major; Gemma3RMSNorm (x / sqrt(mean(x^2) + vision layer_norm_eps) * (1 + w)); then
    @ mm_input_projection_weight (vh, text hidden).
  - Gemma3Processor: each <start_of_image> (boi_token_index) of the prompt becomes the ids of
        "\\n\\n" + <start_of_image> + mm_tokens_per_image x <image_soft_token> + <end_of_image> + "\\n\\n",
    replacing it in place, where "\\n\\n" is the ids the checkpoint's tokenizer.json gives that text
    on its own (its normalizer, BPE merges, byte fallback; as vLLM encodes the replacement text).
    With stories260K's vocabulary (make_random_vlm.py --arch gemma3) "\\n" has no token of its own
    and no merges, so "\\n\\n" is [13, 13] (<0x0A> twice) and the token-level expansion equals the
    processor's text-level one in every context. Where the vocabulary has the tokens "\\n", "\\n\\n",
    "\\n\\n\\n" and "\\n\\n\\n\\n" (Gemma's: 107, 108, 109, 110), the expanded ids then have
    ["\\n", "\\n\\n"] and ["\\n\\n", "\\n"] replaced by "\\n\\n\\n" and ["\\n\\n", "\\n\\n"] by "\\n\\n\\n\\n"
    (in that order, left to right), as vLLM's Gemma3MultiModalProcessor._apply_token_matches does
    to match the text-level tokenization (e.g. "<start_of_turn>user\\n" before an image).
  - Gemma3Model.forward: the token embeddings of the expanded ids scaled by the normalizer
    (Gemma3TextScaledWordEmbedding: sqrt(hidden_size) rounded to the weights' dtype), then the
    images' feature rows, in order, put at the <image_soft_token> positions (masked_scatter) NOT
    scaled; the text model takes these inputs_embeds as they are.
  - The mask (create_causal_mask_mapping, token_type_ids_mask_function, masking_utils): token_type_ids
    are 1 at the <image_soft_token> positions; each maximal run of them is one image group. On
    full layers query q may attend key k if k <= q OR q and k lie in the same image group; on
    sliding layers if (k <= q AND q - k < sliding_window) OR same image group -- the group's
    bidirectional block is OR-ed after the window, so it holds even where an image is longer
    than the window. <start_of_image>, <end_of_image> and text tokens stay causal; an image
    attends to earlier images causally and never to later ones.

Each greedy step recomputes the whole sequence with the prompt's image groups (as transformers'
prefill does; generated tokens are text and attend causally).
"""
import json
import math
import os
import sys
import unicodedata

import numpy as np

import reference_forward as rf
import vision_reference as vr

# transformers' config defaults for the keys a published Gemma 3 config leaves out
# (google/gemma-3-4b-it's text_config names only a few).
GEMMA3_DEFAULTS = dict(mm_tokens_per_image=256, boi_token_index=255999, eoi_token_index=256000,
                       image_token_index=262144)
GEMMA3_TEXT_DEFAULTS = dict(model_type="gemma3_text", vocab_size=262208, hidden_size=2304, intermediate_size=9216,
                            num_hidden_layers=26, num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                            hidden_activation="gelu_pytorch_tanh", max_position_embeddings=131072, rms_norm_eps=1e-6,
                            rope_theta=1000000.0, query_pre_attn_scalar=256, sliding_window=4096,
                            final_logit_softcapping=None, attn_logit_softcapping=None, rope_scaling=None,
                            rope_local_base_freq=10000.0, sliding_window_pattern=6)
SIGLIP_VISION_DEFAULTS = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                              num_channels=3, image_size=224, patch_size=16, hidden_act="gelu_pytorch_tanh",
                              layer_norm_eps=1e-6)
# Gemma3ImageProcessor's defaults (IMAGENET_STANDARD_MEAN / _STD, bilinear).
GEMMA3_PROCESSOR_DEFAULTS = dict(do_resize=True, size={"height": 224, "width": 224}, resample=2, do_rescale=True,
                                 rescale_factor=1 / 255, do_normalize=True, image_mean=[0.5, 0.5, 0.5],
                                 image_std=[0.5, 0.5, 0.5], do_convert_rgb=True, do_pan_and_scan=False)


def preprocess(image, pp):
    """Gemma3ImageProcessor.preprocess of one RGB PIL image: float32 (3, height, width)."""
    p = dict(GEMMA3_PROCESSOR_DEFAULTS, **{k: v for k, v in pp.items() if v is not None})
    if p["do_pan_and_scan"]:
        sys.exit("vision_reference: Gemma 3 with do_pan_and_scan is not supported")
    # vision_reference.preprocess with no centre crop: a {height, width} size resizes to exactly that.
    return vr.preprocess(image, dict(p, do_center_crop=False))


# ----------------------------------------------------------------------------------------------
# the prompt: "\n\n" as the tokenizer gives it

def normalize(spec, text):
    """A tokenizers normalizer (Sequence, Prepend, Replace of a string, NFC/NFD/NFKC/NFKD) on text."""
    if not spec:
        return text
    kind = spec["type"]
    if kind == "Sequence":
        for s in spec["normalizers"]:
            text = normalize(s, text)
        return text
    if kind == "Prepend":
        return spec["prepend"] + text
    if kind == "Replace" and "String" in spec["pattern"]:
        return text.replace(spec["pattern"]["String"], spec["content"])
    if kind in ("NFC", "NFD", "NFKC", "NFKD"):
        return unicodedata.normalize(kind, text)
    sys.exit(f"vision_reference: tokenizer normalizer {kind} not supported")


def encode_plain(tokenizer, text):
    """tokenizer.json's BPE model on text that holds no added token and no space: normalizer, then
    the merges by rank (lowest first, leftmost among equals), each piece its vocabulary id or, with
    byte_fallback, its UTF-8 bytes' <0xXX> ids."""
    pre = tokenizer.get("pre_tokenizer")
    model = tokenizer["model"]
    if model.get("type") != "BPE" or " " in text or (pre and not (pre.get("type") == "Split"
                                                                   and pre["pattern"].get("String") == " ")):
        sys.exit("vision_reference: only a BPE tokenizer.json without a pre-tokenizer (or a split on spaces) "
                 "is supported for Gemma 3's prompt expansion")
    vocab = model["vocab"]
    ranks = {tuple(m.split(" ") if isinstance(m, str) else m): r for r, m in enumerate(model["merges"])}
    pieces = list(normalize(tokenizer.get("normalizer"), text))
    while len(pieces) > 1:
        rank, i = min((ranks.get(pair, math.inf), i) for i, pair in enumerate(zip(pieces, pieces[1:])))
        if rank == math.inf:
            break
        pieces[i:i + 2] = [pieces[i] + pieces[i + 1]]
    ids = []
    for piece in pieces:
        if piece in vocab:
            ids.append(vocab[piece])
        elif model.get("byte_fallback"):
            ids += [vocab[f"<0x{b:02X}>"] for b in piece.encode("utf-8")]
        else:
            ids.append(vocab[model["unk_token"]])
    return ids


def replace_runs(ids, match, replacement):
    """Non-overlapping occurrences of match, left to right, replaced (vLLM's replace_token_matches)."""
    out, i = [], 0
    while i < len(ids):
        if ids[i:i + len(match)] == match:
            out += replacement
            i += len(match)
        else:
            out.append(ids[i])
            i += 1
    return out


def merge_newlines(ids, vocab):
    """vLLM's fix-up after the expansion, for vocabularies with tokens of 1 to 4 newlines."""
    names = ["\n", "\n\n", "\n\n\n", "\n\n\n\n"]
    if not all(n in vocab for n in names):
        return ids
    n1, n2, n3, n4 = (vocab[n] for n in names)
    ids = replace_runs(ids, [n1, n2], [n3])
    ids = replace_runs(ids, [n2, n1], [n3])
    return replace_runs(ids, [n2, n2], [n4])


def load_tokenizer(model_dir):
    path = os.path.join(model_dir, "tokenizer.json")
    if not os.path.exists(path):
        sys.exit(f"vision_reference: {path} not found; Gemma 3's prompt expansion needs the ids of \"\\n\\n\"")
    with open(path) as f:
        return json.load(f)


# ----------------------------------------------------------------------------------------------
# the model

class SiglipTower(vr.VisionTower):
    """SiglipVisionTransformer up to last_hidden_state (post_layernorm applied)."""

    def embeddings(self, pixels):
        """(C, H, W) -> (patches, hidden): the conv with bias, row-major, plus position embeddings."""
        c, h, w = pixels.shape
        p = self.patch
        if h != self.c["image_size"] or w != self.c["image_size"]:
            sys.exit(f"vision_reference: pixels {h}x{w}, but the tower takes {self.c['image_size']} squared")
        patches = pixels.reshape(c, h // p, p, w // p, p).transpose(1, 3, 0, 2, 4).reshape(-1, c * p * p)
        conv = self.w["embeddings.patch_embedding.weight"]  # (hidden, C, p, p)
        x = patches @ conv.reshape(conv.shape[0], -1).T + self.w["embeddings.patch_embedding.bias"]
        return x + self.w["embeddings.position_embedding.weight"][: x.shape[0]]

    def last_hidden_state(self, pixels):
        x = self.embeddings(pixels.astype(np.float64))
        for i in range(self.c["num_hidden_layers"]):
            p = f"encoder.layers.{i}."
            x = x + self.attention(self.norm(x, p + "layer_norm1"), p + "self_attn.")
            x = x + self.linear(self.act(self.linear(self.norm(x, p + "layer_norm2"), p + "mlp.fc1")), p + "mlp.fc2")
        return self.norm(x, "post_layernorm")


class Gemma3:
    def __init__(self, config, weights, tokenizer=None):
        self.c = c = dict(GEMMA3_DEFAULTS, **config)
        for index, alias in (("image_token_index", "image_token_id"), ("boi_token_index", "boi_token_id"),
                             ("eoi_token_index", "eoi_token_id")):
            if index not in config and alias in config:
                c[index] = config[alias]
        text_config = dict(GEMMA3_TEXT_DEFAULTS, tie_word_embeddings=c.get("tie_word_embeddings", True))
        text_config.update(c.get("text_config") or {})
        text_config.setdefault("torch_dtype", c.get("torch_dtype") or c.get("dtype"))
        if text_config.get("use_bidirectional_attention"):
            sys.exit("vision_reference: Gemma 3 with use_bidirectional_attention is not supported")
        w = vr.canonical_names(weights)
        self.text = rf.Model(text_config, {k[len("language_model."):]: v for k, v in w.items()
                                           if k.startswith("language_model.")})
        vision_config = dict(SIGLIP_VISION_DEFAULTS, **(c.get("vision_config") or {}))
        self.tower = SiglipTower(vision_config, w)
        self.eps = vision_config["layer_norm_eps"]
        self.projection = w["multi_modal_projector.mm_input_projection_weight"]  # (vh, th)
        self.soft_norm = w["multi_modal_projector.mm_soft_emb_norm.weight"]  # (vh)
        self.tokens_per_image = c["mm_tokens_per_image"]
        self.boi, self.eoi, self.soft = c["boi_token_index"], c["eoi_token_index"], c["image_token_index"]
        self.image_token = self.boi  # the prompt's placeholder, one per image
        self.tokenizer = tokenizer

    def image_features(self, pixels):
        """Gemma3Model.get_image_features of one image: (mm_tokens_per_image, text hidden)."""
        h = self.tower.last_hidden_state(pixels)  # (patches, vh), row-major
        side = self.tower.c["image_size"] // self.tower.patch
        kernel = side // int(self.tokens_per_image ** 0.5)
        pooled_side = side // kernel  # AvgPool2d(kernel, stride=kernel): floor((side - kernel) / kernel) + 1
        if pooled_side ** 2 != self.tokens_per_image:
            sys.exit(f"vision_reference: pooling a {side}x{side} grid by {kernel} gives {pooled_side ** 2} tokens, "
                     f"not mm_tokens_per_image {self.tokens_per_image}")
        grid = h.T.reshape(-1, side, side)[:, :pooled_side * kernel, :pooled_side * kernel]
        pooled = grid.reshape(-1, pooled_side, kernel, pooled_side, kernel).mean(axis=(2, 4))
        rows = pooled.reshape(pooled.shape[0], -1).T  # (tokens, vh), row-major over the pooled grid
        normed = rows / np.sqrt((rows * rows).mean(-1, keepdims=True) + self.eps) * (1.0 + self.soft_norm)
        return normed @ self.projection

    def newline_ids(self):
        if self.tokenizer is None:
            sys.exit("vision_reference: Gemma 3's prompt expansion needs the checkpoint's tokenizer.json")
        return encode_plain(self.tokenizer, "\n\n")

    def expand(self, prompt):
        """Gemma3Processor's expansion of each <start_of_image>: (ids, [[start, length] of each
        image's soft tokens])."""
        for token, name in ((self.soft, "<image_soft_token>"), (self.eoi, "<end_of_image>")):
            if token in prompt:
                sys.exit(f"vision_reference: the prompt holds {name} ({token}); give one <start_of_image> "
                         f"({self.boi}) per image and the expansion adds the rest")
        newline = self.newline_ids()
        image = newline + [self.boi] + [self.soft] * self.tokens_per_image + [self.eoi] + newline
        ids = []
        for token in prompt:
            ids += image if token == self.boi else [token]
        ids = merge_newlines(ids, self.tokenizer["model"]["vocab"])
        return ids, soft_runs(ids, self.soft)

    def image_groups(self, t, ranges):
        """(t, t) bool: query q and key k lie in the same image's soft tokens (the or-mask of
        token_type_ids_mask_function)."""
        groups = np.zeros((t, t), dtype=bool)
        for start, length in ranges:
            groups[start:start + length, start:start + length] = True
        return groups

    def logits(self, ids, features, ranges, bidirectional=True):
        """(T, vocab). bidirectional=False: a causal-only run (no image groups) for comparison."""
        ids = np.asarray(ids)
        table = self.text.w["model.embed_tokens.weight"]
        x = table[np.where(ids < table.shape[0], ids, 0)]  # transformers embeds out-of-vocabulary image ids as 0
        x = x * rf.dtype_round(self.text.c["hidden_size"] ** 0.5, self.text.normalizer_dtype)
        for (start, length), f in zip(ranges, features):
            x[start:start + length] = f
        groups = self.image_groups(len(ids), ranges) if bidirectional else None
        return self.text.logits(ids, x, or_mask=groups)


def soft_runs(ids, soft):
    """[[start, length], ...] of the maximal runs of the soft token."""
    runs = []
    for i, token in enumerate(ids):
        if token != soft:
            continue
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1][1] += 1
        else:
            runs.append([i, 1])
    return runs


def run(model_dir, config, weights, prompt, image_paths, steps, pixels_out=None):
    model = Gemma3(config, weights, load_tokenizer(model_dir))
    num_images = prompt.count(model.boi)
    if num_images != len(image_paths):
        sys.exit(f"vision_reference: the prompt has {num_images} <start_of_image> tokens ({model.boi}) "
                 f"but {len(image_paths)} images were given")
    pp = vr.load_preprocessor(model_dir)
    pixels = [preprocess(vr.load_rgb(p), pp) for p in image_paths]
    if pixels_out:
        for i, px in enumerate(pixels):
            with open(f"{pixels_out}{i}.f32", "wb") as f:
                f.write(px.astype("<f4").tobytes())
    features = [model.image_features(px) for px in pixels]
    expanded, ranges = model.expand(prompt)
    tokens, logits, margins = vr.greedy(model, expanded, features, ranges, steps)
    return {"architecture": (config.get("architectures") or ["Gemma3ForConditionalGeneration"])[0],
            "prompt": expanded, "image_token_ranges": ranges, "tokens": tokens,
            "logits": [[float(v) for v in row] for row in logits], "margins": margins,
            "image_features": [[[float(v) for v in row] for row in f] for f in features]}

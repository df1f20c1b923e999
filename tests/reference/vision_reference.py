#!/usr/bin/env python3
"""Float64 reference of LlavaForConditionalGeneration (image preprocessing, CLIP vision tower,
projector, prompt expansion, Llama decoder) and greedy generation, to compare the engine's
pixels, image features and logits against.

  /usr/bin/python3 tests/reference/vision_reference.py MODEL_DIR --prompt 1,512,5,9 --image a.png \\
      [--image b.png ...] --steps 16 --out OUT.json [--pixels-out /tmp/pixels-]

--prompt holds one image token (config image_token_index) per --image, in the images' order.
Written from the transformers code of each stage:
  - loading: vLLM's ImageMediaIO (PIL; RGBA composited on white, any other mode .convert("RGB")).
  - CLIPImageProcessor.preprocess (image_processing_clip.py, image_transforms.py), as
    preprocessor_config.json configures it: resize the shortest edge to size.shortest_edge (the
    long edge int(short * long / short), truncated) with PIL's resample filter on the uint8
    image (reducing_gap None); center crop (top = (h - crop_h) // 2, zero padding where the crop
    is larger); rescale (uint8 as float64 * rescale_factor, cast to float32); normalize in
    float32 ((x - mean) / std); channels first. Everything after is float64.
  - CLIPVisionTransformer (modeling_clip.py): the patch conv as a matmul over each patch's
    (c, y, x) values, patches in row-major order, the class embedding first, plus position
    embeddings; pre_layrnorm; pre-LN encoder layers (layer_norm1, bidirectional attention with
    biases and scale head_dim^-0.5, residual; layer_norm2, fc1, hidden_act, fc2, residual).
    hidden_states[0] is the embeddings after pre_layrnorm, hidden_states[i] the output of layer
    i; post_layernorm is not used.
  - LlavaModel.get_image_features (modeling_llava.py): hidden_states[vision_feature_layer] (a
    list of layers is concatenated on the feature axis), the CLS position dropped for the
    "default" strategy and kept for "full"; multi_modal_projector: linear_1, projector_hidden_act
    (gelu = exact erf gelu), linear_2.
  - LlavaProcessor (processing_llava.py): each image token becomes (H // patch) * (W // patch) + 1
    copies, one fewer for "default", H and W being the preprocessed pixels' size. LlavaModel then
    puts the images' feature rows, in order, at those positions of the token embeddings
    (masked_scatter) and runs the language model: reference_forward.py's decoder, with
    text_config's keys over LlamaConfig's defaults.

Qwen2_5_VLForConditionalGeneration (model_type qwen2_5_vl) runs qwen2_5_vl_reference.py instead;
its docstring says what it follows and what it writes.
Gemma3ForConditionalGeneration (model_type gemma3) runs gemma3_reference.py: --prompt holds one
<start_of_image> (boi_token_index) per image, and image_token_ranges are the <image_soft_token>
runs of the expanded prompt; its docstring states the expansion and the attention mask.

Each greedy step recomputes the whole sequence; image features go to the prompt's image
positions only (a generated token equal to the image token is embedded as a token, as
transformers does once the prompt is in the cache).

Output JSON: architecture, prompt (the expanded ids), image_token_ranges ([start, length] of each
image in the expanded prompt), tokens (argmax, lowest index on ties), logits (each step's
vocabulary row), margins (top-1 minus top-2) and image_features (per image, the projector's output
rows). With --pixels-out PREFIX each image's preprocessed pixels are written as little-endian
float32 (C, H, W) to PREFIX<i>.f32.
"""
import argparse
import json
import os
import sys

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_forward as rf  # noqa: E402

# transformers' config defaults for the keys a published llava config may leave out.
LLAMA_DEFAULTS = dict(model_type="llama", vocab_size=32000, hidden_size=4096, intermediate_size=11008,
                      num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=None, hidden_act="silu",
                      max_position_embeddings=2048, rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None,
                      tie_word_embeddings=False)
CLIP_VISION_DEFAULTS = dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
                            num_channels=3, image_size=224, patch_size=32, hidden_act="quick_gelu",
                            layer_norm_eps=1e-5)
LLAVA_DEFAULTS = dict(image_token_index=32000, projector_hidden_act="gelu", vision_feature_select_strategy="default",
                      vision_feature_layer=-2)
# CLIPImageProcessor's defaults (OPENAI_CLIP_MEAN / OPENAI_CLIP_STD).
CLIP_PROCESSOR_DEFAULTS = dict(do_resize=True, size={"shortest_edge": 224}, resample=3, do_center_crop=True,
                               crop_size={"height": 224, "width": 224}, do_rescale=True, rescale_factor=1 / 255,
                               do_normalize=True, image_mean=[0.48145466, 0.4578275, 0.40821073],
                               image_std=[0.26862954, 0.26130258, 0.27577711], do_convert_rgb=True)


# ----------------------------------------------------------------------------------------------
# images

def load_rgb(path):
    """vLLM's ImageMediaIO with image_mode RGB: RGBA pasted on white through its alpha, any other
    mode through PIL's convert("RGB")."""
    image = Image.open(path)
    image.load()
    if image.mode == "RGB":
        return image
    if image.mode == "RGBA":
        rgb = Image.new("RGB", image.size, (255, 255, 255))
        rgb.paste(image, mask=image.split()[3])
        return rgb
    return image.convert("RGB")


def resize_output_size(height, width, size):
    """get_resize_output_image_size(default_to_square=False) for a size dict: (height, width)."""
    if "shortest_edge" in size:
        short, long = (width, height) if width <= height else (height, width)
        new_short, new_long = size["shortest_edge"], int(size["shortest_edge"] * long / short)
        return (new_long, new_short) if width <= height else (new_short, new_long)
    return size["height"], size["width"]


def center_crop(chw, crop_height, crop_width):
    """image_transforms.center_crop on a (C, H, W) array, zero padding where the crop is larger."""
    _, h, w = chw.shape
    top, left = (h - crop_height) // 2, (w - crop_width) // 2
    bottom, right = top + crop_height, left + crop_width
    if top >= 0 and bottom <= h and left >= 0 and right <= w:
        return chw[:, top:bottom, left:right]
    new_h, new_w = max(crop_height, h), max(crop_width, w)
    padded = np.zeros((chw.shape[0], new_h, new_w), dtype=chw.dtype)
    top_pad, left_pad = (new_h - h) // 2, (new_w - w) // 2
    padded[:, top_pad:top_pad + h, left_pad:left_pad + w] = chw
    top, bottom, left, right = top + top_pad, bottom + top_pad, left + left_pad, right + left_pad
    return padded[:, max(0, top):min(new_h, bottom), max(0, left):min(new_w, right)]


def preprocess(image, pp):
    """CLIPImageProcessor.preprocess of one RGB PIL image: float32 (3, H, W)."""
    p = dict(CLIP_PROCESSOR_DEFAULTS, **pp)
    if p["do_convert_rgb"] and image.mode != "RGB":
        image = image.convert("RGB")
    if p["do_resize"]:
        height, width = resize_output_size(image.height, image.width, p["size"])
        image = image.resize((width, height), resample=p["resample"], reducing_gap=None)
    x = np.array(image).transpose(2, 0, 1)  # uint8 (C, H, W)
    if p["do_center_crop"]:
        x = center_crop(x, p["crop_size"]["height"], p["crop_size"]["width"])
    if p["do_rescale"]:
        x = (x.astype(np.float64) * p["rescale_factor"]).astype(np.float32)
    if p["do_normalize"]:
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float32)
        mean = np.array(p["image_mean"], dtype=x.dtype)[:, None, None]
        std = np.array(p["image_std"], dtype=x.dtype)[:, None, None]
        x = (x - mean) / std
    return np.ascontiguousarray(x, dtype=np.float32)


# ----------------------------------------------------------------------------------------------
# the model

def activation(name):
    if name == "quick_gelu":
        return lambda x: x / (1.0 + np.exp(-1.702 * x))
    if name == "relu":
        return lambda x: np.maximum(x, 0.0)
    return rf.act(name)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def canonical_names(weights):
    """Published llava-hf names (language_model.model.*, language_model.lm_head, vision_tower.*,
    multi_modal_projector.*) also for checkpoints saved by transformers >= 4.52 (model.*)."""
    out = {}
    for name, value in weights.items():
        if name.startswith("model.language_model."):
            name = "language_model.model." + name[len("model.language_model."):]
        elif name.startswith("lm_head."):
            name = "language_model." + name
        elif name.startswith(("model.vision_tower.", "model.multi_modal_projector.")):
            name = name[len("model."):]
        out[name] = value
    return out


class VisionTower:
    """CLIPVisionTransformer up to its encoder's hidden states."""

    def __init__(self, config, weights):
        self.c = c = dict(CLIP_VISION_DEFAULTS, **config)
        self.w = {k[len("vision_tower.vision_model."):]: v for k, v in weights.items()
                  if k.startswith("vision_tower.vision_model.")}
        self.heads, self.eps, self.patch = c["num_attention_heads"], c["layer_norm_eps"], c["patch_size"]
        self.act = activation(c["hidden_act"])

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def norm(self, x, name):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def embeddings(self, pixels):
        """(C, H, W) -> (1 + patches, hidden): CLS then the patches in row-major order."""
        c, h, w = pixels.shape
        p = self.patch
        if h != self.c["image_size"] or w != self.c["image_size"]:
            sys.exit(f"vision_reference: pixels {h}x{w}, but the tower takes {self.c['image_size']} squared")
        patches = pixels.reshape(c, h // p, p, w // p, p).transpose(1, 3, 0, 2, 4).reshape(-1, c * p * p)
        conv = self.w["embeddings.patch_embedding.weight"]  # (hidden, C, p, p), no bias
        x = patches @ conv.reshape(conv.shape[0], -1).T
        x = np.concatenate([self.w["embeddings.class_embedding"][None], x], axis=0)
        return x + self.w["embeddings.position_embedding.weight"][: x.shape[0]]

    def attention(self, x, p):
        t, hidden = x.shape
        hd = hidden // self.heads
        q, k, v = (self.linear(x, p + n).reshape(t, self.heads, hd) for n in ("q_proj", "k_proj", "v_proj"))
        scores = np.einsum("qhd,khd->hqk", q, k) * hd ** -0.5
        out = np.einsum("hqk,khd->qhd", rf.softmax(scores), v).reshape(t, hidden)
        return self.linear(out, p + "out_proj")

    def hidden_states(self, pixels):
        """[embeddings after pre_layrnorm, output of layer 0, ..., output of the last layer]."""
        x = self.norm(self.embeddings(pixels.astype(np.float64)), "pre_layrnorm")
        states = [x]
        for i in range(self.c["num_hidden_layers"]):
            p = f"encoder.layers.{i}."
            x = x + self.attention(self.norm(x, p + "layer_norm1"), p + "self_attn.")
            x = x + self.linear(self.act(self.linear(self.norm(x, p + "layer_norm2"), p + "mlp.fc1")), p + "mlp.fc2")
            states.append(x)
        return states


class Llava:
    def __init__(self, config, weights):
        self.c = c = dict(LLAVA_DEFAULTS, **config)
        if "image_token_index" not in config and "image_token_id" in config:
            c["image_token_index"] = config["image_token_id"]
        w = canonical_names(weights)
        text_config = dict(LLAMA_DEFAULTS, tie_word_embeddings=c.get("tie_word_embeddings", False))
        text_config.update(c.get("text_config") or {})
        text_weights = {k[len("language_model."):]: v for k, v in w.items() if k.startswith("language_model.")}
        self.text = rf.Model(text_config, text_weights)
        self.tower = VisionTower(c.get("vision_config") or {}, w)
        self.projector = {k[len("multi_modal_projector."):]: v for k, v in w.items()
                          if k.startswith("multi_modal_projector.")}
        self.projector_act = activation(c["projector_hidden_act"])
        self.image_token = c["image_token_index"]
        self.strategy = c["vision_feature_select_strategy"]
        if self.strategy not in ("default", "full"):
            sys.exit(f"vision_reference: vision_feature_select_strategy {self.strategy!r} not supported")

    def project(self, x, name):
        b = self.projector.get(name + ".bias")  # multimodal_projector_bias false: no biases
        y = x @ self.projector[name + ".weight"].T
        return y if b is None else y + b

    def image_features(self, pixels):
        """LlavaModel.get_image_features of one image: (tokens, text hidden)."""
        states = self.tower.hidden_states(pixels)
        layers = self.c["vision_feature_layer"]
        layers = layers if isinstance(layers, list) else [layers]
        skip = 1 if self.strategy == "default" else 0
        selected = np.concatenate([states[i][skip:] for i in layers], axis=-1)
        return self.project(self.projector_act(self.project(selected, "linear_1")), "linear_2")

    def num_image_tokens(self, pixels):
        """LlavaProcessor: (H // patch) * (W // patch) + 1, one fewer for the default strategy."""
        _, h, w = pixels.shape
        p = self.tower.patch
        return (h // p) * (w // p) + 1 - (1 if self.strategy == "default" else 0)

    def expand(self, prompt, counts):
        """Each image token replaced by counts[i] copies: (expanded ids, [[start, length], ...])."""
        ids, ranges = [], []
        for token in prompt:
            if token == self.image_token:
                ranges.append([len(ids), counts[len(ranges)]])
                ids += [token] * counts[len(ranges) - 1]
            else:
                ids.append(token)
        return ids, ranges

    def logits(self, ids, features, ranges):
        x = self.text.w["model.embed_tokens.weight"][np.asarray(ids)].copy()
        for (start, length), f in zip(ranges, features):
            x[start:start + length] = f
        return self.text.logits(ids, x)


def greedy(model, prompt, features, ranges, steps):
    ids, tokens, all_logits, margins = list(prompt), [], [], []
    for _ in range(steps):
        logits = model.logits(ids, features, ranges)[-1]
        token = int(np.argmax(logits))
        top2 = np.partition(logits, -2)[-2:]
        tokens.append(token)
        all_logits.append(logits)
        margins.append(float(top2[1] - top2[0]))
        ids.append(token)
    return tokens, all_logits, margins


def load_preprocessor(model_dir):
    path = os.path.join(model_dir, "preprocessor_config.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def run(model_dir, prompt, image_paths, steps, pixels_out=None):
    config, weights = rf.load_model_dir(model_dir)
    if config.get("model_type") == "qwen2_5_vl":
        import qwen2_5_vl_reference
        return qwen2_5_vl_reference.run(model_dir, config, weights, prompt, image_paths, steps, pixels_out)
    if config.get("model_type") == "gemma3":
        import gemma3_reference
        return gemma3_reference.run(model_dir, config, weights, prompt, image_paths, steps, pixels_out)
    model = Llava(config, weights)
    num_images = sum(1 for t in prompt if t == model.image_token)
    if num_images != len(image_paths):
        sys.exit(f"vision_reference: the prompt has {num_images} image tokens ({model.image_token}) "
                 f"but {len(image_paths)} images were given")
    pp = load_preprocessor(model_dir)
    pixels = [preprocess(load_rgb(p), pp) for p in image_paths]
    if pixels_out:
        for i, px in enumerate(pixels):
            with open(f"{pixels_out}{i}.f32", "wb") as f:
                f.write(px.astype("<f4").tobytes())
    features = [model.image_features(px) for px in pixels]
    expanded, ranges = model.expand(prompt, [model.num_image_tokens(px) for px in pixels])
    for (_, length), f in zip(ranges, features):
        if f.shape[0] != length:
            sys.exit(f"vision_reference: {f.shape[0]} feature rows for {length} image tokens")
    tokens, logits, margins = greedy(model, expanded, features, ranges, steps)
    return {"architecture": (config.get("architectures") or ["LlavaForConditionalGeneration"])[0],
            "prompt": expanded, "image_token_ranges": ranges, "tokens": tokens,
            "logits": [[float(v) for v in row] for row in logits], "margins": margins,
            "image_features": [[[float(v) for v in row] for row in f] for f in features]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("--prompt", required=True, help="comma-separated token ids, one image token per image")
    ap.add_argument("--image", action="append", default=[], help="an image file (repeat, in the prompt's order)")
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--out", help="output JSON (default: stdout)")
    ap.add_argument("--pixels-out", metavar="PREFIX", help="write image i's pixels to PREFIX<i>.f32")
    args = ap.parse_args()
    prompt = [int(x) for x in args.prompt.split(",") if x.strip()]
    if not prompt:
        sys.exit("vision_reference: the prompt is empty")
    result = run(args.model_dir, prompt, args.image, args.steps, args.pixels_out)
    text = json.dumps(result)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        print(f"vision_reference: {result['architecture']}: {len(result['image_token_ranges'])} image(s), "
              f"{len(result['prompt'])} prompt tokens, {len(result['tokens'])} tokens, "
              f"min margin {min(result['margins'], default=float('nan')):.4g} -> {args.out}")
    else:
        print(text)


if __name__ == "__main__":
    main()

"""Float64 reference of Qwen2_5_VLForConditionalGeneration; vision_reference.py runs it for a
config with model_type qwen2_5_vl (same CLI). Written from transformers' code of each stage:

  - loading: vision_reference.load_rgb (vLLM's RGB conversion: RGBA on white, else convert("RGB")).
  - Qwen2VLImageProcessor._preprocess (image_processing_qwen2_vl.py): smart_resize to multiples of
    patch_size * merge_size within [min_pixels, max_pixels] (size.shortest_edge / longest_edge,
    overridden by min_pixels / max_pixels keys); PIL resize of the uint8 image with `resample`
    (bicubic), reducing_gap None; rescale (uint8 as float64 * rescale_factor, to float32);
    normalize in float32; channels first; the one frame repeated to temporal_patch_size frames;
    patches.reshape(grid_t, tp, C, gh / m, m, p, gw / m, m, p).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flattened to (grid_t * gh * gw, C * tp * p * p): rows over (t, h / m, w / m, m, m), each
    merge block contiguous; columns over (channel, frame, y, x). grid_thw = (1, gh, gw).
  - Qwen2_5_VisionTransformerPretrainedModel.forward (modeling_qwen2_5_vl.py): the Conv3d patch
    embedding as a matmul over a row; rot_pos_emb (each patch's (h, w) in the rows' order, the
    2-D rotary of Qwen2_5_VisionRotaryEmbedding(head_dim / 2, theta 10000): [freqs(h), freqs(w)]);
    get_window_index (windows of window_size / merge / patch merged tokens a side, the grid padded
    at the bottom and right, empty windows dropped) reorders the merge blocks window by window;
    blocks in fullatt_block_indexes attend over the whole image (cu_seqlens), the others within a
    window (cu_window_seqlens); each block: x + attn(RMSNorm(x)), x + mlp(RMSNorm(x)), eps 1e-6,
    qkv and proj with biases, rotate_half rotary on q and k, scale head_dim^-0.5, no mask; the
    SwiGLU mlp (gate, up, down, all with biases, hidden_act). Qwen2_5_VLPatchMerger: ln_q
    (RMSNorm), each merge block's m^2 rows concatenated, mlp.0, exact GELU, mlp.2; then the window
    order undone (argsort(window_index)), so features run row-major over the (gh / m, gw / m) grid.
    Images never attend to each other, so each image runs alone.
  - Qwen2_5_VLProcessor: each image token (<|image_pad|>, image_token_id) becomes
    grid_t * grid_h * grid_w / merge^2 copies; Qwen2_5_VLModel puts the features there in order.
  - Qwen2_5_VLModel.get_rope_index: 3-D positions (t, h, w). For each image whose image token
    directly follows a vision_start token: the text before it counts on from the last position
    (max + 1) on all three axes; the image's tokens get (0, row, column) + that text's end; text
    after the last image again counts from max + 1. Generated tokens continue at
    index + rope_delta (rope_delta = max + 1 - prompt length), as transformers' cached decoding does.
  - The language model: reference_forward.py's Qwen2 decoder over the merged embeddings, with
    apply_multimodal_rotary_pos_emb: cos and sin from each axis' positions (inv_freq of the
    "default" rope: transformers turns rope type "mrope" into "default"), the rotary dims cut
    into mrope_section * 2 chunks, chunk i taking axis i % 3. The text config is the top-level
    keys (the published layout) or text_config (transformers >= 4.52 saves), over
    Qwen2_5_VLTextConfig's defaults.

Output JSON: vision_reference.py's fields (prompt expanded, image_token_ranges, tokens, logits,
margins, image_features) plus image_grid_thw ([t, h, w] per image, in patches), mrope_positions
(3 x expanded prompt length) and mrope_position_delta. --pixels-out PREFIX writes image i's
flattened patches (rows x C * tp * p * p) as little-endian float32 to PREFIX<i>.f32.
"""
import math
import sys

import numpy as np

import reference_forward as rf
import vision_reference as vr

# transformers' defaults for the keys a config may leave out.
TEXT_DEFAULTS = dict(vocab_size=152064, hidden_size=8192, intermediate_size=29568, num_hidden_layers=80,
                     num_attention_heads=64, num_key_value_heads=8, hidden_act="silu", max_position_embeddings=32768,
                     rms_norm_eps=1e-5, rope_theta=1000000.0, tie_word_embeddings=False, use_sliding_window=False,
                     sliding_window=4096, max_window_layers=80)
VISION_DEFAULTS = dict(depth=32, hidden_size=3584, hidden_act="silu", intermediate_size=3420, num_heads=16,
                       in_channels=3, patch_size=14, spatial_merge_size=2, temporal_patch_size=2, tokens_per_second=4,
                       window_size=112, out_hidden_size=3584, fullatt_block_indexes=[7, 15, 23, 31])
TOKEN_DEFAULTS = dict(image_token_id=151655, video_token_id=151656, vision_start_token_id=151652,
                      vision_end_token_id=151653)
PROCESSOR_DEFAULTS = dict(do_resize=True, resample=3, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
                          image_mean=[0.48145466, 0.4578275, 0.40821073],
                          image_std=[0.26862954, 0.26130258, 0.27577711], do_convert_rgb=True,
                          min_pixels=56 * 56, max_pixels=28 * 28 * 1280, patch_size=14, temporal_patch_size=2,
                          merge_size=2)
RMS_EPS = 1e-6  # the tower's and the merger's RMSNorm


# ----------------------------------------------------------------------------------------------
# images (Qwen2VLImageProcessor)

def processor_config(pp):
    """preprocessor_config.json over Qwen2VLImageProcessor's defaults. size's shortest_edge and
    longest_edge are the pixel bounds; min_pixels and max_pixels keys override them."""
    p = dict(PROCESSOR_DEFAULTS, **{k: v for k, v in pp.items() if v is not None})
    size = pp.get("size") or {}
    for key, size_key in (("min_pixels", "shortest_edge"), ("max_pixels", "longest_edge")):
        p[key] = pp[key] if pp.get(key) is not None else size.get(size_key, PROCESSOR_DEFAULTS[key])
    return p


def smart_resize(height, width, factor, min_pixels, max_pixels):
    """transformers' smart_resize: (height, width), multiples of factor, area in [min, max]."""
    if max(height, width) / min(height, width) > 200:
        sys.exit(f"vision_reference: absolute aspect ratio must be smaller than 200, got "
                 f"{max(height, width) / min(height, width)}")
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def resized_pixels(image, p):
    """The float32 (C, H, W) image after resize, rescale and normalize."""
    if p["do_convert_rgb"] and image.mode != "RGB":
        image = image.convert("RGB")
    if p["do_resize"]:
        height, width = smart_resize(image.height, image.width, p["patch_size"] * p["merge_size"],
                                     p["min_pixels"], p["max_pixels"])
        image = image.resize((width, height), resample=p["resample"], reducing_gap=None)
    x = np.array(image)  # uint8 (H, W, C)
    if p["do_rescale"]:
        x = (x.astype(np.float64) * p["rescale_factor"]).astype(np.float32)
    if p["do_normalize"]:
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float32)
        x = (x - np.array(p["image_mean"], dtype=x.dtype)) / np.array(p["image_std"], dtype=x.dtype)
    return np.ascontiguousarray(x.transpose(2, 0, 1), dtype=np.float32)


def patchify(chw, p):
    """One image (C, H, W) as Qwen2VLImageProcessor flattens it: (patches, (grid_t, grid_h, grid_w))."""
    tp, ps, m = p["temporal_patch_size"], p["patch_size"], p["merge_size"]
    frames = chw[None]
    if frames.shape[0] % tp:
        frames = np.concatenate([frames, np.repeat(frames[-1][None], tp - 1, axis=0)], axis=0)
    c, h, w = chw.shape
    grid_t, grid_h, grid_w = frames.shape[0] // tp, h // ps, w // ps
    if h % (ps * m) or w % (ps * m):
        sys.exit(f"vision_reference: a {h}x{w} image does not split into {ps * m}-pixel blocks")
    x = frames.reshape(grid_t, tp, c, grid_h // m, m, ps, grid_w // m, m, ps).transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return np.ascontiguousarray(x.reshape(grid_t * grid_h * grid_w, c * tp * ps * ps)), (grid_t, grid_h, grid_w)


def preprocess(image, pp):
    """Qwen2VLImageProcessor of one RGB PIL image: float32 (rows, patch_dim) and its grid_thw."""
    p = processor_config(pp)
    return patchify(resized_pixels(image, p), p)


# ----------------------------------------------------------------------------------------------
# the vision tower

def rms_norm(x, w, eps=RMS_EPS):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


class VisionTower:
    """Qwen2_5_VisionTransformerPretrainedModel with its merger."""

    def __init__(self, config, weights):
        self.c = c = dict(VISION_DEFAULTS, **config)
        self.w = {k[len("visual."):]: v for k, v in weights.items() if k.startswith("visual.")}
        self.heads, self.merge, self.patch = c["num_heads"], c["spatial_merge_size"], c["patch_size"]
        self.head_dim = c["hidden_size"] // self.heads
        self.act = vr.activation(c["hidden_act"])
        self.gelu = rf.act("gelu")
        rot = self.head_dim // 2  # Qwen2_5_VisionRotaryEmbedding(head_dim // 2)
        self.inv_freq = 1.0 / (10000.0 ** (np.arange(0, rot, 2, dtype=np.float64) / rot))

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def rot_pos_emb(self, t, h, w):
        """(t * h * w, head_dim / 2): [freqs of the patch's row, freqs of its column], rows in the
        patches' merge-block order."""
        m = self.merge
        hpos = np.broadcast_to(np.arange(h)[:, None], (h, w)).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3)
        wpos = np.broadcast_to(np.arange(w)[None, :], (h, w)).reshape(h // m, m, w // m, m).transpose(0, 2, 1, 3)
        pos = np.tile(np.stack([hpos.reshape(-1), wpos.reshape(-1)], axis=-1), (t, 1))
        table = np.arange(max(h, w), dtype=np.float64)[:, None] * self.inv_freq[None, :]
        return table[pos].reshape(pos.shape[0], -1)

    def window_index(self, t, h, w):
        """get_window_index of one image: (merge-block order, cu_window_seqlens without repeats)."""
        m, size = self.merge, self.c["window_size"] // self.merge // self.patch
        lh, lw = h // m, w // m
        pad_h, pad_w = size - lh % size, size - lw % size
        nh, nw = (lh + pad_h) // size, (lw + pad_w) // size
        padded = np.full((t, lh + pad_h, lw + pad_w), -100, dtype=np.int64)
        padded[:, :lh, :lw] = np.arange(t * lh * lw).reshape(t, lh, lw)
        padded = padded.reshape(t, nh, size, nw, size).transpose(0, 1, 3, 2, 4).reshape(t, nh * nw, size, size)
        seqlens = (padded != -100).sum(axis=(2, 3)).reshape(-1)
        flat = padded.reshape(-1)
        cu = [0] + [int(v) for v in np.cumsum(seqlens) * m * m]
        return flat[flat != -100], [v for i, v in enumerate(cu) if i == 0 or v != cu[i - 1]]

    def attention(self, x, p, cu_seqlens, cos, sin):
        n, hidden = x.shape
        qkv = self.linear(x, p + "qkv").reshape(n, 3, self.heads, self.head_dim)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        out = np.empty_like(q)
        for a, b in zip(cu_seqlens[:-1], cu_seqlens[1:]):
            scores = np.einsum("qhd,khd->hqk", q[a:b], k[a:b]) * self.head_dim ** -0.5
            out[a:b] = np.einsum("hqk,khd->qhd", rf.softmax(scores), v[a:b])
        return self.linear(out.reshape(n, hidden), p + "proj")

    def mlp(self, x, p):
        return self.linear(self.act(self.linear(x, p + "gate_proj")) * self.linear(x, p + "up_proj"), p + "down_proj")

    def __call__(self, patches, grid_thw):
        """One image's patches (rows, patch_dim) -> its features (rows / merge^2, out_hidden_size)."""
        t, h, w = grid_thw
        conv = self.w["patch_embed.proj.weight"]  # (hidden, C, tp, p, p), no bias
        x = patches.astype(np.float64) @ conv.reshape(conv.shape[0], -1).T
        n, unit = x.shape[0], self.merge ** 2
        order, cu_window = self.window_index(t, h, w)
        x = x.reshape(n // unit, unit, -1)[order].reshape(n, -1)
        rotary = self.rot_pos_emb(t, h, w).reshape(n // unit, unit, -1)[order].reshape(n, -1)
        emb = np.concatenate([rotary, rotary], axis=-1)
        cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]
        cu_full = [i * h * w for i in range(t + 1)]
        for i in range(self.c["depth"]):
            p = f"blocks.{i}."
            cu = cu_full if i in self.c["fullatt_block_indexes"] else cu_window
            x = x + self.attention(rms_norm(x, self.w[p + "norm1.weight"]), p + "attn.", cu, cos, sin)
            x = x + self.mlp(rms_norm(x, self.w[p + "norm2.weight"]), p + "mlp.")
        x = rms_norm(x, self.w["merger.ln_q.weight"]).reshape(n // unit, -1)
        x = self.linear(self.gelu(self.linear(x, "merger.mlp.0")), "merger.mlp.2")
        return x[np.argsort(order)]


# ----------------------------------------------------------------------------------------------
# positions and the model

def get_rope_index(ids, grids, merge, image_token, video_token, vision_start):
    """Qwen2_5_VLModel.get_rope_index for one unpadded sequence of images (no videos):
    (positions (3, len(ids)), rope_delta)."""
    starts = [i for i, t in enumerate(ids) if t == vision_start and i + 1 < len(ids)]
    if any(ids[i + 1] == video_token for i in starts):
        sys.exit("vision_reference: videos are not supported")
    num_images = sum(1 for i in starts if ids[i + 1] == image_token)
    parts, st = [], 0
    for index in range(num_images):
        ed = ids.index(image_token, st)
        grid_t, grid_h, grid_w = grids[index][0], grids[index][1] // merge, grids[index][2] // merge
        text_len = ed - st
        st_idx = parts[-1].max() + 1 if parts else 0
        parts.append(np.broadcast_to(np.arange(text_len), (3, text_len)) + st_idx)
        t_index = np.zeros(grid_t * grid_h * grid_w, dtype=np.int64)  # second_per_grid_t is 0 for images
        h_index = np.tile(np.repeat(np.arange(grid_h), grid_w), grid_t)
        w_index = np.tile(np.arange(grid_w), grid_t * grid_h)
        parts.append(np.stack([t_index, h_index, w_index]) + text_len + st_idx)
        st = ed + grid_t * grid_h * grid_w
    if st < len(ids):
        st_idx = parts[-1].max() + 1 if parts else 0
        parts.append(np.broadcast_to(np.arange(len(ids) - st), (3, len(ids) - st)) + st_idx)
    positions = np.concatenate(parts, axis=1).astype(np.int64)
    return positions, int(positions.max()) + 1 - len(ids)


def mrope_rotary(positions, section):
    """apply_multimodal_rotary_pos_emb as a reference_forward rotary hook: positions (3, T)."""
    def rotary(x, inv_freq, attention_scaling):
        dim = x.shape[-1]
        if 2 * inv_freq.size != dim or 2 * sum(section) != dim:
            sys.exit(f"vision_reference: mrope_section {section} does not cover head_dim {dim}")
        freqs = positions[:, : x.shape[0], None].astype(np.float64) * inv_freq[None, None, :]
        emb = np.concatenate([freqs, freqs], axis=-1)  # (3, T, head_dim)
        axis = np.concatenate([np.full(n, i % 3) for i, n in enumerate(list(section) * 2)])
        cos = np.cos(emb)[axis, :, np.arange(dim)].T * attention_scaling  # (T, head_dim)
        sin = np.sin(emb)[axis, :, np.arange(dim)].T * attention_scaling
        return x * cos[:, None, :] + rotate_half(x) * sin[:, None, :]
    return rotary


def canonical_names(weights):
    """Published names (model.*, visual.*, lm_head) also for transformers >= 4.52 saves
    (model.language_model.*, model.visual.*)."""
    out = {}
    for name, value in weights.items():
        if name.startswith("model.language_model."):
            name = "model." + name[len("model.language_model."):]
        elif name.startswith("model.visual."):
            name = name[len("model."):]
        out[name] = value
    return out


def text_config(config):
    text = dict(TEXT_DEFAULTS)
    text.update(config.get("text_config") or {k: v for k, v in config.items() if k != "vision_config"})
    if "tie_word_embeddings" in config:
        text["tie_word_embeddings"] = config["tie_word_embeddings"]
    text["model_type"] = "qwen2"
    key = "rope_scaling" if text.get("rope_scaling") else "rope_parameters"
    rope = dict(text.get(key) or {})
    section = rope.get("mrope_section")
    if not section:
        sys.exit("vision_reference: the text config has no rope_scaling.mrope_section")
    if rope.get("rope_type", rope.get("type", "default")) in ("mrope", "default"):
        rope.update(type="default", rope_type="default")
    text[key] = rope
    return text, list(section)


class Qwen2_5_VL:
    def __init__(self, config, weights):
        c = dict(TOKEN_DEFAULTS, **config)
        w = canonical_names(weights)
        text, self.section = text_config(c)
        self.text = rf.Model(text, {k: v for k, v in w.items() if k.startswith(("model.", "lm_head."))})
        self.tower = VisionTower(c.get("vision_config") or {}, w)
        self.image_token, self.video_token = c["image_token_id"], c["video_token_id"]
        self.vision_start = c["vision_start_token_id"]

    def num_image_tokens(self, grid_thw):
        return int(np.prod(grid_thw)) // self.tower.merge ** 2

    def expand(self, prompt, counts):
        """Qwen2_5_VLProcessor: image token i becomes counts[i] copies: (ids, [[start, length], ...])."""
        ids, ranges = [], []
        for token in prompt:
            if token == self.image_token:
                ranges.append([len(ids), counts[len(ranges)]])
                ids += [token] * ranges[-1][1]
            else:
                ids.append(token)
        return ids, ranges

    def positions(self, prompt, grids):
        return get_rope_index(list(prompt), grids, self.tower.merge, self.image_token, self.video_token,
                              self.vision_start)

    def logits(self, ids, features, ranges, positions):
        x = self.text.w["model.embed_tokens.weight"][np.asarray(ids)].copy()
        for (start, length), f in zip(ranges, features):
            x[start:start + length] = f
        return self.text.logits(ids, x, mrope_rotary(positions, self.section))


def greedy(model, prompt, features, ranges, positions, delta, steps):
    ids, tokens, all_logits, margins = list(prompt), [], [], []
    for _ in range(steps):
        generated = np.arange(len(prompt), len(ids)) + delta
        full = np.concatenate([positions, np.broadcast_to(generated, (3, generated.size))], axis=1)
        logits = model.logits(ids, features, ranges, full)[-1]
        token = int(np.argmax(logits))
        top2 = np.partition(logits, -2)[-2:]
        tokens.append(token)
        all_logits.append(logits)
        margins.append(float(top2[1] - top2[0]))
        ids.append(token)
    return tokens, all_logits, margins


def run(model_dir, config, weights, prompt, image_paths, steps, pixels_out=None):
    model = Qwen2_5_VL(config, weights)
    num_images = sum(1 for t in prompt if t == model.image_token)
    if num_images != len(image_paths):
        sys.exit(f"vision_reference: the prompt has {num_images} image tokens ({model.image_token}) "
                 f"but {len(image_paths)} images were given")
    pp = vr.load_preprocessor(model_dir)
    inputs = [preprocess(vr.load_rgb(p), pp) for p in image_paths]
    if pixels_out:
        for i, (patches, _) in enumerate(inputs):
            with open(f"{pixels_out}{i}.f32", "wb") as f:
                f.write(patches.astype("<f4").tobytes())
    grids = [list(grid) for _, grid in inputs]
    features = [model.tower(patches, grid) for patches, grid in inputs]
    expanded, ranges = model.expand(prompt, [model.num_image_tokens(g) for g in grids])
    positions, delta = model.positions(expanded, grids)
    tokens, logits, margins = greedy(model, expanded, features, ranges, positions, delta, steps)
    return {"architecture": (config.get("architectures") or ["Qwen2_5_VLForConditionalGeneration"])[0],
            "prompt": expanded, "image_token_ranges": ranges, "image_grid_thw": grids,
            "mrope_positions": positions.tolist(), "mrope_position_delta": delta, "tokens": tokens,
            "logits": [[float(v) for v in row] for row in logits], "margins": margins,
            "image_features": [[[float(v) for v in row] for row in f] for f in features]}

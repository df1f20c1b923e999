"""The qwen2_5_vl part of check_vision_reference.py: makes the tiny random Qwen2.5-VL with
make_random_vlm.py --arch qwen2_5_vl and checks the published layout (tensor names, config,
tokenizer, chat template), the patches against a per-patch loop over PIL's resize, the window
index and the vision rotary by hand, the tower without blocks against a per-block merger, that
window attention confines the windowed layers (and matters), M-RoPE positions and rotation by
hand, the CLI on two images of different grids, and each input's effect on the logits.
"""
import json
import os
import subprocess

import numpy as np
from PIL import Image

import check_vision_reference as cv
import qwen2_5_vl_reference as qv
import reference_forward as rf
import vision_reference as vr

IM_START, IM_END, VISION_START, VISION_END, IMAGE = 513, 514, 515, 516, 517
# <|im_start|> 20 <img a> 5 9 <img b> 12 <|im_end|>, the images wrapped as the chat template does.
PROMPT = [IM_START, 20, VISION_START, IMAGE, VISION_END, 5, 9, VISION_START, IMAGE, VISION_END, 12, IM_END]


def make(out, *flags):
    subprocess.run([cv.PY, cv.MAKE, "--arch", "qwen2_5_vl", "--out", out, *flags], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def expected_names(depth, layers, tied=False):
    names = {"visual.patch_embed.proj.weight", "visual.merger.ln_q.weight", "model.embed_tokens.weight",
             "model.norm.weight"} | {f"visual.merger.mlp.{i}.{k}" for i in (0, 2) for k in ("weight", "bias")}
    for i in range(depth):
        b = f"visual.blocks.{i}."
        names |= {b + "norm1.weight", b + "norm2.weight"}
        names |= {f"{b}{m}.{k}" for m in ("attn.qkv", "attn.proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")
                  for k in ("weight", "bias")}
    for i in range(layers):
        p = f"model.layers.{i}."
        names |= {p + m + ".weight" for m in ("input_layernorm", "post_attention_layernorm", "self_attn.o_proj",
                                               "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")}
        names |= {f"{p}self_attn.{m}.{k}" for m in ("q_proj", "k_proj", "v_proj") for k in ("weight", "bias")}
    return names if tied else names | {"lm_head.weight"}


def check_layout(check, d):
    print("qwen2_5_vl layout:")
    config, weights = rf.load_model_dir(d)
    check(set(weights) == expected_names(4, 2), "published tensor names (visual.*, model.*, lm_head), nothing else")
    shapes = {"visual.patch_embed.proj.weight": (64, 3, 2, 14, 14), "visual.blocks.0.attn.qkv.weight": (192, 64),
              "visual.blocks.0.mlp.gate_proj.weight": (128, 64), "visual.merger.mlp.0.weight": (256, 256),
              "visual.merger.mlp.2.weight": (64, 256), "model.layers.0.self_attn.k_proj.bias": (32,),
              "model.embed_tokens.weight": (520, 64), "lm_head.weight": (520, 64)}
    check(all(weights[n].shape == s for n, s in shapes.items()), "tensor shapes")
    v = config["vision_config"]
    check(config["architectures"] == ["Qwen2_5_VLForConditionalGeneration"] and config["model_type"] == "qwen2_5_vl"
          and "text_config" not in config and config["hidden_size"] == 64 and config["num_key_value_heads"] == 2
          and config["rope_scaling"] == {"type": "mrope", "mrope_section": [2, 3, 3]}
          and (config["image_token_id"], config["video_token_id"], config["vision_start_token_id"],
               config["vision_end_token_id"]) == (IMAGE, 518, VISION_START, VISION_END)
          and v["depth"] == 4 and v["window_size"] == 56 and v["fullatt_block_indexes"] == [1, 3]
          and v["out_hidden_size"] == 64 and v["hidden_act"] == "silu" and v["in_chans"] == 3,
          "config: text keys at the top level, mrope, vision_config, token ids")
    with open(os.path.join(d, "tokenizer.json")) as f:
        tok = json.load(f)
    added = {a["content"]: a["id"] for a in tok["added_tokens"]}
    with open(os.path.join(d, "tokenizer_config.json")) as f:
        tokenizer_config = json.load(f)
    pp = vr.load_preprocessor(d)
    check(added.get("<|image_pad|>") == IMAGE and added.get("<|vision_start|>") == VISION_START
          and added.get("<|im_end|>") == IM_END and tok["post_processor"] is None
          and tokenizer_config["eos_token"] == "<|im_end|>", "tokenizer: Qwen's special tokens, no BOS")
    check(pp["image_processor_type"] == "Qwen2VLImageProcessor" and pp["min_pixels"] == 3136
          and pp["max_pixels"] == 50176 and pp["merge_size"] == 2, "preprocessor_config.json")
    try:
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        print("  chat template: no jinja2, skipped")
        return
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"}]},
                {"role": "assistant", "content": "A cat."}]
    text = env.from_string(tokenizer_config["chat_template"]).render(messages=messages, add_generation_prompt=True)
    check(text == "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|>"
                  "<|image_pad|><|vision_end|>What is this?<|im_end|>\n<|im_start|>assistant\nA cat.<|im_end|>\n"
                  "<|im_start|>assistant\n", "chat template: default system turn, vision_start/pad/end in place")


def patches_by_loop(image, height, width):
    """The patches of a resized image, one row per patch in merge-block order, as a loop."""
    rgb = np.array(image.resize((width, height), Image.BICUBIC, reducing_gap=None))
    x = cv.normalised(rgb)  # (3, H, W) float32
    rows = []
    for bh in range(height // 28):
        for bw in range(width // 28):
            for mh in range(2):
                for mw in range(2):
                    y0, x0 = (bh * 2 + mh) * 14, (bw * 2 + mw) * 14
                    block = x[:, y0:y0 + 14, x0:x0 + 14]
                    rows.append(np.stack([block, block], axis=1).reshape(-1))  # (channel, frame, y, x)
    return np.array(rows)


def check_pixels(check, tmp, d):
    print("qwen2_5_vl pixels:")
    pp = vr.load_preprocessor(d)
    check([qv.smart_resize(h, w, 28, 3136, 50176) for h, w in ((60, 80), (90, 50), (30, 20), (1000, 300), (42, 70))]
          == [(56, 84), (84, 56), (84, 56), (392, 112), (56, 56)],
          "smart_resize: sides to 28s (half to even: 42 and 70 both to 56), min_pixels up, max_pixels down")
    rng = np.random.default_rng(11)
    for h, w, grid in ((60, 80, (1, 4, 6)), (90, 50, (1, 6, 4))):
        image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        patches, got = qv.preprocess(image, pp)
        size = (grid[1] * 14, grid[2] * 14)
        check(got == grid and patches.dtype == np.float32 and patches.shape == (24, 1176)
              and np.array_equal(patches, patches_by_loop(image, *size)),
              f"{w}x{h}: {size[1]}x{size[0]}, grid {grid}, patches bit for bit a per-patch loop")
    rgba = np.zeros((60, 80, 4), np.uint8)
    path = cv.write_image(os.path.join(tmp, "qclear.png"), rgba, "RGBA")
    check(np.array_equal(qv.preprocess(vr.load_rgb(path), pp)[0],
                         patches_by_loop(Image.new("RGB", (80, 60), (255, 255, 255)), 56, 84)),
          "RGBA: transparent on white")


def check_tower(check, d, a_path):
    print("qwen2_5_vl tower:")
    config, weights = rf.load_model_dir(d)
    tower = qv.Qwen2_5_VL(config, weights).tower
    order, cu = tower.window_index(1, 4, 6)
    check(order.tolist() == [0, 1, 3, 4, 2, 5] and cu == [0, 16, 24],
          "window index of a 4x6 grid: 2x3 merged, windows {0,1,3,4} and {2,5} (an empty one dropped)")
    order, cu = tower.window_index(1, 6, 4)
    check(order.tolist() == list(range(6)) and cu == [0, 16, 24], "6x4: windows {0..3} and {4,5}")
    rotary = tower.rot_pos_emb(1, 4, 6)  # row 7: block (0, 1), in-block (1, 1), so patch (1, 3)
    check(np.allclose(rotary[7], np.concatenate([1 * tower.inv_freq, 3 * tower.inv_freq]), rtol=0, atol=1e-15),
          "vision rotary: merge-block row 7 is patch (1, 3): [freqs(1), freqs(3)]")

    patches, grid = qv.preprocess(vr.load_rgb(a_path), vr.load_preprocessor(d))
    bare = qv.VisionTower(dict(config["vision_config"], depth=0), weights)
    conv = weights["visual.patch_embed.proj.weight"].reshape(64, -1)
    by_block = []
    for i in range(6):  # merged tokens row-major over the 2x3 grid; block i holds patch rows 4i..4i+3
        rows = qv.rms_norm(patches[4 * i:4 * i + 4].astype(np.float64) @ conv.T, weights["visual.merger.ln_q.weight"])
        hidden = rf.act("gelu")(rows.reshape(-1) @ weights["visual.merger.mlp.0.weight"].T
                                + weights["visual.merger.mlp.0.bias"])
        by_block.append(hidden @ weights["visual.merger.mlp.2.weight"].T + weights["visual.merger.mlp.2.bias"])
    check(np.allclose(bare(patches, grid), np.array(by_block), rtol=0, atol=1e-12),
          "no blocks: each merged token is its 2x2 block's conv, ln_q, mlp; the window order undone")

    def features(vision_config, px=patches):
        return qv.VisionTower(dict(config["vision_config"], **vision_config), weights)(px, grid)

    plain, full = features({}), features(dict(fullatt_block_indexes=[0, 1, 2, 3]))
    check(np.abs(plain - full).max() > 1e-3, "window attention matters: every layer full differs")
    check(np.allclose(full, features(dict(fullatt_block_indexes=[0, 1, 2, 3], window_size=1120)), rtol=0, atol=1e-12),
          "every layer full: the window order does not change the features")
    moved = patches.copy()
    moved[8:12] += 1.0  # merge block 2 (row 0, column 2), in window {2, 5}
    windowed = dict(fullatt_block_indexes=[])
    base, changed = features(windowed), features(windowed, moved)
    check(np.array_equal(base[[0, 1, 3, 4]], changed[[0, 1, 3, 4]]) and np.abs(base[[2, 5]] - changed[[2, 5]]).max()
          > 1e-3, "every layer windowed: a change in window {2, 5} leaves window {0, 1, 3, 4} alone")
    check(np.abs(plain[[0, 1, 3, 4]] - features({}, moved)[[0, 1, 3, 4]]).max() > 1e-3,
          "with full-attention layers 1 and 3 it reaches the other window")


def check_positions(check, d):
    print("qwen2_5_vl M-RoPE:")
    config, weights = rf.load_model_dir(d)
    model = qv.Qwen2_5_VL(config, weights)
    ids, ranges = model.expand(PROMPT, [6, 6])
    positions, delta = model.positions(ids, [[1, 4, 6], [1, 6, 4]])
    # text 0..2; image a (2x3 merged) at 3 + (0, row, col); 6 onwards text; image b (3x2) at 9 + ...
    want = [[0, 1, 2] + [3] * 6 + [6, 7, 8, 9] + [10] * 6 + [13, 14, 15],
            [0, 1, 2, 3, 3, 3, 4, 4, 4, 6, 7, 8, 9, 10, 10, 11, 11, 12, 12, 13, 14, 15],
            [0, 1, 2, 3, 4, 5, 3, 4, 5, 6, 7, 8, 9, 10, 11, 10, 11, 10, 11, 13, 14, 15]]
    check(ranges == [[3, 6], [13, 6]] and positions.tolist() == want and delta == 16 - 22,
          "get_rope_index: the text after an image starts at max + 1, rope_delta 16 - 22")
    bare, _ = model.positions([IM_START, 20, IMAGE, IMAGE, 5], [[1, 2, 2]])
    check(bare.tolist() == [list(range(5))] * 3, "an image token without vision_start before it counts as text")
    rng = np.random.default_rng(3)
    x, inv_freq = rng.standard_normal((5, 4, 16)), rf.default_inv_freq(10000.0, 16)
    same = np.broadcast_to(np.arange(5), (3, 5))
    check(np.allclose(qv.mrope_rotary(same, [2, 3, 3])(x, inv_freq, 1.0), rf.rotate(x, inv_freq, 1.0), rtol=0,
                      atol=1e-12), "M-RoPE with equal axes is the plain rotary")
    pos = np.array([[7], [2], [5]])
    got = qv.mrope_rotary(pos, [2, 3, 3])(x[:1], inv_freq, 1.0)
    angle = np.array([7, 7, 2, 2, 2, 5, 5, 5]) * inv_freq
    cos, sin = np.cos(np.concatenate([angle, angle])), np.sin(np.concatenate([angle, angle]))
    check(np.allclose(got, x[:1] * cos + qv.rotate_half(x[:1]) * sin, rtol=0, atol=1e-12),
          "M-RoPE: frequency pairs 0-1 rotate by t, 2-4 by h, 5-7 by w")
    text = [IM_START, 20, 5, 9, 12]
    check(np.allclose(model.logits(text, [], [], same), model.text.logits(text), rtol=0, atol=1e-12),
          "a prompt without images: the Qwen2 decoder's logits")


def check_run(check, tmp, d, a, b, other):
    print("qwen2_5_vl generation:")
    r = cv.reference(d, [a, b], os.path.join(tmp, "q.json"), prompt=PROMPT, pixels=os.path.join(tmp, "qpx"))
    check(r["prompt"][:3] == [IM_START, 20, VISION_START] and r["image_token_ranges"] == [[3, 6], [13, 6]]
          and r["image_grid_thw"] == [[1, 4, 6], [1, 6, 4]] and len(r["prompt"]) == 22
          and r["prompt"].count(IMAGE) == 12, "80x60 and 50x90: grids (1, 4, 6) and (1, 6, 4), 6 tokens each")
    features, logits, margins = np.array(r["image_features"]), np.array(r["logits"]), np.array(r["margins"])
    positions = np.array(r["mrope_positions"])
    check(features.shape == (2, 6, 64) and np.isfinite(features).all() and positions.shape == (3, 22)
          and r["mrope_position_delta"] == -6, "image features (2, 6, 64), mrope_positions (3, 22)")
    check(logits.shape == (cv.STEPS, 520) and np.isfinite(logits).all(), "finite logits")
    check(r["tokens"] == [int(np.argmax(row)) for row in logits], "tokens are the argmax")
    check(np.median(margins) > 0.2 and (margins < 1e-3).sum() <= 1 and logits.std(axis=1).mean() > 1.0,
          f"clear margins (median {np.median(margins):.3f}, min {margins.min():.2g})")
    pixels = np.fromfile(os.path.join(tmp, "qpx1.f32"), dtype="<f4")
    check(pixels.size == 24 * 1176 and np.array_equal(pixels.reshape(24, 1176),
                                                       qv.preprocess(vr.load_rgb(b), vr.load_preprocessor(d))[0]),
          "--pixels-out: float32 (rows, patch_dim) per image")

    config, weights = rf.load_model_dir(d)
    model = qv.Qwen2_5_VL(config, weights)
    ids = r["prompt"] + r["tokens"][:2]
    after = np.concatenate([positions, np.broadcast_to([16, 17], (3, 2))], axis=1)
    check(np.allclose(model.logits(ids, features, r["image_token_ranges"], after)[-1], logits[2], rtol=0, atol=1e-9),
          "generated tokens at index + rope_delta (16, 17, ...)")
    swapped = cv.reference(d, [other, b], os.path.join(tmp, "q-other.json"), prompt=PROMPT)
    f2 = np.array(swapped["image_features"])
    check(np.abs(np.array(swapped["logits"][0]) - logits[0]).max() > 1e-3
          and np.abs(f2[0] - features[0]).max() > 1e-3 and np.array_equal(f2[1], features[1]),
          "another first image changes the logits and its features only")
    reordered = cv.reference(d, [b, a], os.path.join(tmp, "q-reordered.json"), prompt=PROMPT)
    check(reordered["image_grid_thw"] == [[1, 6, 4], [1, 4, 6]]
          and np.abs(np.array(reordered["logits"][0]) - logits[0]).max() > 1e-3,
          "the images' order matters, grids follow the images")
    text = cv.reference(d, [a, b], os.path.join(tmp, "q-text.json"), prompt=[IM_START, 21] + PROMPT[2:])
    check(np.abs(np.array(text["logits"][0]) - logits[0]).max() > 1e-3, "the prompt's text changes the logits")
    tied = cv.reference(make(os.path.join(tmp, "qtied"), "--tie-word-embeddings"), [a, b],
                        os.path.join(tmp, "q-tied.json"), prompt=PROMPT)
    check("lm_head.weight" not in rf.load_model_dir(os.path.join(tmp, "qtied"))[1]
          and np.isfinite(tied["logits"]).all(), "--tie-word-embeddings: no lm_head.weight, the embeddings' logits")


def run_checks(check, tmp, a, b, other):
    d = make(os.path.join(tmp, "qwen2_5_vl"))
    check_layout(check, d)
    check_pixels(check, tmp, d)
    check_tower(check, d, a)
    check_positions(check, d)
    check_run(check, tmp, d, a, b, other)

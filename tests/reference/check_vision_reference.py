#!/usr/bin/env python3
"""Self-test of vision_reference.py and scripts/make_random_vlm.py (numpy, PIL; a few seconds).

  /usr/bin/python3 tests/reference/check_vision_reference.py [--keep DIR]

Makes the tiny random llava checkpoint and PNG images of several sizes and modes, runs the
reference CLI on a prompt with two image tokens and checks: the llava-hf tensor names and
config, the tokenizer's <image> token and the chat template (rendered with jinja2 as
apply_chat_template does, where jinja2 is installed); the expanded prompt and image ranges; the
pixels (exact normalisation, the resize and crop geometry, RGBA on white, zero padding); finite
logits with clear margins; that each image changes the logits and leaves the other image's
features alone; that "full" keeps the CLS row (one more token per image, the other rows equal);
that vision_feature_layer -2 ignores the tower's last layer and -1 does not; BF16 weights.
Then Qwen2.5-VL's checks (check_qwen2_5_vl_reference.py) and Gemma 3's (check_gemma3_reference.py);
--arch picks some.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import reference_forward as rf  # noqa: E402
import vision_reference as vr  # noqa: E402

PY = sys.executable
MAKE = os.path.join(ROOT, "scripts", "make_random_vlm.py")
IMAGE, STEPS = 512, 16
PROMPT = [1, IMAGE, 5, 9, IMAGE, 12]
MEAN = np.array(vr.CLIP_PROCESSOR_DEFAULTS["image_mean"], dtype=np.float32)[:, None, None]
STD = np.array(vr.CLIP_PROCESSOR_DEFAULTS["image_std"], dtype=np.float32)[:, None, None]

failures = []


def check(ok, what):
    print(("  ok   " if ok else "  FAIL ") + what)
    if not ok:
        failures.append(what)


def make(out, *flags):
    subprocess.run([PY, MAKE, "--arch", "llava", "--out", out, *flags], check=True, stdout=subprocess.DEVNULL)
    return out


def reference(model_dir, images, out, prompt=PROMPT, pixels=None):
    cmd = [PY, os.path.join(HERE, "vision_reference.py"), model_dir, "--prompt", ",".join(map(str, prompt)),
           "--steps", str(STEPS), "--out", out]
    for path in images:
        cmd += ["--image", path]
    if pixels:
        cmd += ["--pixels-out", pixels]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def write_image(path, array, mode=None):
    Image.fromarray(array, mode).save(path)
    return path


def read_pixels(path, size=56):
    return np.fromfile(path, dtype="<f4").reshape(3, size, size)


def normalised(rgb_hwc):
    """The expected pixels of a uint8 (H, W, 3) image already at the crop size."""
    x = (rgb_hwc.transpose(2, 0, 1).astype(np.float64) * (1 / 255)).astype(np.float32)
    return (x - MEAN) / STD


def expected_names(vision_layers, text_layers):
    v = "vision_tower.vision_model."
    names = {v + "embeddings.class_embedding", v + "embeddings.patch_embedding.weight",
             v + "embeddings.position_embedding.weight", "language_model.model.embed_tokens.weight",
             "language_model.model.norm.weight", "language_model.lm_head.weight"}
    for part in ("pre_layrnorm", "post_layernorm", "multi_modal_projector.linear_1", "multi_modal_projector.linear_2"):
        prefix = "" if part.startswith("multi") else v
        names |= {f"{prefix}{part}.weight", f"{prefix}{part}.bias"}
    for i in range(vision_layers):
        for m in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj", "layer_norm1",
                  "mlp.fc1", "mlp.fc2", "layer_norm2"):
            names |= {f"{v}encoder.layers.{i}.{m}.weight", f"{v}encoder.layers.{i}.{m}.bias"}
    for i in range(text_layers):
        for m in ("input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                  "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):
            names.add(f"language_model.model.layers.{i}.{m}.weight")
    return names


def check_layout(d):
    print("layout:")
    config, weights = rf.load_model_dir(d)
    check(set(weights) == expected_names(3, 2), "llava-hf tensor names, nothing else")
    shapes = {"vision_tower.vision_model.embeddings.patch_embedding.weight": (64, 3, 14, 14),
              "vision_tower.vision_model.embeddings.position_embedding.weight": (17, 64),
              "multi_modal_projector.linear_1.weight": (64, 64), "multi_modal_projector.linear_2.weight": (64, 64),
              "language_model.model.embed_tokens.weight": (520, 64), "language_model.lm_head.weight": (520, 64),
              "language_model.model.layers.0.self_attn.k_proj.weight": (32, 64)}
    check(all(weights[n].shape == s for n, s in shapes.items()), "tensor shapes")
    v, t = config["vision_config"], config["text_config"]
    check(config["architectures"] == ["LlavaForConditionalGeneration"] and config["model_type"] == "llava"
          and config["image_token_index"] == IMAGE and config["vision_feature_layer"] == -2
          and config["vision_feature_select_strategy"] == "default" and config["projector_hidden_act"] == "gelu"
          and config["tie_word_embeddings"] is False and t["model_type"] == "llama"
          and v["model_type"] == "clip_vision_model" and v["hidden_act"] == "quick_gelu"
          and v["layer_norm_eps"] == 1e-5, "config keys")
    with open(os.path.join(d, "tokenizer.json")) as f:
        added = {a["content"]: a["id"] for a in json.load(f)["added_tokens"]}
    with open(os.path.join(d, "tokenizer_config.json")) as f:
        tokenizer_config = json.load(f)
    with open(os.path.join(d, "preprocessor_config.json")) as f:
        pp = json.load(f)
    with open(os.path.join(d, "processor_config.json")) as f:
        processor = json.load(f)
    check(added.get("<image>") == IMAGE and added.get("<pad>") == config["pad_token_id"]
          and tokenizer_config["bos_token"] == "<s>", "tokenizer: <image> and <pad> added special tokens")
    check(pp["size"] == {"shortest_edge": 56} and pp["crop_size"] == {"height": 56, "width": 56}
          and pp["image_processor_type"] == "CLIPImageProcessor" and processor["patch_size"] == 14,
          "preprocessor_config.json and processor_config.json")
    try:
        import jinja2
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        print("  chat template: no jinja2, skipped")
        return

    class Generation(jinja2.ext.Extension):
        """transformers' {% generation %} block: renders its body."""
        tags = {"generation"}

        def parse(self, parser):
            next(parser.stream)
            return parser.parse_statements(("name:endgeneration",), drop_needle=True)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is this?"},
                                             {"type": "image"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Two cats."}]},
                {"role": "user", "content": [{"type": "text", "text": "And now?"}]}]
    text = env.from_string(tokenizer_config["chat_template"]).render(messages=messages, add_generation_prompt=True)
    check(text == "USER: <image>\n<image>\nWhat is this? ASSISTANT: Two cats. USER: And now? ASSISTANT:",
          "chat template: images first, then the text, USER: / ASSISTANT:")


def check_pixels(tmp, d):
    print("pixels:")
    rng = np.random.default_rng(7)
    pp = vr.load_preprocessor(d)
    exact = rng.integers(0, 256, (56, 56, 3), dtype=np.uint8)
    px = vr.preprocess(vr.load_rgb(write_image(os.path.join(tmp, "exact.png"), exact)), pp)
    check(px.dtype == np.float32 and np.array_equal(px, normalised(exact)),
          "an image at the crop size: float32 (x / 255 - mean) / std, bit for bit")
    wide = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)  # 80 x 60 -> 74 x 56, crop from x = 9
    want = np.array(Image.fromarray(wide).resize((74, 56), Image.BICUBIC, reducing_gap=None))[:, 9:65]
    check(np.array_equal(vr.preprocess(Image.fromarray(wide), pp), normalised(want)),
          "80x60: shortest edge to 56 (long edge int(74.67) = 74), bicubic, centre crop")
    tall = rng.integers(0, 256, (90, 50, 3), dtype=np.uint8)  # 50 x 90 -> 56 x 100, crop from y = 22
    want = np.array(Image.fromarray(tall).resize((56, 100), Image.BICUBIC, reducing_gap=None))[22:78]
    check(np.array_equal(vr.preprocess(Image.fromarray(tall), pp), normalised(want)),
          "50x90: long edge int(100.8) = 100, crop from row 22")
    rgba = np.concatenate([exact, np.zeros((56, 56, 1), np.uint8)], axis=2)
    clear = vr.load_rgb(write_image(os.path.join(tmp, "clear.png"), rgba, "RGBA"))
    rgba[..., 3] = 255
    opaque = vr.load_rgb(write_image(os.path.join(tmp, "opaque.png"), rgba, "RGBA"))
    check(np.all(np.array(clear) == 255) and np.array_equal(np.array(opaque), exact),
          "RGBA: transparent pixels white, opaque ones kept")
    grey = vr.load_rgb(write_image(os.path.join(tmp, "grey.png"), exact[..., 0], "L"))
    check(grey.mode == "RGB" and np.array_equal(np.array(grey), np.repeat(exact[..., :1], 3, axis=2)),
          "L: convert('RGB') repeats the grey level")
    padded = vr.center_crop(np.ones((3, 4, 6), np.float32), 6, 6)
    check(padded.shape == (3, 6, 6) and padded[:, 1:5].min() == 1 and padded[:, 0].max() == 0
          and padded[:, 5].max() == 0, "centre crop larger than the image: zero padding, top pad (6 - 4) // 2")


def check_run(tmp, d, a, b, other):
    print("generation:")
    r = reference(d, [a, b], os.path.join(tmp, "default.json"), pixels=os.path.join(tmp, "px"))
    prompt, ranges = r["prompt"], r["image_token_ranges"]
    check(ranges == [[1, 16], [19, 16]] and len(prompt) == len(PROMPT) - 2 + 32
          and [i for i, t in enumerate(prompt) if t == IMAGE] == list(range(1, 17)) + list(range(19, 35))
          and prompt[17:19] == [5, 9] and prompt[-1] == 12, "each <image> expanded to 16 tokens in place")
    features, logits, margins = np.array(r["image_features"]), np.array(r["logits"]), np.array(r["margins"])
    check(features.shape == (2, 16, 64) and np.isfinite(features).all(), "image features (2, 16, 64)")
    check(logits.shape == (STEPS, 520) and np.isfinite(logits).all(), "finite logits")
    check(r["tokens"] == [int(np.argmax(row)) for row in logits], "tokens are the argmax")
    top2 = np.sort(logits, axis=1)[:, -2:]
    check(np.allclose(margins, top2[:, 1] - top2[:, 0]), "margins are top1 - top2")
    check(np.median(margins) > 0.2 and (margins < 1e-3).sum() <= 1 and logits.std(axis=1).mean() > 1.0,
          f"clear margins (median {np.median(margins):.3f}, min {margins.min():.2g})")
    sizes = [os.path.getsize(os.path.join(tmp, f"px{i}.f32")) for i in range(2)]
    px0 = read_pixels(os.path.join(tmp, "px0.f32"))
    check(sizes == [3 * 56 * 56 * 4] * 2 and np.array_equal(px0, vr.preprocess(vr.load_rgb(a), vr.load_preprocessor(d))),
          "--pixels-out: float32 (3, 56, 56) per image")

    swapped = reference(d, [other, b], os.path.join(tmp, "other.json"))
    f2 = np.array(swapped["image_features"])
    check(np.abs(np.array(swapped["logits"][0]) - logits[0]).max() > 1e-3
          and np.abs(f2[0] - features[0]).max() > 1e-3 and np.array_equal(f2[1], features[1]),
          "another first image changes the logits and its features only")
    reordered = reference(d, [b, a], os.path.join(tmp, "reordered.json"))
    check(np.abs(np.array(reordered["logits"][0]) - logits[0]).max() > 1e-3
          and np.array_equal(np.array(reordered["image_features"])[::-1], features),
          "the images' order matters, features follow the images")
    text = reference(d, [a, b], os.path.join(tmp, "text.json"), prompt=[1, IMAGE, 6, 9, IMAGE, 12])
    check(np.abs(np.array(text["logits"][0]) - logits[0]).max() > 1e-3, "the prompt's text changes the logits")
    return r


def check_variants(tmp, base, a, b):
    print("variants:")
    full = reference(make(os.path.join(tmp, "full"), "--vision-feature-select-strategy", "full"), [a, b],
                     os.path.join(tmp, "full.json"))
    ff, bf = np.array(full["image_features"]), np.array(base["image_features"])
    check(full["image_token_ranges"] == [[1, 17], [20, 17]] and len(full["prompt"]) == len(base["prompt"]) + 2
          and ff.shape == (2, 17, 64) and np.abs(ff[:, 1:] - bf).max() < 1e-12,
          "full: 17 tokens per image, the CLS row first and the patch rows as with default")

    config, weights = rf.load_model_dir(os.path.join(tmp, "default"))
    pixels = vr.preprocess(vr.load_rgb(a), vr.load_preprocessor(os.path.join(tmp, "default")))
    plain = vr.Llava(config, weights).image_features(pixels)

    def perturbed(layer):
        w = dict(weights)
        name = f"vision_tower.vision_model.encoder.layers.{layer}.mlp.fc2.weight"
        w[name] = w[name] + 0.5
        return vr.Llava(config, w).image_features(pixels)

    tower = vr.Llava(config, weights).tower
    conv = weights["vision_tower.vision_model.embeddings.patch_embedding.weight"]
    patch = (conv * pixels[None, :, 14:28, 28:42]).sum(axis=(1, 2, 3))  # the conv at row 1, column 2
    position = weights["vision_tower.vision_model.embeddings.position_embedding.weight"]
    embeddings = tower.embeddings(pixels.astype(np.float64))
    check(np.allclose(embeddings[1 + 1 * 4 + 2], patch + position[7], rtol=0, atol=1e-12)
          and np.allclose(embeddings[0], weights["vision_tower.vision_model.embeddings.class_embedding"]
                          + position[0], rtol=0, atol=1e-12),
          "patch embedding: the conv of each patch, row-major after the class embedding")
    check(np.array_equal(perturbed(2), plain) and np.abs(perturbed(1) - plain).max() > 1e-3,
          "vision_feature_layer -2: the last layer unused, the one before it used")
    last = vr.Llava(dict(config, vision_feature_layer=-1), weights).image_features(pixels)
    check(np.abs(last - plain).max() > 1e-3, "vision_feature_layer -1: the last layer's output")
    gelu = reference(make(os.path.join(tmp, "gelu"), "--hidden-act", "gelu", "--vision-feature-layer", "-1"),
                     [a, b], os.path.join(tmp, "gelu.json"))
    check(np.abs(np.array(gelu["image_features"]) - bf).max() > 1e-3 and np.isfinite(gelu["logits"]).all(),
          "hidden_act gelu, vision_feature_layer -1: runs, different features")

    d = make(os.path.join(tmp, "bf16"), "--dtype", "bf16")
    low = reference(d, [a, b], os.path.join(tmp, "bf16.json"))
    config = json.load(open(os.path.join(d, "config.json")))
    check(config["torch_dtype"] == "bfloat16" and np.isfinite(low["logits"]).all()
          and np.abs(np.array(low["image_features"]) - bf).max() < 0.1, "bf16: decodes, features near f32's")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", help="write the models and outputs here instead of a temporary directory")
    ap.add_argument("--arch", choices=["llava", "qwen2_5_vl", "gemma3"], action="append",
                    help="check only these archs (repeat; default all)")
    args = ap.parse_args()
    archs = args.arch or ["llava", "qwen2_5_vl", "gemma3"]
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        rng = np.random.default_rng(0)
        a = write_image(os.path.join(tmp, "a.png"), rng.integers(0, 256, (60, 80, 3), dtype=np.uint8))
        b = write_image(os.path.join(tmp, "b.png"), rng.integers(0, 256, (90, 50, 3), dtype=np.uint8))
        other = write_image(os.path.join(tmp, "c.png"), rng.integers(0, 256, (60, 80, 3), dtype=np.uint8))
        if "llava" in archs:
            d = make(os.path.join(tmp, "default"))
            check_layout(d)
            check_pixels(tmp, d)
            base = check_run(tmp, d, a, b, other)
            check_variants(tmp, base, a, b)
        if "qwen2_5_vl" in archs:
            import check_qwen2_5_vl_reference
            check_qwen2_5_vl_reference.run_checks(check, tmp, a, b, other)
        if "gemma3" in archs:
            import check_gemma3_reference
            check_gemma3_reference.run_checks(check, tmp, a, b, other)
    print(f"check_vision_reference: {len(failures)} failure(s)" + "".join("\n  " + f for f in failures))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

"""The gemma3 part of check_vision_reference.py: makes the tiny random Gemma 3 with
make_random_vlm.py --arch gemma3 and checks the published layout (tensor names, config, tokenizer,
"\\n\\n" as [13, 13], chat template), the pixels (bilinear to the fixed size, mean and std 0.5), the
SigLIP embeddings and the projector's 2 x 2 pooling by hand, the CLI's expansion, logits and
margins, each input's effect on the logits, the bidirectional image blocks (a soft token sees the
later soft tokens of its own image, not those of a later image; a causal-only run differs; the
block overrides the sliding window), the unscaled image rows, an untied head and BF16 weights.
"""
import json
import os
import subprocess

import numpy as np
from PIL import Image

import check_vision_reference as cv
import gemma3_reference as gr
import reference_forward as rf
import vision_reference as vr

BOI, EOI, SOFT, START_TURN, END_TURN, PAD = 512, 513, 514, 515, 516, 517
NL = 13  # <0x0A>: "\n" has no token of its own in stories260K's vocabulary
PROMPT = [1, BOI, 5, 9, BOI, 12]
IMAGE = [NL, NL, BOI, SOFT, SOFT, SOFT, SOFT, EOI, NL, NL]  # each <start_of_image>, expanded


def make(out, *flags):
    subprocess.run([cv.PY, cv.MAKE, "--arch", "gemma3", "--out", out, *flags], check=True, stdout=subprocess.DEVNULL)
    return out


def expected_names(vision_layers, text_layers, untied=False):
    v = "vision_tower.vision_model."
    names = {v + "embeddings.patch_embedding.weight", v + "embeddings.patch_embedding.bias",
             v + "embeddings.position_embedding.weight", v + "post_layernorm.weight", v + "post_layernorm.bias",
             "multi_modal_projector.mm_input_projection_weight", "multi_modal_projector.mm_soft_emb_norm.weight",
             "language_model.model.embed_tokens.weight", "language_model.model.norm.weight"}
    for i in range(vision_layers):
        names |= {f"{v}encoder.layers.{i}.{m}.{k}" for k in ("weight", "bias")
                  for m in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.out_proj",
                            "layer_norm1", "layer_norm2", "mlp.fc1", "mlp.fc2")}
    for i in range(text_layers):
        names |= {f"language_model.model.layers.{i}.{m}.weight" for m in (
            "input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm",
            "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "self_attn.q_norm",
            "self_attn.k_norm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")}
    return names | {"language_model.lm_head.weight"} if untied else names


def render(template, messages, bos="<s>"):
    """apply_chat_template's jinja2 environment, or None without jinja2."""
    try:
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        return None

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, bos_token=bos, add_generation_prompt=True)


def check_layout(check, d):
    print("gemma3 layout:")
    config, weights = rf.load_model_dir(d)
    check(set(weights) == expected_names(3, 2), "published tensor names (vision_tower, projector, language_model), "
          "tied head, nothing else")
    v, m = "vision_tower.vision_model.", "language_model.model."
    shapes = {v + "embeddings.patch_embedding.weight": (64, 3, 14, 14), v + "embeddings.patch_embedding.bias": (64,),
              v + "embeddings.position_embedding.weight": (16, 64), v + "encoder.layers.0.mlp.fc1.weight": (128, 64),
              "multi_modal_projector.mm_input_projection_weight": (64, 64),
              "multi_modal_projector.mm_soft_emb_norm.weight": (64,), m + "embed_tokens.weight": (520, 64),
              m + "layers.0.self_attn.q_proj.weight": (64, 64), m + "layers.0.self_attn.k_proj.weight": (32, 64),
              m + "layers.0.self_attn.q_norm.weight": (16,), m + "layers.1.mlp.down_proj.weight": (64, 192)}
    check(all(weights[n].shape == s for n, s in shapes.items()), "tensor shapes")
    t, vc = config["text_config"], config["vision_config"]
    check(config["architectures"] == ["Gemma3ForConditionalGeneration"] and config["model_type"] == "gemma3"
          and (config["boi_token_index"], config["eoi_token_index"], config["image_token_index"]) == (BOI, EOI, SOFT)
          and config["mm_tokens_per_image"] == 4 and t["model_type"] == "gemma3_text"
          and t["layer_types"] == ["sliding_attention", "full_attention"] and t["sliding_window"] == 8
          and t["sliding_window_pattern"] == 2 and t["final_logit_softcapping"] is None
          and t["query_pre_attn_scalar"] == 24 and t["head_dim"] == 16
          and (t["rope_theta"], t["rope_local_base_freq"]) == (1000000.0, 10000.0)
          and t["rope_scaling"] == {"factor": 8.0, "rope_type": "linear"} and t["tie_word_embeddings"] is True
          and vc["model_type"] == "siglip_vision_model" and vc["hidden_act"] == "gelu_pytorch_tanh"
          and vc["layer_norm_eps"] == 1e-6 and vc["vision_use_head"] is False, "config keys")
    model = gr.Gemma3(config, weights)
    check([model.text.layer_types()[i] for i in range(2)] == ["sliding_attention", "full_attention"]
          and model.text.windows == [8, None] and [r["theta"] for r in model.text.ropes] == [10000.0, 1000000.0]
          and model.text.ropes[0]["scaling"] is None and model.text.ropes[1]["scaling"]["factor"] == 8.0,
          "text model: layer 0 sliding (window 8, local theta, no scaling), layer 1 full (global theta, linear 8)")

    with open(os.path.join(d, "tokenizer.json")) as f:
        tokenizer = json.load(f)
    added = {a["content"]: a["id"] for a in tokenizer["added_tokens"]}
    check([added.get(n) for n in ("<start_of_image>", "<end_of_image>", "<image_soft_token>", "<start_of_turn>",
                                   "<end_of_turn>", "<pad>")] == [BOI, EOI, SOFT, START_TURN, END_TURN, PAD],
          "tokenizer: Gemma 3's special tokens added at 512..517")
    check(gr.encode_plain(tokenizer, "\n\n") == [NL, NL] and "Prepend" not in json.dumps(tokenizer["normalizer"])
          and gr.merge_newlines([NL, NL, NL], tokenizer["model"]["vocab"]) == [NL, NL, NL],
          "tokenizer: Gemma's normalizer (no \"▁\" prepended); \"\\n\\n\" is [13, 13], no newline merges")
    files = {}
    for name in ("tokenizer_config.json", "chat_template.json", "preprocessor_config.json", "processor_config.json",
                 "generation_config.json"):
        with open(os.path.join(d, name)) as f:
            files[name] = json.load(f)
    pp = files["preprocessor_config.json"]
    check(pp["image_processor_type"] == "Gemma3ImageProcessor" and pp["size"] == {"height": 56, "width": 56}
          and pp["resample"] == 2 and pp["image_mean"] == [0.5] * 3 and pp["do_pan_and_scan"] is False
          and files["processor_config.json"]["image_seq_length"] == 4
          and files["generation_config.json"]["eos_token_id"] == [2, END_TURN],
          "preprocessor, processor and generation configs")
    template = files["tokenizer_config.json"]["chat_template"]
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " What is this? "}]},
                {"role": "assistant", "content": "A cat."},
                {"role": "user", "content": [{"type": "text", "text": "And this?"}, {"type": "image"}]}]
    text = render(template, messages)
    if text is None:
        print("  chat template: no jinja2, skipped")
        return
    check(template == files["chat_template.json"]["chat_template"]
          and text == "<s><start_of_turn>user\nBe brief.\n\n<start_of_image>What is this?<end_of_turn>\n"
                      "<start_of_turn>model\nA cat.<end_of_turn>\n<start_of_turn>user\nAnd this?<start_of_image>"
                      "<end_of_turn>\n<start_of_turn>model\n",
          "chat template: system folded into the first turn, model role, images in place, text trimmed")


def check_pixels(check, tmp, d):
    print("gemma3 pixels:")
    rng = np.random.default_rng(11)
    pp = vr.load_preprocessor(d)
    exact = rng.integers(0, 256, (56, 56, 3), dtype=np.uint8)
    px = gr.preprocess(vr.load_rgb(cv.write_image(os.path.join(tmp, "g-exact.png"), exact)), pp)
    want = (exact.transpose(2, 0, 1).astype(np.float64) * (1 / 255)).astype(np.float32)
    check(px.dtype == np.float32 and np.array_equal(px, (want - np.float32(0.5)) / np.float32(0.5)),
          "56x56: float32 (x / 255 - 0.5) / 0.5, bit for bit")
    wide = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    resized = np.array(Image.fromarray(wide).resize((56, 56), Image.BILINEAR, reducing_gap=None))
    want = (resized.transpose(2, 0, 1).astype(np.float64) * (1 / 255)).astype(np.float32)
    check(np.array_equal(gr.preprocess(Image.fromarray(wide), pp), (want - np.float32(0.5)) / np.float32(0.5)),
          "80x60: bilinear to 56x56, the aspect ratio not kept, no crop")


def check_tower(check, d, a_path):
    print("gemma3 tower and projector:")
    config, weights = rf.load_model_dir(d)
    model = gr.Gemma3(config, weights)
    pixels = gr.preprocess(vr.load_rgb(a_path), vr.load_preprocessor(d))
    v = "vision_tower.vision_model."
    conv, bias = weights[v + "embeddings.patch_embedding.weight"], weights[v + "embeddings.patch_embedding.bias"]
    position = weights[v + "embeddings.position_embedding.weight"]
    embeddings = model.tower.embeddings(pixels.astype(np.float64))
    patch = (conv * pixels[None, :, 14:28, 28:42]).sum(axis=(1, 2, 3)) + bias  # the conv at row 1, column 2
    check(embeddings.shape == (16, 64) and np.allclose(embeddings[1 * 4 + 2], patch + position[6], rtol=0, atol=1e-12),
          "SigLIP embeddings: the conv with bias of each patch, row-major, no class token")
    h = model.tower.last_hidden_state(pixels)
    grid = h.reshape(4, 4, 64)
    pooled = grid[0:2, 2:4].reshape(4, 64).mean(axis=0)  # output token 1: pooled row 0, column 1
    norm_w = weights["multi_modal_projector.mm_soft_emb_norm.weight"]
    normed = pooled / np.sqrt((pooled ** 2).mean() + 1e-6) * (1 + norm_w)
    features = model.image_features(pixels)
    check(features.shape == (4, 64)
          and np.allclose(features[1], normed @ weights["multi_modal_projector.mm_input_projection_weight"],
                          rtol=0, atol=1e-12), "projector: 2x2 average pool of the 4x4 grid, RMSNorm (1 + w), @ W")

    def perturbed(name):
        w = dict(weights)
        w[name] = w[name] * 1.5  # not + 0.5: a layer norm after it would remove a uniform shift
        return gr.Gemma3(config, w).image_features(pixels)

    check(np.abs(perturbed(v + "encoder.layers.2.mlp.fc2.weight") - features).max() > 1e-3
          and np.abs(perturbed(v + "post_layernorm.weight") - features).max() > 1e-3,
          "the last layer and post_layernorm are used")
    ids = [1, 5, 9, 12]
    embeds = model.text.w["model.embed_tokens.weight"][ids] * 8.0  # sqrt(64), exact in every dtype
    check(np.array_equal(model.text.hidden(ids), model.text.hidden(ids, embeds)),
          "gemma3_text: inputs_embeds are taken as they are (the embedding module scales the ids' rows)")


def check_run(check, tmp, d, a, b, other):
    print("gemma3 generation:")
    r = cv.reference(d, [a, b], os.path.join(tmp, "g.json"), prompt=PROMPT, pixels=os.path.join(tmp, "gpx"))
    check(r["prompt"] == [1] + IMAGE + [5, 9] + IMAGE + [12] and r["image_token_ranges"] == [[4, 4], [16, 4]],
          "each <start_of_image>: \\n\\n <start_of_image> 4 x <image_soft_token> <end_of_image> \\n\\n, in place")
    features, logits, margins = np.array(r["image_features"]), np.array(r["logits"]), np.array(r["margins"])
    check(features.shape == (2, 4, 64) and np.isfinite(features).all(), "image features (2, 4, 64)")
    check(logits.shape == (cv.STEPS, 520) and np.isfinite(logits).all(), "finite logits")
    check(r["tokens"] == [int(np.argmax(row)) for row in logits], "tokens are the argmax")
    check(np.median(margins) > 0.2 and (margins < 1e-3).sum() <= 1 and logits.std(axis=1).mean() > 1.0,
          f"clear margins (median {np.median(margins):.3f}, min {margins.min():.2g})")
    px = np.fromfile(os.path.join(tmp, "gpx1.f32"), dtype="<f4")
    check(px.size == 3 * 56 * 56 and np.array_equal(px.reshape(3, 56, 56),
                                                     gr.preprocess(vr.load_rgb(b), vr.load_preprocessor(d))),
          "--pixels-out: float32 (3, 56, 56) per image")
    swapped = cv.reference(d, [other, b], os.path.join(tmp, "g-other.json"), prompt=PROMPT)
    f2 = np.array(swapped["image_features"])
    check(np.abs(np.array(swapped["logits"][0]) - logits[0]).max() > 1e-3
          and np.abs(f2[0] - features[0]).max() > 1e-3 and np.array_equal(f2[1], features[1]),
          "another first image changes the logits and its features only")
    reordered = cv.reference(d, [b, a], os.path.join(tmp, "g-reordered.json"), prompt=PROMPT)
    check(np.abs(np.array(reordered["logits"][0]) - logits[0]).max() > 1e-3
          and np.array_equal(np.array(reordered["image_features"])[::-1], features),
          "the images' order matters, features follow the images")
    text = cv.reference(d, [a, b], os.path.join(tmp, "g-text.json"), prompt=[1, BOI, 6, 9, BOI, 12])
    check(np.abs(np.array(text["logits"][0]) - logits[0]).max() > 1e-3, "the prompt's text changes the logits")
    return r


def check_mask(check, tmp, d, a, r):
    print("gemma3 attention mask:")
    config, weights = rf.load_model_dir(d)
    model = gr.Gemma3(config, weights)
    ids, ranges = r["prompt"], r["image_token_ranges"]
    features = np.array(r["image_features"])
    (s0, _), (s1, _) = ranges
    base, causal = model.logits(ids, features, ranges), model.logits(ids, features, ranges, bidirectional=False)
    check(np.allclose(base[-1], r["logits"][0], rtol=0, atol=1e-9), "the API's last row is the CLI's first step")
    later = features.copy()
    later[0, 3] += 1.0  # image 0's last soft token
    moved = model.logits(ids, later, ranges)
    moved_causal = model.logits(ids, later, ranges, bidirectional=False)
    check(np.abs(moved[s0:s0 + 3] - base[s0:s0 + 3]).max(axis=1).min() > 1e-3
          and np.array_equal(moved[:s0], base[:s0]),
          "bidirectional: image 0's soft tokens 0..2 see its soft token 3 (the tokens before do not)")
    check(np.array_equal(moved_causal[:s0 + 3], causal[:s0 + 3]),
          "causal-only run: soft tokens 0..2 do not see soft token 3")
    check(np.abs(causal[-1] - base[-1]).max() > 1e-3 and np.abs(causal[s0] - base[s0]).max() > 1e-3,
          "a causal-only run differs (at the first soft token and the last position)")
    second = features.copy()
    second[1] += 1.0
    check(np.array_equal(model.logits(ids, second, ranges)[:s1], base[:s1]),
          "an image does not see a later image (nor does anything before it)")

    d16 = make(os.path.join(tmp, "gemma3-16"), "--mm-tokens-per-image", "16")
    long = gr.Gemma3(*rf.load_model_dir(d16), gr.load_tokenizer(d16))
    expanded, long_ranges = long.expand([1, BOI, 5, 9])
    t, (start, length) = len(expanded), long_ranges[0]
    groups = long.image_groups(t, long_ranges)
    sliding, full = long.text.attention_mask(0, t, groups), long.text.attention_mask(1, t, groups)
    end = start + length - 1
    check(length == 16 and sliding[start, end] and sliding[end, start] and full[start, end]
          and not sliding[t - 1, start] and full[t - 1, start] and not sliding[end, start - 1]
          and full[end, start - 1] and not sliding[start - 1, end] and not full[start - 1, end],
          "16 tokens per image, window 8: the image block holds across the window on the sliding layer; "
          "text after it, and the image's view of text, stay windowed and causal")
    pixels = gr.preprocess(vr.load_rgb(a), vr.load_preprocessor(d16))
    f16 = long.image_features(pixels)
    check(f16.shape == (16, 64) and np.isfinite(long.logits(expanded, [f16], long_ranges)).all(),
          "mm_tokens_per_image 16: pooling by 1 (none), finite logits")


def check_variants(check, tmp, a, b, base):
    print("gemma3 variants:")
    d = make(os.path.join(tmp, "gemma3-untied"), "--untied-lm-head")
    config, weights = rf.load_model_dir(d)
    untied = cv.reference(d, [a, b], os.path.join(tmp, "g-untied.json"), prompt=PROMPT)
    check(set(weights) == expected_names(3, 2, untied=True) and config["text_config"]["tie_word_embeddings"] is False
          and np.array_equal(np.array(untied["image_features"]), np.array(base["image_features"]))
          and np.abs(np.array(untied["logits"][0]) - np.array(base["logits"][0])).max() > 1e-3,
          "--untied-lm-head: language_model.lm_head.weight decodes, the rest as tied")
    d = make(os.path.join(tmp, "gemma3-bf16"), "--dtype", "bf16")
    low = cv.reference(d, [a, b], os.path.join(tmp, "g-bf16.json"), prompt=PROMPT)
    check(np.isfinite(low["logits"]).all()
          and np.abs(np.array(low["image_features"]) - np.array(base["image_features"])).max() < 0.1,
          "bf16: decodes, features near f32's")


def run_checks(check, tmp, a, b, other):
    d = make(os.path.join(tmp, "gemma3"))
    check_layout(check, d)
    check_pixels(check, tmp, d)
    check_tower(check, d, a)
    r = check_run(check, tmp, d, a, b, other)
    check_mask(check, tmp, d, a, r)
    check_variants(check, tmp, a, b, r)

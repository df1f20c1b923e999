#!/usr/bin/env python3
"""PIL's answers for the media tests, made at test time (tests/media/*_test.cpp).

  pil_reference.py OUT_DIR

Writes into OUT_DIR the encoded images and the pixels PIL decodes from them (after vLLM's RGB
conversion), PIL's resizes of random images, and the pixel values of a numpy re-enactment of
transformers' image processors (CLIP, SigLIP, Qwen2-VL) over PIL's resize, with
OUT_DIR/manifest.json listing every case. Raw pixels are uint8 (height, width, 3), tensors
float32 little-endian. Fails (exit 1) without PIL or numpy: the tests must not pass unchecked.
"""
import io
import json
import math
import os
import struct
import sys
import warnings
import zlib

import numpy as np
from PIL import Image

RNG = np.random.default_rng(20240611)
OPENAI_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


# ---------------------------------------------------------------- vLLM's view of a file

def vllm_rgb(data):
    """vllm.multimodal.image: Image.open, load, RGBA onto white by paste, else convert."""
    image = Image.open(io.BytesIO(data))
    image.load()
    if image.mode == "RGB":
        return image
    if image.mode == "RGBA":
        converted = Image.new("RGB", image.size, (255, 255, 255))
        converted.paste(image, mask=image.split()[3])
        return converted
    return image.convert("RGB")


def random_pixels(height, width, channels):
    """Noise over a gradient: edges for the filters, and values at both ends."""
    y, x = np.mgrid[0:height, 0:width]
    base = (x * 255 // max(width - 1, 1) + y * 127 // max(height - 1, 1)) % 256
    noise = RNG.integers(-40, 41, size=(height, width, channels))
    pixels = np.clip(base[..., None] + noise, 0, 255).astype(np.uint8)
    return pixels if channels > 1 else pixels[..., 0]


def encoded(image, fmt, **options):
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


# ---------------------------------------------------------------- PNGs PIL cannot write

def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def adam7_passes(height, width):
    for x0, y0, dx, dy in ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                           (1, 0, 2, 2), (0, 1, 1, 2)):
        yield range(y0, height, dy), range(x0, width, dx)


def raw_png(samples, bit_depth, color_type, plte=None, trns=None, interlace=False):
    """samples: (height, width, channels) integers; each row unfiltered (filter type 0)."""
    height, width = samples.shape[:2]
    dtype = ">u2" if bit_depth == 16 else np.uint8

    def pack_rows(block):
        rows = b""
        for row in block:
            flat = row.reshape(-1)
            if bit_depth < 8:
                bits = np.unpackbits(flat.astype(np.uint8)[:, None], axis=1)[:, 8 - bit_depth:]
                data = np.packbits(bits.reshape(-1)).tobytes()
            else:
                data = flat.astype(dtype).tobytes()
            rows += b"\0" + data
        return rows

    if interlace:
        body = b""
        for ys, xs in adam7_passes(height, width):
            if len(ys) and len(xs):
                body += pack_rows(samples[np.ix_(list(ys), list(xs))])
    else:
        body = pack_rows(samples)
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, int(interlace))
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
    if plte is not None:
        out += png_chunk(b"PLTE", bytes(plte))
    if trns is not None:
        out += png_chunk(b"tRNS", bytes(trns))
    return out + png_chunk(b"IDAT", zlib.compress(body)) + png_chunk(b"IEND", b"")


def decode_cases():
    h, w = 23, 37
    rgb = Image.fromarray(random_pixels(h, w, 3), "RGB")
    rgba_pixels = random_pixels(h, w, 4)
    rgba_pixels[..., 3] = RNG.choice([0, 1, 77, 128, 200, 254, 255], size=(h, w))
    rgba = Image.fromarray(rgba_pixels, "RGBA")
    gray = Image.fromarray(random_pixels(h, w, 1), "L")
    gray_alpha = Image.merge("LA", (gray, Image.fromarray(rgba_pixels[..., 3], "L")))
    palette = Image.fromarray(RNG.integers(0, 256, size=(h, w), dtype=np.uint8), "P")
    palette.putpalette(RNG.integers(0, 256, size=768, dtype=np.uint8).tobytes())
    small_palette = Image.fromarray(RNG.integers(0, 16, size=(h, w), dtype=np.uint8), "P")
    small_palette.putpalette(RNG.integers(0, 256, size=48, dtype=np.uint8).tobytes())
    gray16 = RNG.integers(0, 65536, size=(h, w)).astype(np.uint16)
    gray16[::2] = RNG.integers(0, 256, size=gray16[::2].shape)  # below 256: not clipped
    wide = RNG.integers(0, 65536, size=(h, w, 4))
    wide[..., 3] = RNG.choice([0, 255, 256, 30000, 65535], size=(h, w))
    indices = RNG.integers(0, 256, size=(h, w, 1))  # past the 5 colours: PIL's gray ramp
    big = Image.fromarray(random_pixels(61, 45, 3), "RGB")  # odd sides: partial MCUs
    frames = [Image.fromarray(random_pixels(h, w, 3), "RGB").quantize(colors) for colors in
              (64, 200, 32)]
    see_through = [f.convert("RGBA") for f in frames]
    for frame in see_through:
        frame.putalpha(Image.fromarray(rgba_pixels[..., 3], "L"))

    cases = {
        "png_rgb.png": encoded(rgb, "PNG"),
        "png_rgba.png": encoded(rgba, "PNG"),
        "png_gray.png": encoded(gray, "PNG"),
        "png_gray_alpha.png": encoded(gray_alpha, "PNG"),
        "png_gray_1bit.png": encoded(gray.convert("1"), "PNG"),
        "png_palette.png": encoded(palette, "PNG"),
        "png_palette_4bit_trns.png": encoded(small_palette, "PNG", transparency=bytes(range(16))),
        "png_rgb_trns.png": encoded(rgb, "PNG", transparency=(1, 2, 3)),
        "png_gray_16bit.png": encoded(Image.fromarray(gray16, "I;16"), "PNG"),
        "png_rgb_16bit.png": raw_png(wide[..., :3], 16, 2),
        "png_rgba_16bit.png": raw_png(wide, 16, 6),
        "png_gray_alpha_16bit.png": raw_png(wide[..., 2:], 16, 4),
        "png_gray_2bit.png": raw_png(wide[..., :1] % 4, 2, 0),
        "png_palette_short.png": raw_png(indices, 8, 3, plte=range(15)),
        "png_rgba_interlaced.png": raw_png(rgba_pixels, 8, 6, interlace=True),
        "png_gray_16bit_interlaced.png": raw_png(gray16[..., None], 16, 0, interlace=True),
        "jpeg_420.jpg": encoded(big, "JPEG", quality=90, subsampling=2),
        "jpeg_422.jpg": encoded(big, "JPEG", quality=75, subsampling=1),
        "jpeg_444.jpg": encoded(big, "JPEG", quality=95, subsampling=0),
        "jpeg_progressive.jpg": encoded(big, "JPEG", quality=85, progressive=True),
        "jpeg_gray.jpg": encoded(big.convert("L"), "JPEG", quality=90),
        "jpeg_cmyk.jpg": encoded(big.convert("CMYK"), "JPEG", quality=90),
        "webp_lossy.webp": encoded(rgb, "WEBP", quality=80),
        "webp_lossy_alpha.webp": encoded(rgba, "WEBP", quality=70),
        "webp_lossless_alpha.webp": encoded(rgba, "WEBP", lossless=True),
        "webp_animated.webp": encoded(frames[0].convert("RGB"), "WEBP", save_all=True,
                                      append_images=[f.convert("RGB") for f in frames[1:]],
                                      quality=60),
        "webp_animated_alpha.webp": encoded(see_through[0], "WEBP", save_all=True,
                                            append_images=see_through[1:], lossless=True),
        "gif_static.gif": encoded(frames[0], "GIF"),
        "gif_small.gif": encoded(frames[0].crop((0, 0, 12, 9)), "GIF"),  # not interlaced
        "gif_animated.gif": encoded(frames[1], "GIF", save_all=True, append_images=frames[2:],
                                    duration=40, loop=0, transparency=3),
    }
    # A logical screen larger than the first frame: PIL fills the rest with the transparent index.
    grown = bytearray(cases["gif_animated.gif"])
    grown[6:10] = struct.pack("<HH", w + 9, h + 5)
    cases["gif_screen_larger.gif"] = bytes(grown)
    return cases


# ---------------------------------------------------------------- transformers, in numpy

def get_size(height, width, cfg):
    """transformers' output size for CLIP / SigLIP (get_resize_output_image_size)."""
    size = cfg["size"]
    if "shortest_edge" in size:
        short, long = (width, height) if width <= height else (height, width)
        new_short, new_long = size["shortest_edge"], int(size["shortest_edge"] * long / short)
        return (new_long, new_short) if width <= height else (new_short, new_long)
    return size["height"], size["width"]


def smart_resize(height, width, factor, min_pixels, max_pixels):
    if max(height, width) / min(height, width) > 200:
        raise ValueError("aspect ratio")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def center_crop(image, crop_height, crop_width):
    """transformers.image_transforms.center_crop on (C, H, W)."""
    orig_height, orig_width = image.shape[-2:]
    top = (orig_height - crop_height) // 2
    bottom = top + crop_height
    left = (orig_width - crop_width) // 2
    right = left + crop_width
    if top >= 0 and bottom <= orig_height and left >= 0 and right <= orig_width:
        return image[..., top:bottom, left:right]
    new_height = max(crop_height, orig_height)
    new_width = max(crop_width, orig_width)
    new_image = np.zeros_like(image, shape=image.shape[:-2] + (new_height, new_width))
    top_pad = math.ceil((new_height - orig_height) / 2)
    left_pad = math.ceil((new_width - orig_width) / 2)
    new_image[..., top_pad:top_pad + orig_height, left_pad:left_pad + orig_width] = image
    top, bottom, left, right = top + top_pad, bottom + top_pad, left + left_pad, right + left_pad
    return new_image[..., max(0, top):min(new_height, bottom), max(0, left):min(new_width, right)]


def preprocess(pixels, cfg):
    """(H, W, 3) uint8 -> (C, H, W) values, and Qwen2-VL's patches with their grid."""
    height, width = pixels.shape[:2]
    qwen = cfg["image_processor_type"] == "Qwen2VLImageProcessor"
    if qwen:
        factor = cfg["patch_size"] * cfg["merge_size"]
        size = smart_resize(height, width, factor, cfg["min_pixels"], cfg["max_pixels"])
    else:
        size = get_size(height, width, cfg)
    image = Image.fromarray(pixels, "RGB").resize((size[1], size[0]), resample=cfg["resample"])
    image = np.array(image).transpose(2, 0, 1)  # (C, H, W) uint8
    clip = cfg["image_processor_type"] == "CLIPImageProcessor"
    if cfg.get("do_center_crop", clip):  # CLIPImageProcessor crops unless told not to
        image = center_crop(image, cfg["crop_size"]["height"], cfg["crop_size"]["width"])
    image = (image.astype(np.float64) * cfg["rescale_factor"]).astype(np.float32)
    mean = np.array(cfg["image_mean"], dtype=image.dtype)
    std = np.array(cfg["image_std"], dtype=image.dtype)
    image = ((image.T - mean) / std).T
    if not qwen:
        return image, None, None
    p, m, tp = cfg["patch_size"], cfg["merge_size"], cfg["temporal_patch_size"]
    patches = np.repeat(image[np.newaxis], tp, axis=0)
    channel = patches.shape[1]
    grid_t, grid_h, grid_w = patches.shape[0] // tp, size[0] // p, size[1] // p
    patches = patches.reshape(grid_t, tp, channel, grid_h // m, m, p, grid_w // m, m, p)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, channel * tp * p * p)
    return image, flat, [grid_t, grid_h, grid_w]


PREPROCESS_CASES = [
    ("llava_landscape", 480, 640, {
        "image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 336},
        "crop_size": {"height": 336, "width": 336}, "do_center_crop": True, "resample": 3,
        "do_resize": True, "do_rescale": True, "rescale_factor": 0.00392156862745098,
        "do_normalize": True, "image_mean": OPENAI_CLIP_MEAN, "image_std": OPENAI_CLIP_STD,
        "do_convert_rgb": True, "processor_class": "LlavaProcessor"}),
    ("llava_portrait_odd", 997, 203, None),  # the same config
    ("clip_pad_crop", 50, 90, {
        "image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 41},
        "crop_size": {"height": 64, "width": 57}, "do_center_crop": True, "resample": 2,
        "rescale_factor": 0.00392156862745098, "image_mean": OPENAI_CLIP_MEAN,
        "image_std": OPENAI_CLIP_STD}),
    ("clip_thin_crop", 8, 401, {  # resized to 64x3208, of which the crop alone is computed
        "image_processor_type": "CLIPImageProcessor", "size": {"shortest_edge": 64},
        "crop_size": {"height": 64, "width": 61}, "resample": 3,
        "rescale_factor": 0.00392156862745098, "image_mean": OPENAI_CLIP_MEAN,
        "image_std": OPENAI_CLIP_STD}),
    ("gemma3_siglip_896", 201, 333, {
        "image_processor_type": "Gemma3ImageProcessor", "size": {"height": 896, "width": 896},
        "resample": 2, "do_rescale": True, "rescale_factor": 0.00392156862745098,
        "do_normalize": True, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
        "do_convert_rgb": None, "do_pan_and_scan": None, "image_seq_length": 256}),
    ("qwen2_5_vl", 480, 640, {
        "image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 3136,
        "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
        "image_mean": OPENAI_CLIP_MEAN, "image_std": OPENAI_CLIP_STD, "resample": 3,
        "rescale_factor": 0.00392156862745098, "processor_class": "Qwen2_5_VLProcessor"}),
    ("qwen2_vl_capped", 701, 1003, {
        "image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 3136,
        "max_pixels": 256 * 28 * 28, "patch_size": 14, "temporal_patch_size": 2,
        "merge_size": 2, "image_mean": OPENAI_CLIP_MEAN, "image_std": OPENAI_CLIP_STD,
        "resample": 3, "rescale_factor": 0.00392156862745098}),
    ("qwen2_vl_tiny", 9, 30, None),  # the capped config: min_pixels scales it up
]

RESIZE_CASES = [  # (source height, width, target height, width, PIL filter)
    (1, 1, 3, 7, 3), (1, 1, 3, 7, 2), (480, 640, 252, 336, 3), (480, 640, 252, 336, 2),
    (1001, 37, 9088, 336, 3), (17, 13, 336, 336, 3), (300, 500, 5, 7, 3), (300, 500, 5, 7, 2),
    (50, 100, 77, 100, 3), (50, 100, 50, 33, 2), (23, 37, 9, 100, 0), (480, 640, 252, 336, 0),
    (333, 201, 896, 896, 2), (2, 1000, 1, 3, 3),
]

# Random sides and filters beyond the hand-picked ones: a weight one ulp off (a fused
# multiply-add, an operation out of PIL's order) shows in some of them.
SWEEP = np.random.default_rng(7)
RESIZE_CASES += [tuple(int(v) for v in SWEEP.integers(1, 160, size=4)) + (int(f),)
                 for f in SWEEP.choice([0, 2, 3], size=240)]

SMART_RESIZE_CASES = [(480, 640), (1080, 1920), (28, 28), (10, 10), (9, 30), (14, 2000),
                      (5, 1000), (5, 1001), (3000, 4000), (701, 1003), (42, 42), (70, 70),
                      (1, 1), (13, 2603), (2603, 13), (99, 100)]


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = sys.argv[1]
    # PIL warns that a palette with a tRNS list "should be converted to RGBA"; vLLM does not.
    warnings.simplefilter("ignore")
    os.makedirs(out, exist_ok=True)
    manifest = {"decode": [], "resize": [], "preprocess": [], "smart_resize": []}

    for name, data in decode_cases().items():
        image = vllm_rgb(data)
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        with open(os.path.join(out, name + ".rgb"), "wb") as f:
            f.write(np.asarray(image, dtype=np.uint8).tobytes())
        manifest["decode"].append({"file": name, "width": image.width, "height": image.height})

    for i, (h, w, th, tw, resample) in enumerate(RESIZE_CASES):
        pixels = random_pixels(h, w, 3)
        name = f"resize_{i}"
        resized = Image.fromarray(pixels, "RGB").resize((tw, th), resample=resample)
        pixels.tofile(os.path.join(out, name + ".in.rgb"))
        np.asarray(resized).tofile(os.path.join(out, name + ".out.rgb"))
        manifest["resize"].append({"name": name, "height": h, "width": w, "to_height": th,
                                   "to_width": tw, "resample": resample})

    config = None
    for name, h, w, case_config in PREPROCESS_CASES:
        config = case_config or config
        pixels = random_pixels(h, w, 3)
        values, patches, grid = preprocess(pixels, config)
        pixels.tofile(os.path.join(out, name + ".in.rgb"))
        values.astype("<f4").tofile(os.path.join(out, name + ".values.f32"))
        entry = {"name": name, "height": h, "width": w, "config": config,
                 "shape": list(values.shape)}
        if patches is not None:
            patches.astype("<f4").tofile(os.path.join(out, name + ".patches.f32"))
            entry["grid"] = grid
            entry["patches_shape"] = list(patches.shape)
        manifest["preprocess"].append(entry)

    for h, w in SMART_RESIZE_CASES:
        for min_pixels, max_pixels in ((3136, 12845056), (3136, 256 * 28 * 28), (100000, 200000)):
            try:
                size = list(smart_resize(h, w, 28, min_pixels, max_pixels))
            except ValueError:
                size = None
            manifest["smart_resize"].append({"height": h, "width": w, "min_pixels": min_pixels,
                                             "max_pixels": max_pixels, "size": size})

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())

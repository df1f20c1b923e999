#!/usr/bin/env python3
"""The float64 reference's greedy text for a LLaVA chat prompt with images, for vision_test.sh.

  vision_reference_text.py BASE_URL MODEL_DIR QUESTION STEPS IMAGE...

Renders llava-1.5's chat template by hand (a message's images first, then its text: the
checkpoint's template, whose {% generation %} tag plain jinja2 lacks), tokenizes it with the
server's /tokenize (so both sides share the tokenizer, not the forward), runs
tests/reference/vision_reference.py on the ids and the images, and prints the generated ids'
text through the server's /detokenize, as a JSON string.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

base, model_dir, question, steps, images = (sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4],
                                            sys.argv[5:])


def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))


text = "USER: " + "<image>\n" * len(images) + question + " ASSISTANT:"
ids = post("/tokenize", {"prompt": text, "add_special_tokens": False})["tokens"]
here = os.path.dirname(os.path.abspath(__file__))
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "ref.json")
    command = [sys.executable, os.path.join(here, "..", "reference", "vision_reference.py"), model_dir,
               "--prompt", ",".join(map(str, ids)), "--steps", steps, "--out", out]
    for image in images:
        command += ["--image", image]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    tokens = json.load(open(out))["tokens"]
print(json.dumps(post("/detokenize", {"tokens": tokens})["prompt"]))

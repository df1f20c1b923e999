#!/usr/bin/env python3
"""The float64 reference's greedy text for a LLaVA chat prompt with images, for vision_test.sh.

  vision_reference_text.py BASE_URL MODEL_DIR QUESTION STEPS PLACEHOLDER IMAGE...

The chat prompt of one user message with the images (first) and the question: the server's
/tokenize renders its chat template and tokenizes it with PLACEHOLDER (the text an image part
renders to: llava's "<image>\n", Gemma 3's "<start_of_image>") written once per image before
the question, so both sides share the template and the tokenizer, not the forward. Then
tests/reference/vision_reference.py runs on the ids and the images, and the generated ids'
text comes back through the server's /detokenize, printed as a JSON string.
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

base, model_dir, question, steps, placeholder, images = (sys.argv[1], sys.argv[2], sys.argv[3],
                                                         sys.argv[4], sys.argv[5], sys.argv[6:])


def post(path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    return json.load(urllib.request.urlopen(req))


content = placeholder.encode().decode("unicode_escape") * len(images) + question
ids = post("/tokenize", {"messages": [{"role": "user", "content": content}],
                         "add_generation_prompt": True})["tokens"]
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

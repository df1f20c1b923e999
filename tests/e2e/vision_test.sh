#!/usr/bin/env bash
# End to end: images in the prompt of a vision-language model. A random-weight llava-hf
# checkpoint (scripts/make_random_vlm.py) is served; its greedy answers about an image equal
# the float64 reference's (tests/reference/vision_reference.py: transformers' LLaVA with PIL
# preprocessing), whether the image comes as a data: URL through the openai SDK, an http URL
# from a local server through curl, a file:// URL, the Responses API's input_image or
# Anthropic's image block; two images of different sizes in one message too. Hostile images
# (truncated, a 30000 x 30000 header, wrong magic, 0 x 0) and refused URLs are 400s that name
# the image, and the server stays up; the metrics count the images and the encoder's work.
# Gemma 3 and Qwen2.5-VL answer as their references do too.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SOURCE_DIR:?}"

require_command serve
require_tools curl python3
require_node_clients "$ACTORLLM_SOURCE_DIR/tests/e2e"
py=/usr/bin/python3

"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_vlm.py" --arch llava --vocab 514 \
  --out "$work/model" >/dev/null
mkdir -p "$work/media" "$work/outside"
"$py" - "$work/media" <<'PY'
import sys, numpy as np
from PIL import Image
d, g = sys.argv[1], np.random.default_rng(3)
Image.fromarray(g.integers(0, 256, (60, 80, 3), dtype=np.uint8)).save(f"{d}/a.png")
Image.fromarray(g.integers(0, 256, (90, 50, 3), dtype=np.uint8)).save(f"{d}/b.jpg", quality=90)
png = open(f"{d}/a.png", "rb").read()
open(f"{d}/truncated.png", "wb").write(png[: len(png) // 2])
# A valid PNG header that declares 30000 x 30000 pixels, then nothing.
import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
head = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 30000, 30000, 8, 2, 0, 0, 0))
open(f"{d}/bomb.png", "wb").write(head + chunk(b"IDAT", zlib.compress(b"\0" * 1000)) + chunk(b"IEND", b""))
open(f"{d}/zero.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 0, 0, 8, 2, 0, 0, 0)))
open(f"{d}/magic.png", "wb").write(b"GIF00" + png[5:])
PY
cp "$work/media/a.png" "$work/outside/a.png"

port=$(free_port)
"$ACTORLLM_BIN" serve "$work/model" --host 127.0.0.1 --port "$port" --device cpu \
  --allowed-local-media-path "$work/media" >"$work/serve.log" 2>&1 &
pids+=($!)
base="http://127.0.0.1:$port"
media_port=$(free_port)
(cd "$work/media" && exec "$py" -m http.server "$media_port" --bind 127.0.0.1 >/dev/null 2>&1) &
pids+=($!)
for _ in $(seq 1 600); do
  curl -sf "$base/health" >/dev/null 2>&1 && curl -sf "http://127.0.0.1:$media_port/a.png" -o /dev/null && break
  sleep 0.1
done
curl -sf "$base/health" >/dev/null || { echo "FAIL: the server did not start"; cat "$work/serve.log"; exit 1; }

question="What is this?"
model_dir="$work/model"
placeholder='<image>\n'  # what llava-1.5's template writes for an image part
steps=12
# The text as a JSON string without its leading spaces and replacement characters: a whole
# sequence's detokenization drops the first token's space that a served answer keeps, and
# renders an incomplete UTF-8 sequence of byte tokens at the start with fewer U+FFFD.
same_text='import json, sys; t = json.load(sys.stdin); print(json.dumps(t.lstrip(" \ufffd") if isinstance(t, str) else t))'

# reference <image...>: the reference's greedy text (a JSON string) for the chat prompt.
reference() {
  "$py" "$ACTORLLM_SOURCE_DIR/tests/e2e/vision_reference_text.py" "$base" "$model_dir" \
    "$question" "$steps" "$placeholder" "$@" | "$py" -c "$same_text"
}
# chat <json content list>: the server's greedy text (a JSON string), or its error body.
chat() {
  curl -s "$base/v1/chat/completions" -H 'Content-Type: application/json' -d "{
    \"messages\": [{\"role\": \"user\", \"content\": $1}],
    \"max_tokens\": $steps, \"temperature\": 0}" |
    "$py" -c 'import json, sys; r = json.load(sys.stdin); print(json.dumps(r["choices"][0]["message"]["content"]) if "choices" in r else json.dumps(r))' |
    "$py" -c "$same_text"
}
# status <json content list>: the HTTP status of that chat request; its body in $work/body.
status() {
  curl -s -o "$work/body" -w '%{http_code}' "$base/v1/chat/completions" \
    -H 'Content-Type: application/json' -d "{
    \"messages\": [{\"role\": \"user\", \"content\": $1}], \"max_tokens\": 4}"
}
part() { echo "{\"type\": \"image_url\", \"image_url\": {\"url\": \"$1\"}}"; }
text_part="{\"type\": \"text\", \"text\": \"$question\"}"

want_a=$(reference "$work/media/a.png")
want_b=$(reference "$work/media/b.jpg")
want_ab=$(reference "$work/media/a.png" "$work/media/b.jpg")
echo "reference: a.png $want_a, b.jpg $want_b, both $want_ab"
check "the two images give different answers" test "$want_a" != "$want_b"

sdk=$(node "$ACTORLLM_SOURCE_DIR/tests/e2e/vision_client.mjs" "$base" "$work/media/a.png" image/png "$question" |
  "$py" -c "$same_text")
check "openai SDK, data: URL: the reference's answer ($sdk)" test "$sdk" = "$want_a"
got=$(chat "[$(part "http://127.0.0.1:$media_port/b.jpg"), $text_part]")
check "curl, http URL of a JPEG: the reference's answer ($got)" test "$got" = "$want_b"
got=$(chat "[$(part "file://$work/media/a.png"), $text_part]")
check "file:// URL: the reference's answer ($got)" test "$got" = "$want_a"
got=$(chat "[$(part "file://$work/media/a.png"), $(part "http://127.0.0.1:$media_port/b.jpg"), $text_part]")
check "two images of different sizes in one message ($got)" test "$got" = "$want_ab"

b64=$(base64 -w0 "$work/media/a.png")
got=$(curl -s "$base/v1/responses" -H 'Content-Type: application/json' -d "{
  \"input\": [{\"role\": \"user\", \"content\": [
    {\"type\": \"input_image\", \"image_url\": \"data:image/png;base64,$b64\"},
    {\"type\": \"input_text\", \"text\": \"$question\"}]}],
  \"max_output_tokens\": $steps, \"temperature\": 0, \"store\": false}" |
  "$py" -c 'import json, sys; r = json.load(sys.stdin); print(json.dumps(r["output"][-1]["content"][0]["text"]) if "output" in r else json.dumps(r))' |
  "$py" -c "$same_text")
check "Responses API input_image: the reference's answer ($got)" test "$got" = "$want_a"
got=$(curl -s "$base/v1/messages" -H 'Content-Type: application/json' -d "{
  \"max_tokens\": $steps, \"temperature\": 0, \"messages\": [{\"role\": \"user\", \"content\": [
    {\"type\": \"image\", \"source\": {\"type\": \"base64\", \"media_type\": \"image/png\", \"data\": \"$b64\"}},
    {\"type\": \"text\", \"text\": \"$question\"}]}]}" |
  "$py" -c 'import json, sys; r = json.load(sys.stdin); print(json.dumps(r["content"][0]["text"]) if "content" in r else json.dumps(r))' |
  "$py" -c "$same_text")
check "Anthropic image block: the reference's answer ($got)" test "$got" = "$want_a"

# hostile <file> <words>: a 400 whose message names the image and says <words>.
hostile() {
  local code
  code=$(status "[$(part "file://$work/media/$1"), $text_part]")
  [[ $code == 400 ]] && grep -q "image 0" "$work/body" && grep -qi "$2" "$work/body" ||
    { echo "     $1: HTTP $code $(cat "$work/body")"; return 1; }
}
check "a truncated PNG is a 400" hostile truncated.png "png"
check "a 30000 x 30000 header is a 400 before any pixel is decoded" hostile bomb.png "30000"
check "wrong magic bytes are a 400" hostile magic.png "not a PNG, JPEG, WebP or GIF"
check "a 0 x 0 image is a 400" hostile zero.png "0"
code=$(status "[$(part "file://$work/outside/a.png"), $text_part]")
check "a file outside --allowed-local-media-path is a 400 ($code)" test "$code" = 400
code=$(status "[$(part "data:image/png;base64,not*base64"), $text_part]")
check "bad base64 is a 400 ($code)" test "$code" = 400
code=$(status "[$text_part, $text_part]")
check "text parts alone still serve ($code)" test "$code" = 200
check "the server is up after all of it" curl -sf "$base/health" -o /dev/null

metric() {
  curl -s "$base/metrics" |
    awk -v name="$1" 'index($0, name "{") == 1 || index($0, name " ") == 1 { s += $NF } END { print s + 0 }'
}
images=$(metric actorllm:prompt_images_total)
encoded=$(metric actorllm:encoder_images_total)
image_tokens=$(metric actorllm:prompt_image_tokens_total)
echo "metrics: $images images, $image_tokens image tokens, $encoded encoded"
check "prompt_images_total counts the 7 images served" test "${images%.*}" -eq 7
check "prompt_image_tokens_total is 16 per image" test "${image_tokens%.*}" -eq $((16 * ${images%.*}))
check "the encoder cache spared repeated images (encoded < images)" test "${encoded%.*}" -lt "${images%.*}"

# another_model <name> <arch> <placeholder>: serves a random <arch> model and checks that its
# answers about a.png, and about a.png and b.jpg together, are the reference's.
another_model() {
  local name=$1 arch=$2
  "$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_vlm.py" --arch "$arch" --out "$work/$arch" >/dev/null
  port=$(free_port)
  "$ACTORLLM_BIN" serve "$work/$arch" --host 127.0.0.1 --port "$port" --device cpu \
    --allowed-local-media-path "$work/media" >"$work/$arch.log" 2>&1 &
  pids+=($!)
  base="http://127.0.0.1:$port"
  for _ in $(seq 1 600); do curl -sf "$base/health" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf "$base/health" >/dev/null || { echo "FAIL: the $name server did not start"; cat "$work/$arch.log"; exit 1; }
  model_dir="$work/$arch"
  placeholder=$3
  want_a=$(reference "$work/media/a.png")
  want_ab=$(reference "$work/media/a.png" "$work/media/b.jpg")
  echo "$name reference: a.png $want_a, both $want_ab"
  sdk=$(node "$ACTORLLM_SOURCE_DIR/tests/e2e/vision_client.mjs" "$base" "$work/media/a.png" image/png "$question" |
    "$py" -c "$same_text")
  check "$name, openai SDK: the reference's answer ($sdk)" test "$sdk" = "$want_a"
  got=$(chat "[$(part "file://$work/media/a.png"), $(part "http://127.0.0.1:$media_port/b.jpg"), $text_part]")
  check "$name, two images: the reference's answer ($got)" test "$got" = "$want_ab"
}

# Gemma 3: SigLIP, the pooled projector, images attended both ways, the processor's "\n\n"
# around each image.
another_model "Gemma 3" gemma3 '<start_of_image>'

# Qwen2.5-VL: each image at its own size (a.png 6 positions, b.jpg 6 in another grid), the
# tower's windows, M-RoPE in the decoder.
another_model "Qwen2.5-VL" qwen2_5_vl '<|vision_start|><|image_pad|><|vision_end|>'
code=$(status "[$(part "file://$work/media/bomb.png"), $text_part]")
check "Qwen2.5-VL: a 30000 x 30000 header is a 400 ($code)" test "$code" = 400

exit $((failures > 0))

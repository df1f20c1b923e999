#!/usr/bin/env bash
# End to end: the web playground (GET /, web/) in a real browser, Debian's chromium driven by
# puppeteer-core (web_ui_client.mjs), against `actorllm serve` on stories260K beside a slow
# random model and a folder that does not load: the page and its tabs, the model picker (each
# model with its state, the choice named in requests and kept across a reload), a streamed raw
# completion with its stats line, Stop of the slow model's answer (the server counts the
# abort), the Engine view moving under a load of 16 clients, and a server with --api-key and a
# chat template whose key the page asks for once. Images: a server of a random LLaVA
# (scripts/make_random_vlm.py) answers about a PNG attached in the page as it answers the same
# request sent directly, also on the next turn (the history resends the image), and the keyed
# server's text-only model shows its 400 in the page. --disable-web-ui makes / a 404.
#   WEB_UI_SCREENSHOTS=docs/screenshots tests/e2e/web_ui_test.sh   rewrites the README's images
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl chromium python3
require_command serve
e2e_dir="$ACTORLLM_SOURCE_DIR/tests/e2e"
require_node_clients "$e2e_dir" puppeteer-core

model="$ACTORLLM_SHARED_DIR/models/stories260K"
key="web-ui-test-key"
# A second model for the picker, slow enough that an answer of 400 tokens outlasts the page's
# Stop: stories260K writes them in about 60 ms, and a busy machine may show the page its first
# chunk only after that, when there is nothing left to abort.
slow="$work/slow"
slow_random_model "$slow"
# A folder that looks like a model and does not load: the picker lists it as failed.
mkdir -p "$work/broken"
echo '{"architectures": ["NoSuchForCausalLM"], "vocab_size": 512}' >"$work/broken/config.json"
# A random LLaVA for the page's images, and the files the page attaches: two PNGs, one file
# above the page's 12 MiB limit and one that is no image.
/usr/bin/python3 "$ACTORLLM_SOURCE_DIR/scripts/make_random_vlm.py" --arch llava --vocab 514 \
  --out "$work/vlm" >/dev/null
mkdir -p "$work/images"
/usr/bin/python3 - "$work/images" <<'PY'
import sys, numpy as np
from PIL import Image
d, g = sys.argv[1], np.random.default_rng(11)
Image.fromarray(g.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(f"{d}/photo.png")
Image.fromarray(g.integers(0, 256, (30, 30, 3), dtype=np.uint8)).save(f"{d}/second.png")
with open(f"{d}/big.png", "wb") as f:
    f.truncate(21 << 20)
open(f"{d}/notes.txt", "w").write("not an image\n")
PY
serve() {  # serve <log name> <port> [flags...]: starts a server in the background
  local name=$1 port=$2
  shift 2
  "$ACTORLLM_BIN" serve --model "$model" --host 127.0.0.1 --port "$port" --device cpu \
    --disable-log-stats "$@" >"$work/$name.log" 2>&1 &
  pids+=("$!")
}
# For the README's images, a small KV pool and 12 sequences a step make the Engine view show
# waiting, swapped and preempted requests.
showcase=()
[[ -n "${WEB_UI_SCREENSHOTS:-}" ]] &&
  showcase=(--max-num-seqs 12 --num-gpu-blocks-override 160 --preemption-mode swap)
port=$(free_port)
serve plain "$port" --model slow="$slow" --model broken="$work/broken" \
  --models-kv-budget $((256 << 20)) "${showcase[@]}"
keyed_port=$(free_port)
serve keyed "$keyed_port" --model slow="$slow" --models-kv-budget $((256 << 20)) \
  --api-key "$key" \
  --chat-template "$ACTORLLM_SHARED_DIR/chat-templates/mistralai-Mistral-Nemo-Instruct-2407.jinja"
no_ui_port=$(free_port)
serve no-ui "$no_ui_port" --disable-web-ui
vision_port=$(free_port)
"$ACTORLLM_BIN" serve "$work/vlm" --host 127.0.0.1 --port "$vision_port" --device cpu \
  --disable-log-stats >"$work/vision.log" 2>&1 &
pids+=("$!")
for p in "$port" "$keyed_port" "$no_ui_port" "$vision_port"; do
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$p/health" >/dev/null 2>&1 && break; sleep 0.1; done
done

status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "/ is the page, with a Content-Security-Policy" \
  grep -qi '^content-security-policy:' <(curl -s -D - -o /dev/null "http://127.0.0.1:$port/")
check "/ui/app.js is JavaScript" \
  grep -qi '^content-type: text/javascript' <(curl -s -D - -o /dev/null "http://127.0.0.1:$port/ui/app.js")
check "the page needs no key on a server with --api-key" \
  test "$(status "http://127.0.0.1:$keyed_port/")" = 200
check "--disable-web-ui: / is a 404" test "$(status "http://127.0.0.1:$no_ui_port/")" = 404
check "--disable-web-ui: /ui/app.js is a 404" \
  test "$(status "http://127.0.0.1:$no_ui_port/ui/app.js")" = 404
check "--disable-web-ui: the API still answers" \
  test "$(status "http://127.0.0.1:$no_ui_port/v1/models")" = 200

check "the playground in chromium" node "$e2e_dir/web_ui_client.mjs" \
  "http://127.0.0.1:$port" "http://127.0.0.1:$keyed_port" "$key" \
  "http://127.0.0.1:$vision_port" "$work/images"

if [[ $failures -ne 0 ]]; then
  for name in plain keyed no-ui vision; do echo "--- $name.log"; tail -n 10 "$work/$name.log"; done
  exit 1
fi
echo "all web UI checks passed"

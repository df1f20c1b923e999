#!/usr/bin/env bash
# End to end: `actorllm serve --lora-modules` on a random Llama (slow_random_model) with
# random PEFT adapters (scripts/make_random_lora.py) through the actors: a completion naming
# an adapter streams what a server of the model with that adapter merged into its weights
# streams, the base model what the plain server does; /v1/models lists the adapters with
# their parent; and with --enable-lora-runtime-updates an adapter loaded and another unloaded
# while eight streams run lose none of them, after which the unloaded name is a 404 and the
# loaded one serves; a bad adapter folder is a 400 and the server serves on.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}" "${ACTORLLM_SOURCE_DIR:?}"
require_tools curl python3
require_command serve
py=/usr/bin/python3  # Debian's, with python3-numpy
model="$work/slow-llama"  # streams must still run while adapters load and unload
slow_random_model "$model"
"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_lora.py" --base "$model" --rank 8 --seed 1 \
  --out "$work/a" --merged "$work/a-merged"
"$py" "$ACTORLLM_SOURCE_DIR/scripts/make_random_lora.py" --base "$model" --rank 4 --seed 2 \
  --targets q_proj,v_proj,down_proj --out "$work/b" --merged "$work/b-merged"

# serve <name> <args...>: starts a server, waits for /health, sets port_<name>.
serve() {
  local name=$1 port; shift
  port=$(free_port)
  "$ACTORLLM_BIN" serve --host 127.0.0.1 --port "$port" --device cpu "$@" >"$work/$name.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
  printf -v "port_$name" '%s' "$port"
}
serve lora --model "$model" --served-model-name base --lora-modules "a=$work/a" --max-loras 2 \
  --enable-lora-runtime-updates
serve plain --model "$model" --served-model-name base
serve merged_a --model "$work/a-merged" --served-model-name a
serve merged_b --model "$work/b-merged" --served-model-name b

# text <port> <model> <prompt ids>: the greedy completion's text.
text() {
  curl -s "http://127.0.0.1:$1/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model":"'"$2"'","prompt":['"$3"'],"max_tokens":40,"temperature":0,"ignore_eos":true}' |
    "$py" -c 'import json,sys; b=json.load(sys.stdin); print(b["choices"][0]["text"] if "choices" in b else b)'
}

models=$(curl -s "http://127.0.0.1:$port_lora/v1/models")
check "/v1/models lists adapter a with the model as parent" \
  "$py" -c 'import json,sys; d=json.loads(sys.argv[1])["data"]; assert [m["id"] for m in d]==["base","a"] and d[1]["parent"]=="base", d' "$models"
want_a=$(text "$port_merged_a" a 1,403,407)
want_base=$(text "$port_plain" base 1,403,407)
check "adapter a streams its merged model's text" test "$(text "$port_lora" a 1,403,407)" = "$want_a"
check "the base model streams the plain model's text" test "$(text "$port_lora" base 1,403,407)" = "$want_base"
check "the adapter changes the text" test "$want_a" != "$want_base"

# Eight requests over a and the base while b is loaded and a unloaded.
running=()
for i in $(seq 0 7); do
  m=$([[ $((i % 2)) -eq 0 ]] && echo a || echo base)
  curl -s "http://127.0.0.1:$port_lora/v1/completions" -H 'Content-Type: application/json' \
    -d '{"model":"'"$m"'","prompt":[1,403,407],"max_tokens":400,"temperature":0,"ignore_eos":true}' \
    -o "$work/run$i.json" &
  running+=("$!")
done
sleep 0.1
loaded=$(curl -s "http://127.0.0.1:$port_lora/v1/load_lora_adapter" -H 'Content-Type: application/json' \
  -d '{"lora_name":"b","lora_path":"'"$work/b"'"}')
unloaded=$(curl -s "http://127.0.0.1:$port_lora/v1/unload_lora_adapter" -H 'Content-Type: application/json' \
  -d '{"lora_name":"a"}')
still_running=0
for p in "${running[@]}"; do kill -0 "$p" 2>/dev/null && still_running=$((still_running + 1)); done
wait "${running[@]}"
check "the adapters changed while $still_running of the 8 requests ran" test "$still_running" -gt 0
check "b loads under load ($loaded)" grep -q "added successfully" <<<"$loaded"
check "a unloads under load ($unloaded)" grep -q "removed successfully" <<<"$unloaded"
long_a=$(curl -s "http://127.0.0.1:$port_merged_a/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model":"a","prompt":[1,403,407],"max_tokens":400,"temperature":0,"ignore_eos":true}')
long_base=$(curl -s "http://127.0.0.1:$port_plain/v1/completions" -H 'Content-Type: application/json' \
  -d '{"model":"base","prompt":[1,403,407],"max_tokens":400,"temperature":0,"ignore_eos":true}')
for i in $(seq 0 7); do
  want=$([[ $((i % 2)) -eq 0 ]] && echo "$long_a" || echo "$long_base")
  check "request $i finished with its model's 400 tokens" "$py" -c '
import json, sys
got, want = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
assert got["choices"][0]["finish_reason"] == "length", got
assert got["choices"][0]["text"] == want["choices"][0]["text"], (got, want)' "$work/run$i.json" "$want"
done
status=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port_lora/v1/completions" \
  -H 'Content-Type: application/json' -d '{"model":"a","prompt":[1],"max_tokens":2}')
check "the unloaded adapter is a 404 ($status)" test "$status" = 404
check "the loaded adapter b streams its merged model's text" \
  test "$(text "$port_lora" b 1,403,407)" = "$(text "$port_merged_b" b 1,403,407)"
check "the startup log lists adapter a" grep -q "adapter 'a' from" "$work/lora.log"
bad=$(curl -s -w ' %{http_code}' "http://127.0.0.1:$port_lora/v1/load_lora_adapter" \
  -H 'Content-Type: application/json' -d '{"lora_name":"c","lora_path":"'"$work/nowhere"'"}')
check "a bad adapter folder is a 400 naming it (${bad:0:120})" grep -q "nowhere.* 400$" <<<"$bad"
taken=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port_lora/v1/load_lora_adapter" \
  -H 'Content-Type: application/json' -d '{"lora_name":"base","lora_path":"'"$work/b"'"}')
check "the base model's name cannot be an adapter's ($taken)" test "$taken" = 400
check "... and the server serves on" test "$(text "$port_lora" b 1,403,407)" = "$(text "$port_merged_b" b 1,403,407)"
[[ $failures -eq 0 ]] || { tail -n 20 "$work/lora.log"; exit 1; }
echo "all LoRA checks passed"

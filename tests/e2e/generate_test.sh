#!/usr/bin/env bash
# `actorllm generate` as a user runs it: the stories260K golden greedy ids and text from the
# command line, and one-line errors with exit status 2 for bad flags.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
: "${ACTORLLM_BIN:?}" "${ACTORLLM_SHARED_DIR:?}"
model="$ACTORLLM_SHARED_DIR/models/stories260K"

out=$("$ACTORLLM_BIN" generate --model "$model" --prompt-ids 1 --max-tokens 120 --temperature 0 \
      --ignore-eos --output json)
check "generate exits 0" test $? -eq 0
compare() {
  python3 - "$model/golden_greedy.json" "$1" <<'PY'
import json, sys
golden = json.load(open(sys.argv[1]))
got = json.loads(sys.argv[2])
sys.exit(0 if got["output_token_ids"] == golden["output_token_ids"] and got["text"] == golden["output_text"]
         and got["prompt_token_ids"] == [1] else 1)
PY
}
check "--output json reproduces the golden ids and text" compare "$out"

"$ACTORLLM_BIN" generate --model "$model" --block-size 7 2>"$(mktemp)"; status=$?
check "a bad value exits with status 2" test "$status" -eq 2
msg=$("$ACTORLLM_BIN" generate --model "$model" --bogus-flag 2>&1 >/dev/null)
check "an unknown flag is one clear line" test "$(printf '%s\n' "$msg" | wc -l)" -eq 1
msg=$("$ACTORLLM_BIN" generate --model /nonexistent/model 2>&1 >/dev/null); status=$?
check "a missing model is an error naming it (status $status)" sh -c "test $status -ne 0 && printf '%s' '$msg' | grep -q nonexistent"
msg=$("$ACTORLLM_BIN" generate --model "$model" --num-gpu-blocks-override 4 2>&1 >/dev/null)
check "a context that does not fit the KV cache says the largest that fits" \
  sh -c "printf '%s' \"\$1\" | grep -q 'max-model-len 64'" _ "$msg"
((failures)) && exit 1
echo "all generate checks passed"

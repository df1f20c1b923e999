# Shared by the end-to-end scripts (sourced, not a test): free ports, checks, process cleanup.
# A missing tool or a broken binary is a failure, never a skip: CI must not pass because
# something it needed was absent (scripts/setup.sh installs all of it).

# require_tools <tool...>: exits 1 naming the first tool not on PATH.
require_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || {
      echo "FAIL: $tool is not installed (./scripts/setup.sh installs it)"
      exit 1
    }
  done
}

# require_command <subcommand>: exits 1, with the binary's own words, when
# `$ACTORLLM_BIN <subcommand> --help` does not succeed (a missing or broken build).
require_command() {
  local out
  if ! out=$("$ACTORLLM_BIN" "$1" --help 2>&1); then
    echo "FAIL: '$ACTORLLM_BIN $1 --help' did not run:"
    echo "$out" | tail -n 20
    exit 1
  fi
}

# require_node_clients <dir> [package...]: exits 1 unless node and the npm clients of <dir>
# (openai, ws, and any packages named) are installed.
require_node_clients() {
  require_tools node
  local dir=$1 pkg
  shift
  for pkg in openai ws "$@"; do
    [[ -d "$dir/node_modules/$pkg" ]] || {
      echo "FAIL: the npm package $pkg is missing in $dir (./scripts/setup.sh runs npm install)"
      exit 1
    }
  done
}

# small_random_model <dir>: a 2-layer random Llama with the Llama-2 vocabulary (32,000 tokens)
# and a 2048-token context, whose free output is noise: what the structured-output and
# tool-call scripts constrain.
small_random_model() {
  /usr/bin/python3 "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" --dim 64 --layers 2 \
    --heads 4 --kv-heads 2 --hidden 172 --vocab 32000 --max-pos 2048 --out "$1" >/dev/null
}

# slow_random_model <dir>: a 6-layer random Llama (10.6M float32 parameters, the stories260K
# tokenizer) whose 400-token streams last a good part of a second even on a fast CPU: what
# the scripts serve that must catch requests in flight (stories260K, at thousands of tokens
# a second there, finishes them before a drain or a kill can land).
slow_random_model() {
  /usr/bin/python3 "$ACTORLLM_SOURCE_DIR/scripts/make_random_model.py" --dim 384 --layers 6 \
    --heads 6 --kv-heads 6 --hidden 1024 --vocab 512 --max-pos 1024 --out "$1" >/dev/null
}

# A TCP port nobody listens on now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# check <description> <command...>: prints ok/FAIL and counts failures.
failures=0
check() {
  local what=$1; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; failures=$((failures + 1)); fi
}

# Background processes appended to `pids` and the folder `work` go away on exit.
pids=()
work=$(mktemp -d)
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

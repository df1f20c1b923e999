#!/usr/bin/env bash
# Decode tok/s of a ~100M-class random model of each family at concurrency 1 and 32, against
# a Llama of the same size in the same run, and the experts' share of an MoE decode step
# (build/bench/family_bench; bench/README.md, "Model families").
#
#   bench/families.sh                     # every family
#   ARCHS="llama qwen3 mixtral" bench/families.sh
#
# Makes the models into models-random/family-<arch>/ when missing (scripts/make_random_model.py,
# float32), then runs family_bench over all of them and writes $RESULTS/families.json
# (RESULTS defaults to bench/results) and its output beside it as families.txt.
#
# Shapes: every model has the Llama-110M layout of llama2.c's TinyStories (dim 768, 12 layers,
# 12 heads of 64, 12 KV heads, vocab 32000 with the Llama-2 tokenizer, embeddings tied to the
# LM head) and differs only in what its family sets apart:
#   dense (llama, mistral, qwen2, qwen3, phi3, gemma2, gemma3): MLP width 2048;
#   mistral, gemma2, gemma3: windows of $WINDOW tokens (default 32), so that they act within
#     the 16 + 64-token sequences; gemma2 windows every other layer, gemma3 five layers in six;
#   mixtral, qwen3_moe: 8 experts of width 1024, top 2;
#   qwen2_moe: 8 experts of width 512, top 2, and a shared expert of width 1024;
# so that each MoE token's ACTIVE MLP width is 2048, the dense models' (about 110M active
# parameters; 280M in all for mixtral and qwen3_moe, 195M for qwen2_moe).
# Settings: PROMPT_LEN (16), DECODE_TOKENS (64), ROUNDS (2), CONCURRENCY (32), THREADS (0: all),
# FAMILY_BENCH (the binary, default build/bench/family_bench).
# About 9 minutes on 2 cores once the models exist (making them takes 1 - 2 minutes more).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
RESULTS=${RESULTS:-bench/results}
ARCHS=${ARCHS:-"llama mistral qwen2 qwen3 phi3 gemma2 gemma3 mixtral qwen2_moe qwen3_moe"}
WINDOW=${WINDOW:-32}
PYTHON=${PYTHON:-/usr/bin/python3}
mkdir -p "$RESULTS" models-random

common=(--dim 768 --layers 12 --heads 12 --kv-heads 12 --head-dim 64 --vocab 32000 --max-pos 1024
        --tie-word-embeddings true)
shape_args() {  # the make_random_model.py flags of one family
  case "$1" in
    llama) echo "--shape 110M" ;;
    mistral) echo "${common[*]} --hidden 2048 --sliding-window $WINDOW" ;;
    qwen2 | qwen3 | phi3) echo "${common[*]} --hidden 2048" ;;
    gemma2) echo "${common[*]} --hidden 2048 --sliding-window $WINDOW --query-pre-attn-scalar 64" \
                 "--attn-logit-softcapping 50 --final-logit-softcapping 30" ;;
    gemma3) echo "${common[*]} --hidden 2048 --sliding-window $WINDOW --sliding-window-pattern 6" \
                 "--query-pre-attn-scalar 64" ;;
    mixtral) echo "${common[*]} --hidden 1024 --experts 8 --experts-per-tok 2" ;;
    qwen3_moe) echo "${common[*]} --hidden 2048 --experts 8 --experts-per-tok 2 --moe-hidden 1024" ;;
    qwen2_moe) echo "${common[*]} --hidden 2048 --experts 8 --experts-per-tok 2 --moe-hidden 512" \
                    "--shared-hidden 1024 --mlp-only-layers=" ;;
    *) echo "families.sh: unknown arch $1" >&2; exit 2 ;;
  esac
}

models=()
for arch in llama $(printf '%s\n' $ARCHS | grep -vx llama); do  # the baseline always, first
  dir=models-random/family-$arch
  if [ ! -f "$dir/config.json" ] || [ ! -f "$dir/model.safetensors" ]; then
    echo "### making $dir"
    # shellcheck disable=SC2046  # the flags are words
    "$PYTHON" scripts/make_random_model.py --arch "$arch" $(shape_args "$arch") --out "$dir"
  fi
  models+=("$dir")
done

bench_bin=${FAMILY_BENCH:-build/bench/family_bench}
if [ ! -x "$bench_bin" ]; then
  echo "families.sh: $bench_bin missing (cmake --build build --target family_bench)" >&2
  exit 1
fi
echo "### family_bench over ${#models[@]} models (baseline models-random/family-llama)"
"$bench_bin" --baseline models-random/family-llama \
  --prompt-len "${PROMPT_LEN:-16}" --decode-tokens "${DECODE_TOKENS:-64}" \
  --concurrency "${CONCURRENCY:-32}" --rounds "${ROUNDS:-2}" --threads "${THREADS:-0}" \
  --out "$RESULTS/families.json" "${models[@]}" 2>&1 | tee "$RESULTS/families.txt"
echo "### wrote $RESULTS/families.json (commit $(git rev-parse --short HEAD))"

#!/usr/bin/env bash
# The whole device run in one command, on a GPU machine without the server's packages, from a
# checkout carrying .gpu-data/bundle.tar.xz (scripts/gpu-bundle.sh, built here for sm_90):
# unpacks the bundle, finds CUDA's libraries in the machine's image (the toolkit's or the
# Python wheels'), runs scripts/gpu-check.sh on the prebuilt binaries under an overall limit,
# and leaves the console and the logs' archive in $OUT (or .gpu-data/out).
#
#   device: run(command="./scripts/gpu-device-run.sh", carry=[".gpu-data/bundle.tar.xz"],
#               timeout_s=600)
#   LIMIT=550 (seconds for gpu-check as a whole)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=${OUT:-.gpu-data/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
tar xJf .gpu-data/bundle.tar.xz -C .gpu-data || exit 1
cuda_libs=$(find /usr/local /opt /usr/lib \( -name 'libcublasLt.so.13' -o -name 'libnccl.so.2' \
              -o -name 'libcudart.so.13' \) 2>/dev/null | xargs -r -n1 dirname | sort -u | paste -sd:)
echo "CUDA libraries from: ${cuda_libs:-nowhere}"
export LD_LIBRARY_PATH=${cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=/usr/local/cuda/bin:$PATH
GPU_CHECK_MODE=prebuilt BIN_DIR=.gpu-data/bin BUILD_DIR=.gpu-data/check \
  GOLDEN_MODEL_DIR=.gpu-data/shared/models/stories260K \
  timeout "${LIMIT:-550}" ./scripts/gpu-check.sh >"$out/console.log" 2>&1
rc=$?
tar czf "$out/logs.tgz" -C .gpu-data/check gpu-check
tail -80 "$out/console.log"
echo "gpu-device-run: gpu-check exited $rc"
exit "$rc"

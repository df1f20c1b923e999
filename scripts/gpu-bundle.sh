#!/usr/bin/env bash
# Lays out what scripts/gpu-check.sh needs on a GPU machine that has CUDA but none of the
# server's packages (no package registry there): the full project's binaries from BUILD_DIR
# (built here for the device's architecture, e.g. CUDA_ARCH 90 with ACTORLLM_NATIVE=OFF),
# stripped, in the build folder's layout, with every shared library they load that is neither
# the C/C++ runtime nor CUDA's (the device has those) in lib/; and the stories260K model. The
# folders are ignored by git; .gpu-data/bundle.tar.xz, both compressed (about 23 MB: OpenBLAS
# and ICU's data are most of it), is what travels with the checkout (the device tool's carry):
#
#   BUILD_DIR=build-gpu ./scripts/gpu-bundle.sh    -> .gpu-data/{bin,shared}, .gpu-data/bundle.tar.xz
#   there: tar xJf .gpu-data/bundle.tar.xz -C .gpu-data
#          GPU_CHECK_MODE=prebuilt BIN_DIR=.gpu-data/bin \
#          GOLDEN_MODEL_DIR=.gpu-data/shared/models/stories260K ./scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-gpu}
out=.gpu-data/bin
shared=${ACTORLLM_SHARED_DIR:-../shared}
binaries=(tests/cuda_tests tests/actors_tests bench/cuda_kernels_bench bench/serve_bench
          actorllm bin/cuda_golden bin/cuda_logits)

rm -rf "$out" && mkdir -p "$out/lib"
for b in "${binaries[@]}"; do
  [[ -x $build_dir/$b ]] || { echo "gpu-bundle: $build_dir/$b is missing (build it first)" >&2; exit 1; }
  mkdir -p "$out/$(dirname "$b")"
  strip -o "$out/$b" "$build_dir/$b"
done
# The C/C++ runtime and CUDA's libraries (and the driver's) come from the device's own image.
provided='^(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux-x86-64|linux-vdso|libcuda|libcudart|libcublas|libcublasLt|libnccl)\.so'
for b in "${binaries[@]}"; do
  ldd "$build_dir/$b" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $provided ]] && continue
  cp -L "$path" "$out/lib/$name"
done
rm -rf .gpu-data/shared && mkdir -p .gpu-data/shared/models/stories260K
cp "$shared"/models/stories260K/*.json "$shared"/models/stories260K/model.safetensors \
  .gpu-data/shared/models/stories260K/
tar cJf .gpu-data/bundle.tar.xz -C .gpu-data bin shared
du -sh "$out" .gpu-data/shared .gpu-data/bundle.tar.xz

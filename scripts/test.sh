#!/usr/bin/env bash
# Builds (incrementally) and runs the whole test suite with ctest. GPU tests (label gpu) are
# reported as skipped on machines without a CUDA device; end-to-end tests start real servers
# on 127.0.0.1 and real clients (curl, the openai npm package, a WebSocket client, Prometheus).
#
#   ./scripts/test.sh                 everything
#   ./scripts/test.sh -L cores        one label (config, kernels, model, cores, actors, api, net,
#                                     monitoring, gpu, e2e)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
export PATH="/usr/local/cuda/bin:$PATH"
if [[ ! -f "$build_dir/build.ninja" ]]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
fi
cmake --build "$build_dir" -j "$(nproc)"
# The structure: no folder cycles, every library links exactly what it includes.
python3 scripts/check_layering.py "$build_dir"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 600 "$@"

#!/usr/bin/env bash
# Installs every dependency from Debian's packages (idempotent), then configures
# and builds actorllm with CMake + Ninja in Release into ./build.
#
#   ./scripts/setup.sh              install + build
#   ./scripts/setup.sh --deps-only  install only
#   BUILD_DIR=... CMAKE_ARGS=...    override the build folder / extra CMake flags
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git curl
  libcaf-dev libboost1.81-dev nlohmann-json3-dev prometheus-cpp-dev libssl-dev openssl
  libgtest-dev libgmock-dev libopenblas-openmp-dev libbenchmark-dev libpcre2-dev libicu-dev
  python3 python3-jinja2 python3-numpy python3-matplotlib python3-jsonschema ccache
  wrk prometheus chromium
  libpng-dev libjpeg-dev libwebp-dev libgif-dev python3-pil
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Test-only JavaScript clients (the official openai SDK, a WebSocket client, puppeteer-core
# driving chromium for the web playground). Node.js and npm come with the machine image; when
# absent, Debian's nodejs is added. npm runs again when package.json changed since it last did.
command -v npm >/dev/null || { sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"; $sudo_cmd apt-get install -y -qq nodejs npm >/dev/null; }
if [[ -f tests/e2e/package.json && ( ! -d tests/e2e/node_modules ||
      tests/e2e/package.json -nt tests/e2e/node_modules/.package-lock.json ) ]]; then
  # The end-to-end tests need these clients and fail without them, so CI stops here.
  if ! (cd tests/e2e && npm install --no-audit --no-fund --loglevel=error); then
    echo "setup: npm install in tests/e2e failed; the end-to-end client tests will fail"
    [[ "${CI:-}" == true ]] && exit 1
  fi
fi

[[ "${1:-}" == "--deps-only" ]] && exit 0

build_dir="${BUILD_DIR:-build}"
export PATH="/usr/local/cuda/bin:$PATH"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${CMAKE_ARGS:-}
cmake --build "$build_dir" -j "$(nproc)"

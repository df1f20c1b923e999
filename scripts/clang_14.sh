# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: ensure_clang_14 installs clang-14 and its
# runtimes (compiler-rt for the sanitizers and libFuzzer, libomp for OpenMP) from Debian's
# packages when they are missing.
ensure_clang_14() {
  local need=() p
  for p in clang-14 libclang-rt-14-dev libomp-14-dev; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  ((${#need[@]})) || return 0
  echo "installing ${need[*]}"
  local sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
    "${need[@]}" >/dev/null
}

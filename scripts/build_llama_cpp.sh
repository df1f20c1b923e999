#!/usr/bin/env bash
# Builds llama.cpp's CPU tools (llama-server, llama-quantize, llama-batched-bench), the peer of
# bench/llama_served_peer.sh and bench/llama_cpp_peer.sh, from a snapshot of its repository,
# outside this repository: nothing of llama.cpp is ever part of ours.
#
#   scripts/build_llama_cpp.sh SNAPSHOT_GIT_DIR [OUT_DIR]
#
# SNAPSHOT_GIT_DIR: a llama.cpp git directory (a bare one will do: its HEAD is exported, no
# work tree is needed). OUT_DIR (default ~/llama.cpp-build, refused inside this
# repository): OUT_DIR/src holds the sources of that commit (exported again when HEAD
# changes), OUT_DIR/build the CMake tree, OUT_DIR/bin the three tools, static, so the folder
# can be copied as it is. The build is Release with -DGGML_NATIVE=ON (this CPU's ISA) and no
# libcurl, two jobs, under the project's build lock (/tmp/actorllm-build.lock), which other
# builds on this machine take too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if (($# < 1)); then
  sed -n 2,14p "$0" >&2
  exit 2
fi
snapshot=$1
out=$(realpath -m "${2:-$HOME/llama.cpp-build}")
case "$out/" in
  "$root"/*)
    echo "build_llama_cpp: $out is inside $root; build llama.cpp outside the repository" >&2
    exit 2
    ;;
esac
mkdir -p "$out"
commit=$(git --git-dir="$snapshot" rev-parse HEAD)
tools=(llama-server llama-quantize llama-batched-bench)
lock=/tmp/actorllm-build.lock

# Writes HEAD's files to $out/src. A fetched snapshot may lack the blobs of its largest files
# (test vocabularies under models/, which no tool needs); git archive stops at the first
# missing blob, so the tree goes through a temporary index with those paths removed.
export_sources() {
  local git=(git --git-dir="$snapshot") index="$out/src.index" missing absent
  missing=$("${git[@]}" ls-tree -r HEAD | awk '$2 == "blob" {print $3}' |
    "${git[@]}" cat-file --batch-check | awk '$2 == "missing" {print $1}')
  rm -rf "$out/src" "$out/build" "$index"
  mkdir -p "$out/src"
  export GIT_INDEX_FILE=$index
  "${git[@]}" read-tree HEAD
  if [[ -n "$missing" ]]; then
    mapfile -t absent < <("${git[@]}" ls-tree -r HEAD | grep -F "$missing" | cut -f2)
    echo "build_llama_cpp: not in the snapshot, left out: ${absent[*]}"
    "${git[@]}" rm --cached -q -- "${absent[@]}"
  fi
  "${git[@]}" checkout-index -a --prefix="$out/src/"
  unset GIT_INDEX_FILE
  rm -f "$index"
  echo "$commit" >"$out/src/.commit"
}

if [[ "$(cat "$out/src/.commit" 2>/dev/null)" != "$commit" ]]; then
  echo "build_llama_cpp: exporting llama.cpp ${commit:0:9} to $out/src"
  export_sources
fi

flock "$lock" cmake -S "$out/src" -B "$out/build" -DCMAKE_BUILD_TYPE=Release \
  -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF >"$out/configure.log" 2>&1 ||
  { tail -n 30 "$out/configure.log" >&2; exit 1; }
flock "$lock" cmake --build "$out/build" --target "${tools[@]}" -j2

mkdir -p "$out/bin"
for tool in "${tools[@]}"; do
  install -m 755 "$out/build/bin/$tool" "$out/bin/$tool"
done
echo "$commit" >"$out/bin/llama_cpp_commit"
echo "llama.cpp ${commit:0:9}: ${tools[*]} in $out/bin"
echo "  LLAMA_CPP_BIN=$out/bin bench/llama_served_peer.sh MODEL_DIR"

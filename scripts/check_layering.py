#!/usr/bin/env python3
"""Checks the folder structure against the build.

  scripts/check_layering.py BUILD_DIR

1. Layers: the top-level folders stand in LAYERS, lowest first, and a file includes headers
   only of its own top-level folder or of a lower layer (kernels never model or actors, fuzz
   never tests); a folder with sources outside LAYERS fails too.
2. No cycles: every folder of the tree is a node, and folder A -> folder B when a file of A
   includes a header of B ("model/llama_model.hpp"). A cycle (A includes B, B includes A,
   directly or through others) is reported with one include per edge, and fails the check.
3. Exact links: each product target (the actorllm_* libraries and the actorllm program)
   links directly exactly the libraries whose headers its own files include: no missing link
   that works only because another library happens to bring it, and no link it does not use.
   The same holds for the external libraries this project names (CAF, Boost, nlohmann_json,
   prometheus-cpp, ICU, PCRE2, CUDA, OpenMP).

Which files make which target comes from BUILD_DIR/compile_commands.json; a header belongs to
the target that compiles the .cpp of its name, else to the target that compiles most of its
folder, else (a header-only folder) to actorllm_<folder>. The direct links come from
`cmake --graphviz`, which this script runs on BUILD_DIR. Exit status: 0 when all three hold, 1
otherwise, 2 on bad usage.
"""
import collections
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = re.compile(r"\.(cpp|hpp|cu|cuh|h)$")
SKIPPED_DIRS = {".git", "node_modules", "fallback"}
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
ANGLED = re.compile(r"^\s*#\s*include\s*<([^>]+)>", re.M)

# <header prefix> -> the imported target that provides it.
EXTERNAL = [
    ("caf/io/", "CAF::io"),
    ("caf/", "CAF::core"),
    ("boost/", "Boost::headers"),
    ("nlohmann/", "nlohmann_json::nlohmann_json"),
    ("prometheus/", "prometheus-cpp::core"),
    ("unicode/", "ICU::uc"),
    ("pcre2.h", "PkgConfig::PCRE2"),
    ("cublasLt.h", "CUDA::cublasLt"),
    ("cublas_v2.h", "CUDA::cublas"),
    ("cuda_runtime", "CUDA::cudart"),
    ("cuda_fp16.h", "CUDA::cudart"),
    ("cuda_bf16.h", "CUDA::cudart"),
    ("omp.h", "OpenMP::OpenMP_CXX"),
]
CHECKED_EXTERNALS = {target for _, target in EXTERNAL}

# The top-level folders, lowest layer first; folders of one layer include none of each other.
LAYERS = [
    ["common", "text"],
    ["kernels", "tokenizer", "tool_calls", "media"],
    ["model", "config", "chat_template", "grammar", "monitoring", "testing"],
    ["api"],
    ["actors", "net"],
    ["app"],
    ["bench", "examples", "tools"],
    ["tests", "fuzz"],
]
LAYER_OF = {folder: rank for rank, folders in enumerate(LAYERS) for folder in folders}


def source_files():
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs
                   if d not in SKIPPED_DIRS and not d.startswith("build") and d != ".gpu-data"]
        for name in files:
            if SOURCE.search(name):
                yield os.path.relpath(os.path.join(folder, name), ROOT)


def read_includes(path):
    with open(os.path.join(ROOT, path), errors="replace") as f:
        text = f.read()
    quoted = [h for h in QUOTED.findall(text) if os.path.isfile(os.path.join(ROOT, h))]
    return quoted, ANGLED.findall(text)


def check_layers(files, includes):
    """Every include between top-level folders runs from a higher layer to a lower one."""
    ok = True
    for folder in sorted({p.split("/")[0] for p in files if "/" in p} - set(LAYER_OF)):
        print(f"layers: top-level folder {folder}/ has sources but no place in LAYERS")
        ok = False
    reported = set()
    for path in files:
        if "/" not in path or path.split("/")[0] not in LAYER_OF:
            continue
        src = path.split("/")[0]
        for header in includes[path][0]:
            dst = header.split("/")[0]
            if dst == src or dst not in LAYER_OF or LAYER_OF[dst] < LAYER_OF[src]:
                continue
            if (src, dst) not in reported:
                reported.add((src, dst))
                print(f"layers: {src}/ (layer {LAYER_OF[src]}) includes {dst}/ (layer "
                      f"{LAYER_OF[dst]}): {path} includes {header}")
            ok = False
    return ok


def find_cycles(edges):
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, {}):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def check_cycles(files, includes):
    edges = collections.defaultdict(dict)
    for path in files:
        src = os.path.dirname(path)
        for header in includes[path][0]:
            dst = os.path.dirname(header)
            if dst != src:
                edges[src].setdefault(dst, f"{path} includes {header}")
    cycles = find_cycles(edges)
    for component in cycles:
        print(f"cycle between folders {', '.join(component)}:")
        members = set(component)
        for src in component:
            for dst, example in sorted(edges[src].items()):
                if dst in members:
                    print(f"  {src} -> {dst}  ({example})")
    return not cycles


def target_of_objects(build_dir):
    """file (relative to the root) -> target, from the object paths in compile commands."""
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        commands = json.load(f)
    owner = {}
    for entry in commands:
        match = re.search(r"CMakeFiles/([^/ ]+)\.dir/", entry.get("output", entry["command"]))
        if not match:
            continue
        for source in unity_members(entry["file"]):
            path = os.path.relpath(source, ROOT)
            if not path.startswith(".."):
                owner[path] = match.group(1)
    return owner


def unity_members(compiled_file):
    """The sources one compile command builds: a unity batch's (CMake's unity_*_cxx.cxx
    includes each by its absolute path), else the file itself."""
    if not re.search(r"/Unity/unity_[^/]*\.cxx$", compiled_file):
        return [compiled_file]
    with open(compiled_file) as f:
        return QUOTED.findall(f.read())


def direct_links(build_dir):
    """target -> the targets it links directly, from cmake --graphviz."""
    dot = os.path.join(build_dir, "layering.dot")
    subprocess.run(["cmake", f"--graphviz={dot}", build_dir], check=True,
                   stdout=subprocess.DEVNULL)
    links = collections.defaultdict(set)
    with open(dot) as f:
        for line in f:
            match = re.search(r"//\s*(\S+)\s*->\s*(\S+)\s*$", line)
            if match:
                links[match.group(1)].add(match.group(2))
    return links


def header_owners(files, compiled):
    by_folder = collections.defaultdict(collections.Counter)
    for path, target in compiled.items():
        by_folder[os.path.dirname(path)][target] += 1
    owner = dict(compiled)
    for path in files:
        if path in owner:
            continue
        stem = os.path.splitext(path)[0]
        sibling = next((owner[stem + ext] for ext in (".cpp", ".cu") if stem + ext in owner), None)
        folder = os.path.dirname(path)
        if sibling:
            owner[path] = sibling
        elif by_folder[folder]:
            owner[path] = by_folder[folder].most_common(1)[0][0]
        else:
            owner[path] = "actorllm_" + folder.replace("/", "_")
    return owner


def check_links(files, includes, build_dir):
    compiled = target_of_objects(build_dir)
    owner = header_owners(files, compiled)
    links = direct_links(build_dir)
    every_target = set(compiled.values()) | set(links) | {t for ts in links.values() for t in ts}
    product = {t for t in every_target if t.startswith("actorllm_") or t == "actorllm"}
    ok = True
    for target in sorted(product):
        own_files = [p for p in files if owner.get(p) == target]
        needs, why = set(), {}
        for path in own_files:
            quoted, angled = includes[path]
            for header in quoted:
                dep = owner.get(header)
                if dep and dep != target:
                    needs.add(dep)
                    why.setdefault(dep, f"{path} includes {header}")
            for header in angled:
                for prefix, dep in EXTERNAL:
                    if header.startswith(prefix):
                        needs.add(dep)
                        why.setdefault(dep, f"{path} includes <{header}>")
                        break
        linked = {t for t in links.get(target, set()) if t in product or t in CHECKED_EXTERNALS}
        for dep in sorted(needs - linked):
            ok = False
            print(f"{target}: does not link {dep}, but {why[dep]}")
        for dep in sorted(linked - needs):
            ok = False
            print(f"{target}: links {dep}, whose headers none of its files include")
    return ok


def main():
    if len(sys.argv) != 2 or not os.path.isfile(os.path.join(sys.argv[1], "compile_commands.json")):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        print("BUILD_DIR must be a configured build folder (compile_commands.json)", file=sys.stderr)
        return 2
    files = sorted(source_files())
    includes = {path: read_includes(path) for path in files}
    layered = check_layers(files, includes)
    acyclic = check_cycles(files, includes)
    exact = check_links(files, includes, os.path.abspath(sys.argv[1]))
    if layered and acyclic and exact:
        print("layering: every include runs down the layers, no folder cycles; every product "
              "target links exactly what it includes")
        return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())

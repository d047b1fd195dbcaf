#!/usr/bin/env bash
# tests/gpu/run_real_torch.sh: python/tests/test_real_torch.py (galloc as the
# real PyTorch's allocator on a real GPU: use(), out of memory, sleep and wake)
# on a machine that has torch >= 2 and a GPU but no Bazel, from libraries built
# elsewhere. Without torch >= 2 or a GPU the cases skip, saying why, and the
# script exits 0 (GALLOC_REQUIRE_GPU=1 makes a skip fail).
#
# 1. Here, on the build machine, from the repository root:
#      tests/gpu/run_real_torch.sh --prepare DIR
#    runs `./bazelw build --config=opt //:python_lib` and fills DIR with
#      DIR/galloc/               the Python package: python/galloc/*.py and
#                                _torch_oom.cpp, with its libraries in
#                                DIR/galloc/_lib/: libgalloc.so
#                                (bazel-bin/packaging/), libgalloc_torch.so
#                                (bazel-bin/torch_plugin/), libgalloc_tools.so
#                                (bazel-bin/tools/lib/)
#      DIR/deps/                 the libraries libgalloc.so and
#                                libgalloc_torch.so need beyond glibc and
#                                libstdc++ (libunwind, libdw and theirs, as
#                                ldd lists them), for a machine without them
#      DIR/MANIFEST              the commit and sha256 of every file
#    By hand it is the same copies (mkdir -p DIR/galloc/_lib; cp
#    python/galloc/*.py python/galloc/_torch_oom.cpp DIR/galloc/; cp the
#    three .so files to DIR/galloc/_lib/).
# 2. Take the repository's python/tests and DIR to the GPU machine (with the
#    device `run` tool: prepare DIR inside the working tree, untracked, so it
#    travels with it), and there, from the repository root:
#      tests/gpu/run_real_torch.sh DIR [OUT.xml]
#    It puts DIR first on PYTHONPATH (so `import galloc` is DIR's copy; no
#    pip, no venv: the python3 on PATH, or $PYTHON, must import torch), links
#    the DIR/deps libraries that ldd reports missing, and no others, into
#    LD_LIBRARY_PATH, prints torch's version and GPU, and runs the cases
#    verbosely with python/tests/run.py (JUnit XML to OUT.xml, default
#    DIR/real_torch.xml). The sleep case prints mem_get_info's figures.
set -euo pipefail
abspath() { mkdir -p "$1" && (cd "$1" && pwd); }  # DIR as given, from the caller's directory
repo=$(cd "$(dirname "$0")/../.." && pwd)

if [ "${1:-}" = "--prepare" ]; then
    dir=$(abspath "${2:?usage: tests/gpu/run_real_torch.sh --prepare DIR}")
    cd "$repo"
    ./bazelw build --config=opt //:python_lib
    rm -rf "$dir/galloc" "$dir/deps"
    mkdir -p "$dir/galloc/_lib" "$dir/deps"
    cp python/galloc/*.py python/galloc/_torch_oom.cpp "$dir/galloc/"
    cp bazel-bin/packaging/libgalloc.so bazel-bin/torch_plugin/libgalloc_torch.so bazel-bin/tools/lib/libgalloc_tools.so \
        "$dir/galloc/_lib/"
    chmod u+w "$dir"/galloc/_lib/*.so
    # The non-glibc, non-C++-runtime libraries the two the cases load need,
    # resolved here (libgalloc_tools.so, for galloc.replay and its charts,
    # is not loaded by them).
    ldd "$dir"/galloc/_lib/libgalloc.so "$dir"/galloc/_lib/libgalloc_torch.so | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
        { grep -v -E '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^ ]*)\.so' || true; } |
        while read -r name path; do cp -L "$path" "$dir/deps/$name"; done
    (echo "commit $(git rev-parse HEAD)$(git diff --quiet HEAD -- || echo ' (with uncommitted changes)')"
        cd "$dir" && find galloc deps -type f | sort | xargs sha256sum) >"$dir/MANIFEST"
    echo "prepared $dir:"
    cat "$dir/MANIFEST"
    exit 0
fi

dir="${1:?usage: tests/gpu/run_real_torch.sh DIR [OUT.xml]   (or --prepare DIR, on the build machine)}"
[ -d "$dir" ] || { echo "$dir: no such directory (--prepare it first)" >&2; exit 2; }
dir=$(abspath "$dir")
out="${2:-$dir/real_torch.xml}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
python="${PYTHON:-python3}"
cd "$repo"
[ -f "$dir/galloc/_lib/libgalloc_torch.so" ] || { echo "$dir/galloc/_lib/libgalloc_torch.so: missing (--prepare)" >&2; exit 2; }
[ -f "$dir/MANIFEST" ] && head -1 "$dir/MANIFEST"

# Only the libraries this machine lacks come from DIR/deps: the others stay
# the system's, which torch and python load too.
missing=$(ldd "$dir"/galloc/_lib/libgalloc.so "$dir"/galloc/_lib/libgalloc_torch.so | awk '$2 == "=>" && $3 == "not" {print $1}' | sort -u)
if [ -n "$missing" ]; then
    links=$(mktemp -d)
    trap 'rm -rf "$links"' EXIT
    for name in $missing; do
        [ -f "$dir/deps/$name" ] || { echo "$name: not on this machine and not in $dir/deps" >&2; exit 2; }
        ln -s "$dir/deps/$name" "$links/$name"
    done
    echo "from $dir/deps: $(echo $missing)"
    export LD_LIBRARY_PATH="$links${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}"

"$python" - <<'PY'
import galloc, sys
print("python", sys.version.split()[0], "| galloc", galloc.__file__)
try:
    import torch
except ImportError as e:
    print("torch: not importable:", e)
else:
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    print("torch", torch.__version__, "| cuda", torch.version.cuda, "| hip", torch.version.hip, "|", gpu)
PY

status=0
"$python" python/tests/run.py "$out" test_real_torch.py || status=$?
skipped=$("$python" -c "import sys, xml.etree.ElementTree as ET; print(sum(1 for _ in ET.parse(sys.argv[1]).iter('skipped')))" "$out")
echo "run_real_torch: exit $status, $skipped skipped, JUnit XML in $out"
if [ "$status" -eq 0 ] && [ "$skipped" -gt 0 ] && [ "${GALLOC_REQUIRE_GPU:-0}" = 1 ]; then
    echo "run_real_torch: GALLOC_REQUIRE_GPU=1 and $skipped case(s) skipped" >&2
    status=1
fi
exit "$status"

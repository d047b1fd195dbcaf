#!/usr/bin/env bash
# tests/gpu/prepare.sh DIR: build what tests/gpu/device_check.sh runs and copy
# it into DIR (bin/: the gpu-tagged test binaries; syslib/: Debian libraries
# they link; py/: the Python package, by run_real_torch.sh --prepare). The
# binaries load the driver with dlopen, so they run on any x86-64 Linux with
# an NVIDIA driver and glibc >= this machine's.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:?artifact directory}
# Every test tagged gpu (device_check.sh runs each bin/*_test), found by query
# so that a new gpu-tagged target is carried without editing this script.
mapfile -t gpu_tests < <(./bazelw query 'attr(tags, "\bgpu\b", tests(//...))' 2>/dev/null)
[ ${#gpu_tests[@]} -gt 0 ] || { echo "no gpu-tagged test found" >&2; exit 1; }
./bazelw build "${gpu_tests[@]}" >&2
rm -rf "$dir" && mkdir -p "$dir/bin"
for t in "${gpu_tests[@]}"; do # //tests/backend:cuda_gpu_test -> bazel-bin/tests/backend/cuda_gpu_test
    p=${t#//}
    cp "bazel-bin/${p/://}" "$dir/bin/"
done
tests/gpu/run_real_torch.sh --prepare "$dir/py" >&2
# The pairs benchmark (bench/pairs.cc, optimized): the per-stream locking thread rows on
# a machine whose cores are free; it links Debian's libbenchmark.
./bazelw build -c opt --config=opt //bench:galloc_pairs >&2
mkdir -p "$dir/bench"
cp "$(./bazelw info -c opt --config=opt bazel-bin 2>/dev/null)/bench/galloc_pairs" "$dir/bench/"
# Debian's libraries galloc's stack capture links (libunwind, libdw), which a
# GPU image may lack; device_check.sh puts them last on the library path.
mkdir -p "$dir/syslib"
for l in libunwind.so.8 libdw.so.1 libelf.so.1 libbz2.so.1.0 liblzma.so.5 libbenchmark.so.1debian; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$dir/syslib/"
done
chmod -R u+w "$dir"
du -sh "$dir" >&2

#!/usr/bin/env bash
# tests/gpu/prepare.sh DIR: build what tests/gpu/device_check.sh runs and copy
# it into DIR (bin/: the gpu-tagged test binaries; bench/: the pairs and
# sleep benchmarks; tools/: the galloc command; syslib/: Debian libraries
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
# a machine whose cores are free; and the sleep benchmark (bench/sleep.cc) on
# the real driver. Both link Debian's libbenchmark.
./bazelw build -c opt --config=opt //bench:galloc_pairs //bench:galloc_sleep >&2
mkdir -p "$dir/bench"
cp "$(./bazelw info -c opt --config=opt bazel-bin 2>/dev/null)"/bench/galloc_{pairs,sleep} "$dir/bench/"
# The galloc command (optimized), for the matrix's plan step (matrix.sh).
./bazelw build -c opt --config=opt //tools:galloc >&2
mkdir -p "$dir/tools"
cp "$(./bazelw info -c opt --config=opt bazel-bin 2>/dev/null)/tools/galloc" "$dir/tools/"
# The Debian libraries these binaries link beyond glibc and the C++ runtime
# (libunwind, libdw, libbenchmark, cairo's for galloc's plots), which a GPU
# image may lack; device_check.sh puts them last on the library path.
mkdir -p "$dir/syslib"
ldd "$dir"/bin/* "$dir"/bench/* "$dir"/tools/* | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
    { grep -v -E '^(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^ ]*)\.so' || true; } |
    while read -r name path; do cp -L "$path" "$dir/syslib/$name"; done
chmod -R u+w "$dir"
du -sh "$dir" >&2

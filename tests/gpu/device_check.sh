#!/usr/bin/env bash
# tests/gpu/device_check.sh: the checks that need a real GPU, in one short run.
# CI has no GPU; a developer with one (or the lead's lent GPU machine) runs:
#
#   tests/gpu/prepare.sh .gpu                 # here: build and collect the artifacts
#   bash tests/gpu/device_check.sh .gpu OUT   # there: run them, logs and records into OUT
#                                             # (CAPTURE=0: skip recording snapshots)
#
# It runs the gpu-tagged GoogleTest binaries, the real-torch Python tests
# (run_real_torch.sh, on the prebuilt package), and records real
# PyTorch snapshots (tests/gpu/capture_torch_snapshot.py) under three configs.
set -uo pipefail
art=${1:?artifact directory}
out=${2:?output directory}
mkdir -p "$out"
status=0
# Debian's libunwind and libdw, for a GPU image without them: after the system's own.
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/lib/x86_64-linux-gnu:$(realpath "$art")/syslib"
log=$out/device_check.log
run() { # name command...: run it, its output into one log (and its tail shown), keep going
    local name=$1; shift
    echo "== $name: $*" | tee -a "$log"
    local t0=$SECONDS rc=0
    "$@" >"$out/.part" 2>&1 || rc=$?
    cat "$out/.part" >>"$log"
    tail -n 25 "$out/.part"; rm -f "$out/.part"
    if [ $rc -eq 0 ]; then echo "   ok ($((SECONDS - t0)) s)" | tee -a "$log"; else echo "   FAILED ($rc)" | tee -a "$log"; status=1; fi
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
ldd "$art"/bin/*_test | grep "not found"
for t in "$art"/bin/*_test; do
    [ -x "$t" ] && run "$(basename "$t")" "$t" --gtest_brief=0
done
# The per-stream locking thread rows where the cores are free: one allocator shared by
# threads on their own streams, beside an allocator per thread (the ceiling).
if [ -x "$art/bench/galloc_pairs" ]; then
    run pairs_threads "$art/bench/galloc_pairs" \
        --benchmark_filter='^(own_streams|own_allocators)/(fixed_4KiB|small_mix)/real_time/threads:[12]$' \
        --benchmark_min_time=0.3 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
fi
if [ -d "$art/py" ]; then
    run real_torch tests/gpu/run_real_torch.sh "$art/py" "$out/real_torch.xml"
fi
# Whole runs (-1: recorded from before the first allocation), capped at 5 % of
# the device so an OOM ends each: PyTorch's defaults, expandable segments,
# and a mix of the other settings.
cap() { # name conf
    PYTORCH_CUDA_ALLOC_CONF=$2 run "snapshot_$1" python3 tests/gpu/capture_torch_snapshot.py "$out" \
        --start-step -1 --fraction 0.05 --name "torch211_h200_full_$1"
}
if [ "${CAPTURE:-1}" = 1 ]; then # CAPTURE=0: the tests only
    cap default ""
    cap expandable "expandable_segments:True"
    cap mixed "max_split_size_mb:64,garbage_collection_threshold:0.6,roundup_power2_divisions:4"
fi
exit $status

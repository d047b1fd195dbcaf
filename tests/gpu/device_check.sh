#!/usr/bin/env bash
# tests/gpu/device_check.sh: the checks that need a real GPU, in one run of
# under 10 minutes on an H200 (CI has no GPU). A developer with one, or the
# lent GPU machine, runs:
#
#   tests/gpu/prepare.sh .gpu                 # here: build and collect the artifacts
#   bash tests/gpu/device_check.sh .gpu OUT   # there: run them, logs and records into OUT
#
# Parts, in this order (PARTS="..." runs some; each has a time limit, cut to
# end by DEADLINE + GRACE seconds (480 + 90); a part that would start after
# DEADLINE is skipped and named, so the run ends within 10 minutes with the
# machine's start and a rerun of PARTS completes it):
#   suites   every gpu-tagged GoogleTest binary (bin/*_test): conformance,
#            streams and events, a real driver OOM, sleep; the three CUDA layers
#   matrix   the capture matrix and the accuracy report (matrix.sh):
#            OUT/matrix/, OUT/accuracy.md
#   speed    galloc's pairs beside PyTorch's raw_alloc/raw_delete, and a training
#            step on each allocator (speed.py): OUT/speed_*.json
#   sleep    first sleep, later sleeps and wake of a 1 GiB tag on the real
#            driver, beside a plain pinned copy (bench galloc_sleep): OUT/sleep.json
#   threads  the per-stream locking rows of the pairs benchmark
#   torch    galloc as real PyTorch's allocator (run_real_torch.sh)
#   capture  (not by default) the three capped snapshots of data/h200/
# Safe to run twice: every output is written afresh; nothing else is kept.
set -uo pipefail
art=$(realpath "${1:?artifact directory}")
out=${2:?output directory}
mkdir -p "$out"
out=$(realpath "$out")
here=$(cd "$(dirname "$0")" && pwd)
parts=${PARTS:-suites matrix speed sleep threads torch}
deadline=${DEADLINE:-480}          # no part starts after this many seconds
hard_end=$((deadline + ${GRACE:-90})) # and none runs past this (the run's whole length)
status=0
# Debian's libraries, for a GPU image without them: after the system's own.
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/lib/x86_64-linux-gnu:$art/syslib"
export PYTHONUNBUFFERED=1
log=$out/device_check.log
: >"$log"
run() { # name limit command...: run it under a time limit, its output into the log (tail shown), keep going
    local name=$1 limit=$2
    shift 2
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "== $name: SKIPPED (past ${deadline} s; rerun with PARTS)" | tee -a "$log"
        status=1
        return
    fi
    local left=$((hard_end - SECONDS))
    [ "$left" -lt "$limit" ] && limit=$((left > 1 ? left : 1)) # no part runs past hard_end
    echo "== $name (at most $limit s): $*" | tee -a "$log"
    local t0=$SECONDS rc=0
    timeout "$limit" "$@" >"$out/.part" 2>&1 || rc=$?
    cat "$out/.part" >>"$log"
    tail -n 25 "$out/.part"
    rm -f "$out/.part"
    if [ $rc -eq 0 ]; then echo "   ok ($((SECONDS - t0)) s)" | tee -a "$log"; else echo "   FAILED ($rc after $((SECONDS - t0)) s)" | tee -a "$log"; status=1; fi
}
want() { [[ " $parts " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
ldd "$art"/bin/*_test "$art"/tools/galloc "$art"/bench/* | grep "not found"

if want suites; then
    for t in "$art"/bin/*_test; do
        [ -x "$t" ] && run "$(basename "$t")" 120 "$t" --gtest_brief=0
    done
fi
if want matrix; then
    run matrix 330 bash "$here/matrix.sh" "$art/tools/galloc" "$out"
fi
if want speed; then
    export PYTHONPATH="$art/py${PYTHONPATH:+:$PYTHONPATH}"
    run speed_pairs 150 python3 "$here/speed.py" pairs "$out/speed_pairs.json" "$art/py/galloc/_lib/libgalloc.so"
    run speed_step_native 60 python3 "$here/speed.py" step "$out/speed_step_native.json" native
    run speed_step_galloc 60 python3 "$here/speed.py" step "$out/speed_step_galloc.json" galloc
fi
if want sleep && [ -x "$art/bench/galloc_sleep" ]; then
    run sleep 90 env GALLOC_BENCH_BACKEND=cuda "$art/bench/galloc_sleep" \
        --benchmark_filter='first_sleep|sleep_wake/.*/backed:1/offload:1' \
        --benchmark_out_format=json --benchmark_out="$out/sleep.json"
fi
# The per-stream locking thread rows where the cores are free: one allocator shared by
# threads on their own streams, beside an allocator per thread (the ceiling).
if want threads && [ -x "$art/bench/galloc_pairs" ]; then
    run pairs_threads 60 "$art/bench/galloc_pairs" \
        --benchmark_filter='^(own_streams|own_allocators)/(fixed_4KiB|small_mix)/real_time/threads:[12]$' \
        --benchmark_min_time=0.3 --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
fi
if want torch && [ -d "$art/py" ]; then
    run real_torch 150 "$here/run_real_torch.sh" "$art/py" "$out/real_torch.xml"
fi
# Whole runs (-1: recorded from before the first allocation), capped at 5 % of
# the device so an OOM ends each: PyTorch's defaults, expandable segments,
# and a mix of the other settings (data/h200/, already recorded).
cap() { # name conf
    run "snapshot_$1" 60 env PYTORCH_CUDA_ALLOC_CONF="$2" python3 "$here/capture_torch_snapshot.py" "$out" \
        --start-step -1 --fraction 0.05 --name "torch211_h200_full_$1"
}
if want capture; then
    cap default ""
    cap expandable "expandable_segments:True"
    cap mixed "max_split_size_mb:64,garbage_collection_threshold:0.6,roundup_power2_divisions:4"
fi
echo "device_check: $SECONDS s, $([ $status = 0 ] && echo "every part passed" || echo "some part FAILED or was skipped")" | tee -a "$log"
exit $status

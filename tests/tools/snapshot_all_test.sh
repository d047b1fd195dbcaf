#!/usr/bin/env bash
# snapshot_all_test.sh: galloc replay --snapshot on every trace of the
# repository (examples/, tests/tools/data/) and of shared/traces (found beside
# the checkout, or from $GALLOC_SHARED_TRACES, which must then hold them):
# each written file loads with Python's pickle, opens in MemoryViz's undo walk
# with nothing missing, and, replaying a PyTorch snapshot under its recorded
# settings, keeps every recorded entry, frame, time_us, block and pool at most
# 1.5x the input's size (snapshot_check.py defines each check).
# examples/dask/traces/ holds byte copies of examples/fragmentation.trace and
# examples/fit/load_order.trace; fuzz/corpus/ holds fuzzer inputs (a format
# byte first), not traces: neither is listed again.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

traces=("$EX/fragmentation.trace" "$EX/rmm_small.csv" "$EX/torch_snapshot.pickle" "$RUNFILES/examples/fit/load_order.trace")
for f in "$RUNFILES"/tests/tools/data/*.pickle "$RUNFILES"/tests/tools/data/*.trace "$RUNFILES"/tests/tools/data/h200/*.pickle.gz; do
    traces+=("$f")
done
SHARED="${GALLOC_SHARED_TRACES:-}"
if [ -z "$SHARED" ]; then
    repo="$(dirname "$(dirname "$(readlink -f "$EX/torch_snapshot.pickle")")")"
    SHARED="$repo/../shared/traces"
fi
shared=(kineto-hta-rank1-memory.json.gz kineto-resnet50-memory.pt.trace.json.gz umpire-devices.replay)
for f in "${shared[@]}"; do
    if [ -f "$SHARED/$f" ]; then
        traces+=("$SHARED/$f")
    elif [ -n "${GALLOC_SHARED_TRACES:-}" ]; then
        fail "shared trace $f not in \$GALLOC_SHARED_TRACES ($SHARED)"
    else
        echo "skipped: $SHARED/$f not found (set GALLOC_SHARED_TRACES)"
    fi
done
[ "${#traces[@]}" -ge 22 ] || fail "only ${#traces[@]} traces found"
"$PY" "$RUNFILES/tests/tools/snapshot_all_check.py" "$GALLOC" "$TMP" "${traces[@]}" >"$TMP/check" 2>&1 ||
    fail "replay --snapshot over every trace: $(grep FAIL "$TMP/check" || tail -5 "$TMP/check")"
cat "$TMP/check"
finish

#!/usr/bin/env bash
# readers_cli_test.sh: the galloc binary on the real traces of shared/traces
# (found beside the checkout, or from $GALLOC_SHARED_TRACES; skipped with a
# reason when absent) and on damaged or empty inputs: gzip read directly by
# replay and fit, corrupt gzip exits 2 naming the byte.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

# The real traces: the runfiles' examples/ is a symlink into the checkout.
SHARED="${GALLOC_SHARED_TRACES:-}"
if [ -z "$SHARED" ]; then
    repo="$(dirname "$(dirname "$(readlink -f "$EX/torch_snapshot.pickle")")")"
    SHARED="$repo/../shared/traces"
fi
if [ -f "$SHARED/kineto-hta-rank1-memory.json.gz" ]; then
    KT="$SHARED/kineto-hta-rank1-memory.json.gz"
    expect_exit 0 "replay of a .json.gz" -- "$GALLOC" replay "$KT"
    # 26,770 [memory] events and the 12-event prologue that rebuilds the state before them, counted apart
    expect_in "$TMP/out" "(kineto, 26,770 events, 12 stand-ins for the memory in use before the first event, sim device 31.75 GiB)" "replay of a .json.gz"
    # The device size is the trace's own: deviceProperties[1].totalGlobalMem,
    # 34,089,730,048 bytes (a V100-SXM2-32GB); --device-memory still overrides.
    expect_in "$TMP/out" "^device size from the trace: its deviceProperties totalGlobalMem" "HTA: size from the trace"
    expect_exit 0 "HTA trace, --json" -- "$GALLOC" replay --json "$KT"
    expect_in "$TMP/out" '"device_memory_from_trace": true' "HTA: size from the trace, JSON"
    expect_in "$TMP/out" '"device_memory": 34089730048,' "HTA: the V100's size"
    expect_exit 0 "HTA trace on 16GiB" -- "$GALLOC" replay --device-memory 16GiB "$KT"
    expect_in "$TMP/out" "(kineto, 26,770 events, 12 stand-ins for the memory in use before the first event, sim device 16.00 GiB)" "HTA: --device-memory overrides"
    ! grep -q "device size from the trace" "$TMP/out" || fail "HTA: an overridden size is not the trace's"
    # The older layout (Bytes, no Addr): 8,220 events on device 0 with frees
    # tied by size (LIFO), none unmatched; peak requested 2,791,636,480 bytes.
    OT="$SHARED/kineto-resnet50-memory.pt.trace.json.gz"
    expect_exit 0 "older kineto layout" -- "$GALLOC" replay "$OT"
    expect_in "$TMP/out" "device 0 (kineto, 8,220 events, sim device 31.74 GiB)" "older layout: events, own size"
    expect_in "$TMP/out" "peak requested                  2.60 GiB" "older layout: peak requested"
    expect_in "$TMP/out" "^note: no addresses in the trace (older Kineto layout): frees matched to live allocations of \
the same size, most recent first (LIFO.*); 0 frees with no live allocation of their size skipped; memory in use before \
the first event is not included$" "older layout: says what it rests on"
    expect_exit 0 "older kineto layout, --json" -- "$GALLOC" replay --json "$OT"
    expect_in "$TMP/out" '"events": 8220,' "older layout JSON: events"
    m='"addresses": false, "free_matching": "frees matched to live allocations of the same size, most recent first'
    expect_in "$TMP/out" "$m (LIFO[^\"]*)\", \"unmatched_frees\": 0}" "older layout JSON: the matching"
    expect_in "$TMP/out" '"peak_requested_bytes": 2791636480,' "older layout JSON: peak requested"
    expect_exit 0 "fit of the older layout" -- "$GALLOC" fit "$OT"
    expect_in "$TMP/out" "1 trace, 8,220 events, sim device 31.74 GiB" "fit of the older layout"
    expect_in "$TMP/out" "note: no addresses in the trace" "fit of the older layout: the note"
    expect_exit 0 "fit of a .json.gz" -- "$GALLOC" fit "$KT"
    expect_in "$TMP/out" "1 trace, 26,770 events, 12 stand-ins for the memory in use before the first event" "fit of a .json.gz"
    # Damaged copies: the trailer's CRC, and a cut in the middle.
    size=$(stat -c %s "$KT")
    head -c 500000 "$KT" >"$TMP/cut.json.gz"
    expect_exit 2 "truncated gzip" -- "$GALLOC" replay "$TMP/cut.json.gz"
    expect_in "$TMP/err" "cut.json.gz: gzip stream truncated at byte 500000" "truncated gzip"
    { head -c $((size - 8)) "$KT"; printf '\001\002\003\004'; tail -c 4 "$KT"; } >"$TMP/crc.json.gz"
    expect_exit 2 "gzip with a bad CRC" -- "$GALLOC" replay "$TMP/crc.json.gz"
    expect_in "$TMP/err" "crc.json.gz: gzip stream corrupt at byte $((size - 4)): incorrect data check" "bad CRC"
    # Umpire's 2022 layout, plain and gzipped: 1,642 allocates, 1,642
    # deallocates and 27 self-done reallocates (one alloc + one free each).
    UT="$SHARED/umpire-devices.replay"
    expect_exit 0 "replay of the real umpire log" -- "$GALLOC" replay "$UT"
    expect_in "$TMP/out" "(umpire, 3,338 events" "real umpire log"
    expect_in "$TMP/out" "peak requested                  496 bytes" "real umpire log"
    gzip -c "$UT" >"$TMP/umpire.log"
    expect_exit 0 "replay of the gzipped umpire log" -- "$GALLOC" replay "$TMP/umpire.log"
    expect_in "$TMP/out" "(umpire, 3,338 events" "gzipped umpire log"
elif [ -n "${GALLOC_SHARED_TRACES:-}" ]; then
    fail "real traces not found in $SHARED (named by GALLOC_SHARED_TRACES, as .ci/run does)"
else
    echo "SKIP: real traces not found in $SHARED (set GALLOC_SHARED_TRACES)" >&2
fi

# Older snapshot layouts (tests/tools/data/make_old_snapshots.py): a bare
# list of segments replays its live blocks (4 on device 0, 1 on device 1);
# one without live blocks has nothing to replay and exits 2.
OLD="$RUNFILES/tests/tools/data"
expect_exit 0 "bare list of segments" -- "$GALLOC" replay "$OLD/torch_segments_list.pickle"
expect_in "$TMP/out" "device 0 (torch, 0 events, 4 blocks live before the first event (seeded)" "bare list, device 0"
expect_in "$TMP/out" "device 1 (torch, 0 events, 1 block live before the first event (seeded)" "bare list, device 1"
expect_exit 0 "PyTorch 2.0 snapshot" -- "$GALLOC" replay "$OLD/torch20_snapshot.pickle"
expect_in "$TMP/out" "device 0 (torch, 1 events, 3 blocks live before the first event (seeded)" "2.0 snapshot, device 0"
expect_exit 2 "bare list without live blocks" -- "$GALLOC" replay "$OLD/torch_segments_idle.pickle"
expect_in "$TMP/err" "with no allocated block: it holds no trace, so there is nothing to replay" "idle list"

# An older-layout trace (no Addr) that has totals: seeded from them, and the
# report still says the frees were matched by size.
m='{"name": "[memory]", "ts": %d, "args": {"Device Type": 1, "Device Id": 0, "Bytes": %d, "Total Allocated": %d, "Total Reserved": 2097152}}'
printf "{\"traceEvents\": [$m, $m]}" 1 512 1536 2 -512 1024 >"$TMP/oldtot.json"
expect_exit 0 "older layout with totals" -- "$GALLOC" replay "$TMP/oldtot.json"
expect_in "$TMP/out" "^note: no addresses in the trace (older Kineto layout): .*; 0 frees with no live allocation of \
their size skipped$" "older layout with totals: frees by size"
expect_in "$TMP/out" "^note: the trace starts mid-run: 1024 bytes allocated" "older layout with totals: seeded"

# A forced format that finds no events exits 2 saying so (it used to report "fits").
printf '{"foo":1}\n{"bar":2}\n' >"$TMP/nothing.jsonl"
expect_exit 2 "forced format, no events" -- "$GALLOC" replay --format umpire "$TMP/nothing.jsonl"
expect_in "$TMP/err" "nothing.jsonl: no events found reading it as --format umpire (2 entries skipped)" "no events"
expect_exit 2 "fit, forced format, no events" -- "$GALLOC" fit --format umpire "$TMP/nothing.jsonl"
expect_in "$TMP/err" "no events found reading it as --format umpire" "fit, no events"

finish

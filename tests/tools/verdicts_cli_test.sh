#!/usr/bin/env bash
# verdicts_cli_test.sh: one verdict per state (issue 38), in the words the
# commands print, exact. Each bullet of the issue on the inputs built with its
# shape (data/make_verdict_shapes.py):
#   1. a state larger than --device-memory: replay, fit and --verify agree
#      that it does not fit, before the first event, with PyTorch's message
#      whole (it was "fits (with errors)" exit 0, every fit row "err" exit 2);
#   2. a device size assumed, inferred from oom entries and given, and what
#      the trace shows the device held; events counted apart from the blocks
#      live before the first one;
#   3. figures defined so the tables cannot contradict themselves: frag@peak
#      of the seeded peak (it read 97.3 % with equal peaks), the ranking rule,
#      "-" and "> 64x" under min device, peak requested between columns;
#   4. bad input refused: a --reserve not less than the device, a --conf the
#      parser refuses (no column or row of "-").
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"
D="$RUNFILES/tests/tools/data"
STATE="$D/state_larger.pickle" # 10 GiB live, 11296 MiB reserved at its first entry, no size recorded

# ---- 1. a state larger than the device ----
expect_exit 1 "state on 11 GiB: replay" -- "$GALLOC" replay --no-owners --device-memory 11GiB "$STATE"
expect_in "$TMP/out" "^OOMs                            1 (before the first event)$" "state: OOMs"
expect_in "$TMP/out" "^verdict                         OOM (genuine)$" "state: verdict"
expect_in "$TMP/out" "^\[recorded\] OOM before the first event: the state the trace starts in does not fit; seeding it, a request of 5.03 GiB failed:$" "state: the OOM"
expect_in "$TMP/out" "^  CUDA out of memory. Tried to allocate 5.03 GiB. GPU 0 has a total capacity of 11.00 GiB of which 5.00 GiB is free. Of the allocated memory 6.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)$" "state: PyTorch's message whole"
expect_in "$TMP/out" "^  genuine: the state the trace starts in holds 11.03 GiB reserved (10.00 GiB live + 1.03 GiB cached free), more than the 11.00 GiB the allocator may use, before any event; every configuration starts from that state, so no allocator setting helps (a larger device; --no-seed replays its live blocks alone, without the cache)$" "state: its figures"
expect_in "$TMP/out" "^  nothing after it is replayed: the column's figures are of the part of the state seeded before the request that failed$" "state: the figures' moment"
expect_in "$TMP/out" "^note: the trace shows 11.03 GiB reserved at once (11.03 GiB at its first entry, 11.03 GiB at its end): more than the 11.00 GiB the allocator may use here$" "state: what the trace shows"
grep -q "failed calls\|with errors" "$TMP/out" && fail "state: said as an error: $(cat "$TMP/out")"
[ -s "$TMP/err" ] && fail "state: stderr: $(cat "$TMP/err")"
expect_exit 1 "state on 11 GiB: replay --json" -- "$GALLOC" replay --json --device-memory 11GiB "$STATE"
"$PY" - "$TMP/out" <<'PYEOF' || fail "state: replay --json"
import json, sys
c = json.load(open(sys.argv[1]))["traces"][0]["results"][0]
MiB, GiB = 1 << 20, 1 << 30
assert (c["fits"], c["verdict"], c["ooms_total"], c["events"], c["errors"]) == (False, "OOM (genuine)", 1, 0, 0), c
(o,) = c["ooms"]
assert (o["event"], o["size"], o["class"], o["before_first_event"], o["prologue"]) == (0, 5152 * MiB, "genuine", True, True), o
assert (o["live_bytes"], o["cached_free_bytes"], o["limit_bytes"], o["device_free_bytes"]) == (10 * GiB, 1056 * MiB, 11 * GiB, 5 * GiB), o
assert o["message"].endswith("#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)") and len(o["message"]) == 503, len(o["message"])
m = c["owners"]["ooms"][0]
assert (m["event"], m["allocated_bytes"], m["request"]["bytes"], m["request"]["site"]) == (None, 6 * GiB, 5152 * MiB, None), m
PYEOF
# the live blocks alone larger than the device
expect_exit 1 "state on 9 GiB" -- "$GALLOC" replay --no-owners --device-memory 9GiB "$STATE"
expect_in "$TMP/out" "^  genuine: the state the trace starts in holds 10.00 GiB live (11.03 GiB reserved), more than the 9.00 GiB the allocator may use, before any event; no allocator setting helps (a smaller model or batch, a larger device)$" "state on 9 GiB: live alone"
# on exactly its size it replays, and its live blocks alone (--no-seed) fit 11 GiB
expect_exit 0 "state on 11296 MiB" -- "$GALLOC" replay --no-owners --device-memory 11296MiB "$STATE"
expect_in "$TMP/out" "^verdict                         fits$" "state on its size"
expect_exit 0 "state --no-seed on 11 GiB" -- "$GALLOC" replay --no-owners --no-seed --device-memory 11GiB "$STATE"
expect_in "$TMP/out" "(torch, 4 events, 2 blocks live before the first event (allocated first), sim device 11.00 GiB)$" "--no-seed: the header"
# fit: every row does not fit (none err), exit 1, the state named as the reason, its smallest device
expect_exit 1 "state on 11 GiB: fit" -- "$GALLOC" fit --no-owners --bisect 1 --device-memory 11GiB "$STATE"
expect_in "$TMP/out" "^galloc fit: 1 trace, 4 events, 2 blocks live before the first event (seeded), sim device 11.00 GiB$" "fit: header"
expect_in "$TMP/out" "^41 configurations, 0 fit;" "fit: none fits"
expect_in "$TMP/out" "^   1  no         6.00 GiB        6.00 GiB       0.0%    11.03 GiB  before event 0 genuine  (recorded: PyTorch's defaults)$" "fit: the recorded row"
grep -q "  err  \|error  " "$TMP/out" && fail "fit: a row err: $(cat "$TMP/out")"
expect_in "$TMP/out" "^before event 0: the state the trace starts in does not fit, and nothing after it is replayed; the peaks are of the part of it seeded before the request that failed$" "fit: before event 0 explained"
expect_in "$TMP/out" "rank 1: OOM before the first event of .*state_larger.pickle device 0$" "fit: the recorded settings' outcome"
expect_in "$TMP/out" "^No configuration fits on 11.00 GiB: the state .*state_larger.pickle device 0 starts in does not fit it (11.03 GiB reserved: 10.00 GiB live + 1.03 GiB cached free), before the first event. Every configuration starts from that state: genuine, whatever the settings.$" "fit: the reason"
expect_in "$TMP/out" "^The smallest device it fits: 11.03 GiB, under \"(recorded: PyTorch's defaults)\": 32.00 MiB (33,554,432 bytes) more than 11.00 GiB.$" "fit: the smallest device"
expect_in "$TMP/out" "first runs out of memory before the first event of " "fit: the closest"
expect_exit 1 "state on 11 GiB: fit --json" -- "$GALLOC" fit --json --no-owners --bisect 1 --device-memory 11GiB "$STATE"
"$PY" - "$TMP/out" <<'PYEOF' || fail "state: fit --json"
import json, sys
f = json.load(open(sys.argv[1]))
assert (f["fits"], f["pytorch_cuda_alloc_conf"], f["answer"]["closest"]) == (False, None, 1), f["answer"]
for r in f["results"]:
    assert not r["fits"] and r["error"] is None, r
    assert (r["first_oom"]["event"], r["first_oom"]["class"], r["first_oom"]["before_first_event"]) == (0, "genuine", True), r
assert f["results"][0]["min_device_memory"] == 11296 << 20, f["results"][0]
PYEOF
expect_exit 2 "state on 11 GiB: verify" -- "$GALLOC" replay --verify --device-memory 11GiB "$STATE"
expect_in "$TMP/err" "cannot verify: the state the trace starts in does not fit the device (a request of 5402263552 bytes failed seeding it; --device-memory): CUDA out of memory. Tried to allocate 5.03 GiB." "verify: why"

# ---- 2. a device size assumed, inferred and given ----
expect_exit 0 "assumed" -- "$GALLOC" replay --no-owners "$STATE"
expect_in "$TMP/out" "state_larger.pickle device 0 (torch, 4 events, 2 blocks live before the first event (seeded), sim device 80.00 GiB)$" "assumed: the header counts events apart"
expect_in "$TMP/out" "^device size not recorded: 80.00 GiB assumed; --device-memory sets it. The trace shows 11.03 GiB reserved at once (11.03 GiB at its first entry, 11.03 GiB at its end) and a largest request of 6.00 GiB$" "assumed: said, with what the trace shows"
expect_exit 1 "a state larger than the size assumed" -- "$GALLOC" replay --no-owners "$D/big_state.pickle"
expect_in "$TMP/out" "^device size not recorded: 80.00 GiB assumed; --device-memory sets it. The trace shows 110.31 GiB reserved at once (110.31 GiB at its first entry, 110.31 GiB at its end): more than assumed, so the device was larger; its largest request is 60.00 GiB$" "big state: more than assumed"
expect_in "$TMP/out" "^  the device's size was assumed (not recorded): --device-memory gives the one it ran on$" "big state: the OOM rests on the assumption"
expect_exit 0 "inferred" -- "$GALLOC" replay --no-owners "$D/oom_entry.pickle"
expect_in "$TMP/out" "(torch, 5 events, 2 blocks live before the first event (seeded), sim device 12.03 GiB)$" "inferred: reserved + device_free"
expect_in "$TMP/out" "^device size from the snapshot: reserved + device_free at its oom entries" "inferred: said"
grep -q "assumed" "$TMP/out" && fail "inferred: said to be assumed"
expect_exit 0 "given" -- "$GALLOC" replay --no-owners --device-memory 16GiB "$D/oom_entry.pickle"
expect_in "$TMP/out" "^device size given (--device-memory); the trace says 12.03 GiB (from the snapshot: reserved + device_free at its oom entries)$" "given: the trace's own beside it"
expect_exit 1 "recorded in a header" -- "$GALLOC" replay --no-owners "$EX/fit/load_order.trace"
grep -q "assumed" "$TMP/out" && fail "header: said to be assumed"
"$GALLOC" replay --json --no-owners "$STATE" >"$TMP/assumed.json"
"$GALLOC" replay --json --no-owners "$D/oom_entry.pickle" >"$TMP/inferred.json"
"$PY" - "$TMP/assumed.json" "$TMP/inferred.json" <<'PYEOF' || fail "device sizes: --json"
import json, sys
MiB, GiB = 1 << 20, 1 << 30
a = json.load(open(sys.argv[1]))["traces"][0]
assert (a["device_memory"], a["device_memory_source"], a["device_memory_assumed"]) == (80 * GiB, "default", True), a
assert (a["events"], a["trace_events"], a["prologue_allocs"]) == (6, 4, 2), a
assert a["device_shown"] == {"reserved_peak_bytes": 11296 * MiB, "reserved_first_bytes": 11296 * MiB,
                             "reserved_last_bytes": 11296 * MiB, "largest_request_bytes": 6 * GiB}, a["device_shown"]
i = json.load(open(sys.argv[2]))["traces"][0]
assert (i["device_memory"], i["device_memory_source"], i["device_memory_assumed"]) == (11296 * MiB + GiB, "oom_entries", False), i
PYEOF

# ---- 3. figures that cannot contradict each other ----
# the reserved peak is the seeded state, all of it allocated: frag@peak 0 (it read 97.3 %)
expect_exit 0 "shrinking window: fit" -- "$GALLOC" fit --no-owners --bisect 1 "$D/shrinking_window.pickle"
expect_in "$TMP/out" "^   1  yes        1.02 GiB        1.02 GiB       0.0%     1.02 GiB  -                       (recorded: PyTorch's defaults)$" "frag@peak of the seeded peak"
expect_in "$TMP/out" "^   2  yes        1.02 GiB        1.02 GiB       0.0%            -  -                       (defaults)$" "a row not bisected"
expect_in "$TMP/out" "^ranked: fitting first; then the smaller peak reserved, peaks within 0.5 % of each other being a tie (a replay predicts a real run's peak to about that), which goes to the job's own run, then to the shorter setting; of those that do not fit, the one whose first OOM comes later first$" "the ranking rule"
expect_in "$TMP/out" "^frag@peak: the share of peak reserved not allocated at the moment reserved first reached its peak (later allocations may fill it: peak allocated can then equal peak reserved)$" "frag@peak defined"
expect_in "$TMP/out" "^min device -: not searched: --bisect N bisects the N best configurations and the job's own run (default 10); --bisect all bisects every one$" "a - under min device"
grep -q "> 64x" "$TMP/out" && fail "a > 64x line without a > 64x"
expect_exit 1 "state on 100 MiB: fit" -- "$GALLOC" fit --no-owners --bisect 1 --device-memory 100MiB "$STATE"
expect_in "$TMP/out" "^min device > 64x: it fits no device up to 64 times this one$" "> 64x explained"
expect_exit 1 "peak requested between columns" -- "$GALLOC" replay --no-owners --conf "" --conf expandable_segments:True "$EX/fragmentation.trace"
expect_in "$TMP/out" "^peak requested                  73.11 GiB                 74.48 GiB$" "peak requested differs"
expect_in "$TMP/out" "^peak requested counts the allocations each configuration made: a request that ran out of memory is not counted (a traced OOM's only where the configuration could make it), so it differs between columns$" "... and why"
expect_exit 1 "peak requested the same" -- "$GALLOC" replay --no-owners --conf "" --conf expandable_segments:True "$EX/fit/load_order.trace"
expect_in "$TMP/out" "^peak requested                  77.64 GiB                 77.64 GiB$" "peak requested the same"
grep -q "^peak requested counts" "$TMP/out" && fail "the peak requested line where nothing differs"

# ---- 4. bad input refused ----
expect_exit 2 "--reserve past the header's size" -- "$GALLOC" replay --reserve 100TiB "$EX/fit/load_order.trace"
expect_in "$TMP/err" "^galloc replay: .*load_order.trace: --reserve 100.00 TiB is not less than the device's 80.00 GiB (from the trace's header): the allocator would have no memory; a reserve is the memory outside the allocator, a part of the device$" "--reserve: replay"
[ -s "$TMP/out" ] && fail "--reserve: a report: $(cat "$TMP/out")"
expect_exit 2 "--reserve past the assumed size: fit" -- "$GALLOC" fit --reserve 80GiB "$STATE"
expect_in "$TMP/err" "^galloc fit: .*state_larger.pickle device 0: --reserve 80.00 GiB is not less than the device's 80.00 GiB (not recorded: assumed, --device-memory sets it): the allocator would have no memory" "--reserve: fit"
for cmd in replay fit; do
    expect_exit 2 "$cmd --reserve against --device-memory" -- "$GALLOC" $cmd --reserve 80GiB --device-memory 80GiB "$EX/fit/load_order.trace"
    expect_in "$TMP/err" "^galloc $cmd: --reserve 80.00 GiB is not less than --device-memory 80.00 GiB: the allocator would have no memory$" "$cmd: both sizes named"
done
expect_exit 1 "a reserve below the device" -- "$GALLOC" replay --no-owners --reserve 2GiB "$EX/fit/load_order.trace"
expect_in "$TMP/out" "^2.00 GiB reserved for memory outside the allocator (--reserve): the allocator may use 78.00 GiB$" "--reserve 2GiB"
# a configuration the parser refuses: on stderr, no column or row of "-", exit 2
REFUSED='max_split_size_mb: expected a whole number of MiB >= 20, got "1" (offset 18)'
expect_exit 2 "replay: the only --conf refused" -- "$GALLOC" replay --conf max_split_size_mb:1 "$EX/fit/load_order.trace"
[ -s "$TMP/out" ] && fail "replay: a table for a configuration never made: $(cat "$TMP/out")"
expect_in "$TMP/err" "configuration \"max_split_size_mb:1\": create string: $REFUSED" "replay: the refusal"
expect_exit 2 "replay: one --conf of two refused" -- "$GALLOC" replay --no-owners --conf max_split_size_mb:1 --conf expandable_segments:True "$EX/fit/load_order.trace"
expect_in "$TMP/out" "^                                expandable_segments:True$" "replay: only the column made"
expect_in "$TMP/out" "^configuration \"max_split_size_mb:1\" could not be made: left out (said on stderr)$" "replay: the column left out"
grep -q "  -  \|  -$" "$TMP/out" && fail "replay: a cell of -: $(cat "$TMP/out")"
expect_exit 2 "fit: the only --conf refused" -- "$GALLOC" fit --conf max_split_size_mb:1 "$EX/fit/load_order.trace"
[ -s "$TMP/out" ] && fail "fit: a table for a configuration never made: $(cat "$TMP/out")"
expect_in "$TMP/err" "^galloc fit: configuration \"max_split_size_mb:1\": create string: $REFUSED$" "fit: the refusal"
expect_exit 2 "fit: one --conf of two refused" -- "$GALLOC" fit --no-owners --conf max_split_size_mb:1 --conf expandable_segments:True "$EX/fit/load_order.trace"
expect_in "$TMP/out" "^(1 configuration could not be made and is left out: said on stderr)$" "fit: the row left out"
grep -q "max_split_size_mb:1$" "$TMP/out" && fail "fit: a row of the refused configuration"
expect_exit 2 "fit --json: the refused row" -- "$GALLOC" fit --json --no-owners --conf max_split_size_mb:1 --conf expandable_segments:True "$EX/fit/load_order.trace"
"$PY" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["results"] if r["conf"]=="max_split_size_mb:1"]; assert r and r[0]["create_status"]=="E_CONFIG", r' "$TMP/out" || fail "fit --json: create_status"

finish

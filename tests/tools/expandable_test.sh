#!/usr/bin/env bash
# expandable_test.sh: recorded placement of expandable segments. Under
# expandable_segments:True PyTorch reserves an address range per (stream,
# pool) and maps pages into it; a new segment's first segment_map is at its
# reservation's base, so replay places each reservation there. Which
# reservation is lower decides which one find_expandable_block grows, so
# the addresses decide later maps, unmaps and the final segments.
#
# The workload on a 200 MiB device (reservations of 240 MiB): a second
# reservation is made when the first has no room for 160 MiB; a 20 MiB
# request then grows the lower of the two, and a 170 MiB one finds a free
# block only if that was the second (it then holds 160 + 20 MiB free).
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

printf 'galloc-trace 1 device_memory 200MiB\nalloc 1 140MiB\nalloc 2 20MiB\nfree 1\nalloc 3 160MiB\nalloc 4 20MiB\nfree 3\nfree 4\nalloc 5 170MiB\n' \
    >"$TMP/x.trace"
for p in descending rising; do
    expect_exit 0 "snapshot, sim_placement:$p" -- "$GALLOC" replay --conf "expandable_segments:True,sim_placement:$p" \
        --snapshot "$TMP/$p.pickle" "$TMP/x.trace"
done
# Move the recorded addresses where a CUDA device has them, outside sim's
# window (whole 2 MiB pages: reservations are page-aligned).
"$PY" - "$TMP/descending.pickle" "$TMP/rising.pickle" <<'PYEOF' || fail "move the recorded addresses"
import pickle, sys
for path in sys.argv[1:]:
    d = pickle.load(open(path, "rb"))
    addrs = [e["addr"] for e in d["device_traces"][0] if e["addr"]] + [s["address"] for s in d["segments"]]
    delta = 0x7F3A00000000 - min(addrs)
    for e in d["device_traces"][0]:
        if e["addr"]:
            e["addr"] += delta
    for s in d["segments"]:
        s["address"] += delta
        for b in s["blocks"]:
            b["address"] += delta
    pickle.dump(d, open(path, "wb"))
PYEOF

# Descending recorded addresses: the second reservation is the lower one.
expect_exit 0 "descending addresses, recorded placement" -- "$GALLOC" replay --verify --device-memory 200MiB \
    "$TMP/descending.pickle"
expect_in "$TMP/out" "verify (settings: expandable_segments:True; sim device 200.00 MiB)" "recorded settings"
expect_in "$TMP/out" "^device events: 5 of 5 agree" "descending, recorded: device events"
expect_in "$TMP/out" "^by kind: segment_map 4 of 4, segment_unmap 1 of 1, alloc 5 of 5," "descending, recorded: by kind"
expect_in "$TMP/out" "^final segments: 2 of 2 agree" "descending, recorded: final segments"
expect_exit 1 "descending addresses, rising placement" -- "$GALLOC" replay --verify --device-memory 200MiB \
    --conf expandable_segments:True,sim_placement:rising "$TMP/descending.pickle"
expect_in "$TMP/out" "^device events: 5 of 8 agree" "descending, rising: device events"
expect_in "$TMP/out" "^by kind: segment_map 4 of 5, segment_unmap 1 of 3, alloc 5 of 5," "descending, rising: by kind"
expect_in "$TMP/out" "^final segments: 0 of 2 agree" "descending, rising: final segments"

# Rising recorded addresses, which sim's own (descending) placement would not
# give: only the recorded reservation addresses reproduce the run.
expect_exit 0 "rising addresses, recorded placement" -- "$GALLOC" replay --verify --device-memory 200MiB \
    "$TMP/rising.pickle"
expect_in "$TMP/out" "^device events: 8 of 8 agree" "rising, recorded: device events"
expect_in "$TMP/out" "^by kind: segment_map 5 of 5, segment_unmap 3 of 3, alloc 5 of 5," "rising, recorded: by kind"
expect_in "$TMP/out" "^final segments: 2 of 2 agree" "rising, recorded: final segments"
expect_exit 1 "rising addresses, descending placement" -- "$GALLOC" replay --verify --device-memory 200MiB \
    --conf expandable_segments:True,sim_placement:descending "$TMP/rising.pickle"
expect_in "$TMP/out" "^by kind: segment_map 4 of 5, segment_unmap 1 of 3, alloc 5 of 5," "rising, descending: by kind"

finish

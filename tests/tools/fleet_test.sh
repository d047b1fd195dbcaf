#!/usr/bin/env bash
# fleet_test.sh: `galloc fit FOLDER`: each trace of a folder fitted on its own
# (one report per trace, in name order, the same as `galloc fit TRACE` of
# that file), traces run concurrently with --jobs > 1 (GALLOC_FLEET_DEBUG's
# start/end lines), its JSON document, the worst exit status, and the usage errors.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

mkdir -p "$TMP/fleet/sub" "$TMP/empty"
cp "$EX/fit/load_order.trace" "$TMP/fleet/b_load_order.trace"
cp "$EX/fragmentation.trace" "$TMP/fleet/a_fragmentation.trace"
cp "$EX/rmm_small.csv" "$TMP/fleet/.hidden.csv" # hidden files and subfolders are not traces
cp "$EX/rmm_small.csv" "$TMP/fleet/sub/c.csv"

expect_exit 0 "fleet text" -- "$GALLOC" fit --jobs 2 --top 1 "$TMP/fleet"
[ "$(grep -c '^== ' "$TMP/out")" -eq 2 ] || fail "two traces: $(grep '^== ' "$TMP/out")"
grep -q "^== $TMP/fleet/a_fragmentation.trace (exit 0)$" "$TMP/out" || fail "name order, a first"
grep -q '^Fits: export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"$' "$TMP/out" || fail "load_order winner"
# --jobs 2: both traces run at once (each in its own process): both start before either ends.
GALLOC_FLEET_DEBUG=1 "$GALLOC" fit --jobs 2 --top 1 "$TMP/fleet" >"$TMP/par" 2>"$TMP/par.err" || fail "fleet --jobs 2"
grep 'galloc fit: fleet: ' "$TMP/par.err" | cut -d' ' -f4 | head -2 | tr '\n' ' ' | grep -qx 'start start ' ||
    fail "two traces did not overlap: $(cat "$TMP/par.err")"
[ "$(grep -c 'galloc fit: fleet: end ' "$TMP/par.err")" -eq 2 ] || fail "two ends: $(cat "$TMP/par.err")"
# --jobs 1: one after another in this process; the same reports, in the same order.
GALLOC_FLEET_DEBUG=1 "$GALLOC" fit --jobs 1 --top 1 "$TMP/fleet" >"$TMP/seq" 2>"$TMP/seq.err" || fail "fleet --jobs 1"
[ "$(grep 'galloc fit: fleet: ' "$TMP/seq.err" | cut -d' ' -f4 | tr '\n' ' ')" = "start end start end " ] ||
    fail "--jobs 1 is sequential: $(cat "$TMP/seq.err")"
diff <(grep -v 'replays in' "$TMP/seq") <(grep -v 'replays in' "$TMP/par") >&2 || fail "--jobs 1 and 2 reports differ"
# Each trace's report is exactly that of galloc fit on the file alone.
"$GALLOC" fit --jobs 2 --top 1 "$TMP/fleet/b_load_order.trace" | grep -v 'replays in' >"$TMP/alone"
sed -n "/^== .*b_load_order/,\$p" "$TMP/out" | tail -n +2 | grep -v 'replays in' >"$TMP/infleet"
diff "$TMP/alone" "$TMP/infleet" >&2 || fail "a fleet trace's report differs from galloc fit TRACE"

expect_exit 0 "fleet json" -- "$GALLOC" fit --json --jobs 2 "$TMP/fleet"
"$PY" - "$TMP/out" "$TMP/fleet" <<'PY' || fail "fleet json document"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["tool"] == "galloc fit" and doc["version"] == 2, doc.keys()
files = [t["file"] for t in doc["fleet"]]
assert files == [sys.argv[2] + "/a_fragmentation.trace", sys.argv[2] + "/b_load_order.trace"], files
a, b = (t["fit"] for t in doc["fleet"])
assert [t["exit_status"] for t in doc["fleet"]] == [0, 0]
assert b["pytorch_cuda_alloc_conf"] == "expandable_segments:True"
assert b["results"][0]["peak_reserved_bytes"] == 83361792000, b["results"][0]
assert a["fits"] and a["events"] == 1720 and b["events"] == 582
PY

# A folder and a trace that fits nothing: the worst status; a bad file: 2, the others still reported.
expect_exit 1 "fleet with no fit" -- "$GALLOC" fit --device-memory 40GiB --bisect 0 --jobs 2 "$TMP/fleet"
printf 'galloc-trace 1\nalloc x\n' >"$TMP/fleet/c_bad.trace"
expect_exit 2 "fleet with a bad trace" -- "$GALLOC" fit --jobs 2 "$TMP/fleet"
[ "$(grep -c '^== ' "$TMP/out")" -eq 3 ] || fail "three traces reported"
grep -q "c_bad.trace:2" "$TMP/err" || fail "the bad trace's line: $(cat "$TMP/err")"
expect_exit 2 "empty folder" -- "$GALLOC" fit "$TMP/empty"
grep -q "no trace files" "$TMP/err" || fail "empty folder message"
expect_exit 2 "plot with a folder" -- "$GALLOC" fit --plot "$TMP/p.svg" "$TMP/fleet"

finish

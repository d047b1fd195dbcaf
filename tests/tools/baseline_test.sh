#!/usr/bin/env bash
# baseline_test.sh: the job's own run is one replay, whichever command asks.
# For every trace in the repository (examples/, examples/fit/,
# tests/tools/data/, tests/tools/data/h200/) and in shared/traces, galloc
# fit's row of the job's own run equals galloc replay's column with no
# --conf, figure for figure:
#   - a snapshot: fit's row of stage "recorded" (its recorded settings, its
#     segments at the recorded addresses) is replay's column "recorded";
#   - any other trace: fit's row of conf "" and stage "grid" (PyTorch's
#     defaults) is replay's column "defaults".
# Fit sums a count over units and takes a peak's max; replay has a column per
# unit. The units' descriptions (device size and its source, cap, start) are
# the same in both documents. Files refused on purpose are listed in REFUSED:
# both commands must refuse them with exit 2; any other file must load.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"
DATA="$RUNFILES/tests/tools/data"

# Refused on purpose (tests/tools/data/make_old_snapshots.py): a PyTorch 2.0
# block with neither its own address nor its segment's, and a bare list of
# segments with no allocated block (nothing to replay).
REFUSED="torch20_noaddr.pickle torch_segments_idle.pickle snapshot_bad_device.pickle"

# is_trace DIR NAME: whether a file of one of the folders is a trace (the
# folders also hold their BUILD, README and generators; h200/NAME.json is
# PyTorch's memory_stats beside each snapshot, not a trace).
is_trace() {
    case "$2" in
    BUILD | *.md | *.py | *.sh | *.c | *.h | *.cc | *.txt) return 1 ;;
    *.json) [ "$(basename "$1")" != h200 ] ;;
    *) return 0 ;;
    esac
}

traces_in() { # traces_in DIR...: the traces directly in each folder, one per line
    local d f
    for d in "$@"; do
        for f in "$d"/*; do
            [ -f "$f" ] && is_trace "$d" "$(basename "$f")" && echo "$f"
        done
    done
}

DIRS=(examples examples/fit tests/tools/data tests/tools/data/h200)
mapfile -t FILES < <(traces_in "${DIRS[@]/#/$RUNFILES/}")

# Every trace of the checkout is in this test's data (BUILD): a new one that
# is not would be skipped without a word. The runfiles are links into it.
repo="$(dirname "$(dirname "$(readlink -f "$EX/torch_snapshot.pickle")")")"
if [ -d "$repo/tests/tools/data" ] && [ "$repo" != "$RUNFILES" ]; then
    while IFS= read -r f; do
        rel="${f#"$repo"/}"
        [ -f "$RUNFILES/$rel" ] || fail "$rel is a trace of the checkout but not in baseline_test's data: add it" \
            "to its folder's traces filegroup (examples/BUILD) or to the test's data (tests/tools/BUILD)"
    done < <(traces_in "${DIRS[@]/#/$repo/}")
else
    echo "note: the runfiles do not lead to a checkout: not checking that every trace is in the data"
fi
for name in $REFUSED; do
    printf '%s\n' "${FILES[@]}" | grep -q "/$name\$" || fail "$name (REFUSED) is not among the traces: drop it from REFUSED"
done

# The real traces of shared/traces, beside the checkout or named by
# $GALLOC_SHARED_TRACES (as .ci/run does: then they must be there).
SHARED="${GALLOC_SHARED_TRACES:-$repo/../shared/traces}"
if [ -d "$SHARED" ] && [ -n "$(traces_in "$SHARED")" ]; then
    mapfile -t -O "${#FILES[@]}" FILES < <(traces_in "$SHARED")
elif [ -n "${GALLOC_SHARED_TRACES:-}" ]; then
    fail "real traces not found in $SHARED (named by GALLOC_SHARED_TRACES)"
else
    echo "SKIP shared traces: $SHARED does not exist (set GALLOC_SHARED_TRACES to the folder holding them)"
fi

cat >"$TMP/baseline.py" <<'PYEOF'
# baseline.py FILE REPLAY_JSON FIT_JSON REPLAY_EXIT FIT_EXIT: fit's row of the
# job's own run against replay's columns; one line per difference, naming the
# file and the figure.
import json, sys

path, rj, fj, rc_r, rc_f = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
R, F = json.load(open(rj)), json.load(open(fj))
bad = []


def same(what, fit, replay):
    if fit != replay:
        bad.append(f"{path}: {what}: fit {fit!r}, replay {replay!r}")


for doc, tool in ((R, "galloc replay"), (F, "galloc fit")):
    if (doc.get("tool"), doc.get("version")) != (tool, 2):
        bad.append(f"{path}: {tool}: tool {doc.get('tool')!r} version {doc.get('version')!r}, want version 2")
traces = R["traces"]
same("units", len(F["traces"]), len(traces))
cols = []
for i, t in enumerate(traces):
    if t["error"] is not None or len(t["results"]) != 1:
        bad.append(f"{path}: replay traces[{i}]: error {t['error']!r}, {len(t['results'])} columns (want 1)")
    else:
        cols.append(t["results"][0])
if bad:
    sys.exit("\n".join(bad))

snapshot = F["recorded_conf"] is not None
want_label = "recorded" if snapshot else "defaults"
for i, c in enumerate(cols):
    if (c["label"], c["recorded"]) != (want_label, snapshot):
        bad.append(f"{path}: replay traces[{i}]: column {c['label']!r} (recorded {c['recorded']}), want "
                   f"{want_label!r}")
if snapshot:
    rows = [r for r in F["results"] if r["stage"] == "recorded"]
    if rows and not rows[0]["recorded"]:
        bad.append(f"{path}: fit's row of stage 'recorded' is not the recorded run")
else:
    rows = [r for r in F["results"] if r["stage"] == "grid" and r["conf"] == "" and not r["recorded"]]
which = "stage recorded" if snapshot else 'conf "", stage grid'
if len(F["results"]) != 1 or len(rows) != 1:
    bad.append(f"{path}: fit --max-configs 1: {len(F['results'])} rows, {len(rows)} of the job's own run "
               f"({which}); want that one row")
if bad:
    sys.exit("\n".join(bad))
row = rows[0]

# The configuration: a snapshot's recorded settings, else PyTorch's defaults.
same("the own run's conf", row["conf"], F["recorded_conf"] if snapshot else "")
for i, c in enumerate(cols):
    same(f"traces[{i}] conf", row["conf"], c["conf"])
# Peaks: fit's is the max over units; counts: the sum.
for k in ("peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes"):
    same(k, row[k], max(c[k] for c in cols))
for k in ("ooms_total", "expected_ooms", "expected_ooms_avoided"):
    same(k, row[k], sum(c[k] for c in cols))
for k in ("num_device_alloc", "num_device_free", "num_alloc_retries"):
    same(k + " (replay: memory_stats)", row[k], sum(c["memory_stats"][k] for c in cols))
same("fits", row["fits"], all(c["fits"] for c in cols))
same("depends_on_cap", row["depends_on_cap"], any(c["depends_on_cap"] for c in cols))
same("error", row["error"], None)
# With one configuration the job fits exactly when that row does, and both
# commands exit 0 when it fits, 1 when it does not.
same("fit's fits (the job)", F["fits"], row["fits"])
same("exit status", rc_f, rc_r)
same("exit status (0: fits, 1: does not)", rc_f, 0 if row["fits"] else 1)
# The first OOM: the first unit that does not fit, its first OOM.
failing = [(i, c) for i, c in enumerate(cols) if not c["fits"]]
if failing and failing[0][1]["ooms"]:
    i, c = failing[0]
    o, fo = c["ooms"][0], row["first_oom"] or {}
    same("first_oom.trace", fo.get("trace"), i)
    for k in ("event", "size", "class", "live_bytes", "cached_free_bytes", "largest_free_block", "device_free_bytes",
              "device_total_bytes", "memory_fraction", "limit_bytes", "usable_free_bytes"):
        same("first_oom." + k, fo.get(k), o[k])
elif not failing:
    same("first_oom", row["first_oom"], None)
# Each unit as both describe it (ga_report_unit_json): device_memory first.
for i, (ft, rt) in enumerate(zip(F["traces"], traces)):
    same(f"traces[{i}].device_memory", ft["device_memory"], rt["device_memory"])
    for k in sorted(set(ft) - {"label"}):
        if k != "device_memory":
            same(f"traces[{i}].{k}", ft[k], rt.get(k, "(missing)"))
    same(f"traces[{i}].label", ft["label"], " ".join(p for p in (rt["file"], rt["unit"]) if p))
same("fit's device_memory (the first unit's)", F["device_memory"], traces[0]["device_memory"])

if bad:
    sys.exit("\n".join(bad))
print(f"ok {path}: {len(cols)} unit(s), {want_label}: conf {row['conf']!r}, peak reserved "
      f"{row['peak_reserved_bytes']}, allocated {row['peak_allocated_bytes']}, requested "
      f"{row['peak_requested_bytes']}, {row['ooms_total']} OOMs, fits {row['fits']}")
PYEOF

compared=0
for f in "${FILES[@]}"; do
    name="$(basename "$f")"
    "$GALLOC" replay --json "$f" >"$TMP/replay.json" 2>"$TMP/replay.err"
    rc_r=$?
    "$GALLOC" fit --json --bisect 0 --max-configs 1 "$f" >"$TMP/fit.json" 2>"$TMP/fit.err"
    rc_f=$?
    [ "$rc_r" -ge 128 ] && fail "$f: galloc replay killed by a signal (crash)"
    [ "$rc_f" -ge 128 ] && fail "$f: galloc fit killed by a signal (crash)"
    if [[ " $REFUSED " == *" $name "* ]]; then
        [ "$rc_r" -eq 2 ] && [ "$rc_f" -eq 2 ] ||
            fail "$f: refused on purpose, yet galloc replay exits $rc_r and galloc fit $rc_f (want 2 and 2)"
        grep -qF "$f" "$TMP/replay.err" || fail "$f: galloc replay's refusal does not name the file"
        grep -qF "$f" "$TMP/fit.err" || fail "$f: galloc fit's refusal does not name the file"
        echo "refused by both (exit 2): ${f#"$RUNFILES"/}"
        continue
    fi
    if [ "$rc_r" -gt 1 ] || [ "$rc_f" -gt 1 ]; then
        fail "$f: galloc replay exits $rc_r, galloc fit $rc_f (want 0 or 1):" \
            "$(head -c 400 "$TMP/replay.err") $(head -c 400 "$TMP/fit.err")"
        continue
    fi
    "$PY" "$TMP/baseline.py" "${f#"$RUNFILES"/}" "$TMP/replay.json" "$TMP/fit.json" "$rc_r" "$rc_f" ||
        fail "${f#"$RUNFILES"/}: galloc fit --json --bisect 0 --max-configs 1 differs from galloc replay --json (above)"
    compared=$((compared + 1))
done
# examples: 4, tests/tools/data: 3 (2 refused), h200: 5; shared/traces adds 3.
[ "$compared" -ge 12 ] || fail "only $compared traces compared (want at least 12)"
echo "$compared traces compared"

finish

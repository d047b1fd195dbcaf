#!/usr/bin/env bash
# shapes_test.sh: one job, one answer (issue 26) on the shapes where galloc's
# commands used to disagree: a window that starts with more reserved than it
# ends with (fit's baseline is replay's), stacks deeper than 64 frames with
# long names (written snapshots keep every frame and time), PyTorch's own
# H200 snapshots replayed to snapshots (the same named frames, event for
# event), a Kineto window with memory in use before it (written as state, not
# events), and --snapshot given twice (refused).
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"
D="$RUNFILES/tests/tools/data"

# ---- a window that starts with 1044 MiB reserved and ends with 40 MiB ----
expect_exit 0 "shrinking window: replay" -- "$GALLOC" replay --json "$D/shrinking_window.pickle"
cp "$TMP/out" "$TMP/sw_replay.json"
expect_exit 0 "shrinking window: fit" -- "$GALLOC" fit --json --bisect 1 "$D/shrinking_window.pickle"
cp "$TMP/out" "$TMP/sw_fit.json"
"$PY" - "$TMP/sw_replay.json" "$TMP/sw_fit.json" <<'PYEOF' || fail "shrinking window: fit's baseline is replay's"
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
f = json.load(open(sys.argv[2]))
MiB = 1 << 20
assert t["seeded"] == {"segments": 2, "live_blocks": 2}, t["seeded"]
c = t["results"][0]
assert c["label"] == "recorded" and c["recorded"], c["label"]
ms = c["memory_stats"]
# the state at the first entry: 1 GiB + 20 MiB reserved, the peak of the window
assert c["peak_reserved_bytes"] == 1044 * MiB, c["peak_reserved_bytes"]
assert ms["reserved_bytes.all.current"] == 40 * MiB, ms["reserved_bytes.all.current"]
(rec,) = [r for r in f["results"] if r["recorded"]]
assert rec["stage"] == "recorded" and rec["fits"], rec
for k, v in (("peak_reserved_bytes", c["peak_reserved_bytes"]), ("peak_allocated_bytes", c["peak_allocated_bytes"]),
             ("peak_requested_bytes", c["peak_requested_bytes"]), ("ooms_total", c["ooms_total"]),
             ("num_device_alloc", ms["num_device_alloc"]), ("num_device_free", ms["num_device_free"]),
             ("num_alloc_retries", ms["num_alloc_retries"])):
    assert rec[k] == v, (k, rec[k], v)
# nothing fits below the state it starts from: the smallest device is that state
assert rec["min_device_memory"] == 1044 * MiB, rec["min_device_memory"]
assert f["pytorch_cuda_alloc_conf"] == "" and f["answer"]["keep_recorded"], f["answer"]
PYEOF
expect_exit 0 "shrinking window: verify" -- "$GALLOC" replay --verify "$D/shrinking_window.pickle"
expect_in "$TMP/out" "^verdict: agrees" "shrinking window: the rebuilt start agrees"

# ---- 100-frame stacks with 300-byte file names: every frame and time kept ----
expect_exit 0 "deep stacks: replay to a snapshot" -- "$GALLOC" replay --snapshot "$TMP/deep.pickle" "$D/deep_stacks.pickle"
"$PY" - "$D/deep_stacks.pickle" "$TMP/deep.pickle" <<'PYEOF' || fail "deep stacks: every frame"
import pickle, sys
want = pickle.load(open(sys.argv[1], "rb"))
got = pickle.load(open(sys.argv[2], "rb"))
w, g = want["device_traces"][0], got["device_traces"][0]
assert [e["action"] for e in g] == [e["action"] for e in w], [e["action"] for e in g]
for a, b in zip(w, g):
    assert len(b["frames"]) == 100, (a["action"], len(b["frames"]))
    assert b["frames"] == a["frames"], a["action"]
    assert b["time_us"] == a["time_us"], (a["action"], a["time_us"], b["time_us"])
# the free's own stacks, not the allocation's
assert g[3]["frames"][1]["name"].startswith("free1_") and g[4]["frames"][1]["name"].startswith("done1_")
live = [b for s in got["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
assert len(live) == 1 and live[0]["frames"] == want["segments"][0]["blocks"][1]["frames"], live
PYEOF

# ---- PyTorch's H200 snapshots: the same named frames, event for event ----
for name in full_default full_expandable full_mixed midrun_default midrun_expandable; do
    snap="$D/h200/torch211_h200_$name.pickle.gz"
    "$GALLOC" replay --snapshot "$TMP/$name.pickle" "$snap" >/dev/null 2>&1
    [ -s "$TMP/$name.pickle" ] || fail "$name: no snapshot written"
    "$PY" - "$snap" "$TMP/$name.pickle" <<'PYEOF' || fail "$name: named frames and times event for event"
import gzip, pickle, sys
want = pickle.load(gzip.open(sys.argv[1]))["device_traces"][0]
got = pickle.load(open(sys.argv[2], "rb"))["device_traces"][0]
BLOCK = ("alloc", "free_requested", "free_completed", "oom")
def named(es):
    return [sum(1 for f in e.get("frames", []) if f["name"] and f["filename"]) for e in es if e["action"] in BLOCK]
assert named(got) == named(want), (sum(named(want)), sum(named(got)))
assert [e["time_us"] for e in got if e["action"] in BLOCK] == [e["time_us"] for e in want if e["action"] in BLOCK]
assert [e["action"] for e in got] == [e["action"] for e in want], "the same entries, none added at the end"
print(sys.argv[1].rsplit("/", 1)[1], sum(named(want)), "named frames in", len(want), "entries")
PYEOF
done

# ---- a Kineto window with 3.82 GiB allocated before it ----
if [ -n "${GALLOC_SHARED_TRACES:-}" ]; then
    expect_exit 0 "HTA: replay to a snapshot" -- "$GALLOC" replay --snapshot "$TMP/hta.pickle" \
        "$GALLOC_SHARED_TRACES/kineto-hta-rank1-memory.json.gz"
    "$PY" - "$TMP/hta.pickle" <<'PYEOF' || fail "HTA: the state before the window is state"
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
(tr,) = [t for t in d["device_traces"] if t]
assert sum(e["action"] == "alloc" for e in tr) == 13385, "only the window's allocations are events"
live_end = sum(b["size"] for s in d["segments"] for b in s["blocks"] if b["state"] == "active_allocated")
net = sum(e["size"] for e in tr if e["action"] == "alloc") - sum(e["size"] for e in tr if e["action"] == "free_completed")
cur = peak = live_end - net  # what MemoryViz's timeline starts from: the live blocks before the window
for e in tr:
    cur += e["size"] if e["action"] == "alloc" else -e["size"] if e["action"] == "free_completed" else 0
    peak = max(peak, cur)
# the trace's own peak Total Allocated is 6,629,508,096; blocks are 512-byte rounded here
assert 6629508096 <= peak <= 6629508096 * 1.003, peak
assert tr[0]["time_us"] == 1669783687404093, tr[0]["time_us"]  # the trace's own ts
PYEOF
else
    echo "skipped: the Kineto window (GALLOC_SHARED_TRACES unset)"
fi

# ---- --snapshot twice would silently replace the first ----
expect_exit 2 "--snapshot twice" -- "$GALLOC" replay --snapshot "$TMP/a.pickle" --snapshot "$TMP/b.pickle" \
    "$D/shrinking_window.pickle"
expect_in "$TMP/err" "given twice; give it once" "--snapshot twice: why"

finish

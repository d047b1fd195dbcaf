#!/usr/bin/env bash
# verify_test.sh: galloc replay of PyTorch snapshots, event by event: --verify
# (agreement by kind, re-alignment, rings that start mid-run rebuilt and
# seeded), device addresses (recorded placement and the address tie-break),
# the oom entry, every device on its own index and size, and what written
# snapshots record. Split from cli_test.sh, whose helpers it shares.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

# ---- --verify ----------------------------------------------------------------
# A scripted workload on a 1 GiB device: 20 MiB large segments, a small one,
# two 100 MiB segments, a split, and an OOM whose retry releases a free segment.
{
    printf 'galloc-trace 1 device_memory 1GiB\n'
    for i in 1 2 3 4 5 6 7; do echo "alloc $i 3MiB"; done
    printf 'alloc 8 1000\nalloc 9 1000\nalloc 10 1000\nalloc 11 100MiB\nalloc 12 100MiB\nfree 11\nalloc 13 60MiB\nfree 12\nalloc 14 2GiB\n'
} >"$TMP/v.trace"
expect_exit 1 "snapshot of the workload" -- "$GALLOC" replay --snapshot "$TMP/v.pickle" "$TMP/v.trace"
expect_exit 1 "replay a snapshot on the device size its oom entry tells" -- "$GALLOC" replay "$TMP/v.pickle"
expect_in "$TMP/out" "(torch, 16 events, sim device 1024.00 MiB)" "device size from the oom entry"
expect_in "$TMP/out" "^device size from the snapshot: reserved + device_free at its oom entries" "device size line"
expect_exit 0 "--device-memory overrides the snapshot's size" -- "$GALLOC" replay --device-memory 4GiB "$TMP/v.pickle"
grep -q "device size from the snapshot" "$TMP/out" && fail "--device-memory still names the snapshot's size"
expect_exit 0 "galloc's own snapshot verifies" -- "$GALLOC" replay --verify "$TMP/v.pickle"
expect_in "$TMP/out" "verify (settings: PyTorch's defaults; sim device 1024.00 MiB)" "device size from the oom entry"
expect_in "$TMP/out" "^device events: 7 of 7 agree" "all device events agree"
expect_in "$TMP/out" "^final segments: 4 of 4 agree" "all final segments agree"
expect_in "$TMP/out" "^verdict: agrees" "verify verdict"
# empty_cache in the traced run: segment_free entries that no allocation's
# OOM path explains are replayed as empty_cache, also when the next
# allocation needs a new segment (the device had room for it); an OOM path's
# releases are left to galloc's own malloc.
printf 'galloc-trace 1 device_memory 1GiB\nalloc 1 30MiB\nalloc 2 5MiB\nfree 1\nempty_cache\nalloc 3 1MiB\nfree 3\nalloc 4 100MiB\nfree 4\nempty_cache\nfree 2\n' >"$TMP/ec.trace"
expect_exit 0 "snapshot with empty_cache" -- "$GALLOC" replay --snapshot "$TMP/ec.pickle" "$TMP/ec.trace"
expect_exit 0 "empty_cache in a snapshot is replayed" -- "$GALLOC" replay --verify "$TMP/ec.pickle"
expect_in "$TMP/out" "^device events: 7 of 7 agree" "empty_cache events agree"
printf 'galloc-trace 1 device_memory 1GiB\nalloc 1 600MiB\nfree 1\nalloc 2 700MiB\nfree 2\nalloc 3 2GiB\n' >"$TMP/ecoom.trace"
expect_exit 1 "snapshot with an OOM-path release" -- "$GALLOC" replay --snapshot "$TMP/ecoom.pickle" "$TMP/ecoom.trace"
expect_exit 0 "an OOM path's release is not replayed twice" -- "$GALLOC" replay --verify "$TMP/ecoom.pickle"
expect_in "$TMP/out" "verify (settings: PyTorch's defaults; sim device 1024.00 MiB)" "ecoom device size"
expect_in "$TMP/out" "^device events: 5 of 5 agree" "OOM-path release events agree"
"$PY" - "$TMP/v.pickle" "$TMP/vd.pickle" "$TMP/vb.pickle" <<'PYEOF' || fail "doctor the snapshot"
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
t = d["device_traces"][0]
seg = [i for i, e in enumerate(t) if e["action"] == "segment_alloc"]
assert seg == [0, 7, 9, 13, 15], seg
t[7]["size"] = 22 << 20  # the second 20 MiB segment_alloc
pickle.dump(d, open(sys.argv[2], "wb"))
t[7]["size"] = 20 << 20
# a final block state (the first 1000-byte block) of segment_alloc #2's segment
next(s for s in d["segments"] if s["address"] == t[9]["addr"])["blocks"][0]["state"] = "inactive"
pickle.dump(d, open(sys.argv[3], "wb"))
PYEOF
expect_exit 1 "doctored segment_alloc diverges" -- "$GALLOC" replay --verify "$TMP/vd.pickle"
expect_in "$TMP/out" "^device events: 6 of 7 agree" "doctored agreement"
expect_in "$TMP/out" "^first divergence at device event 1:" "doctored first divergence"
expect_in "$TMP/out" "snapshot device_traces\[0\]\[7\]: segment_alloc 23068672 bytes (22.00 MiB)" "doctored: the snapshot's side"
expect_in "$TMP/out" "galloc   trace entry 7: segment_alloc 20971520 bytes (20.00 MiB)" "doctored: galloc's side"
expect_in "$TMP/out" "^final segments: 4 of 4 agree" "doctored trace, final state intact"
expect_in "$TMP/out" "^verdict: diverges" "doctored verdict"
expect_exit 1 "doctored json" -- "$GALLOC" replay --verify --json "$TMP/vd.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/out'))['traces'][0]
assert t['verdict'] == 'diverges' and t['device_events'] == {'total': 7, 'agree': 6}, t
f = t['first_divergence']
assert f['device_event'] == 1, f
assert f['snapshot'] == {'entry': 7, 'action': 'segment_alloc', 'size': 22 << 20, 'segment': 1}, f
assert f['galloc'] == {'entry': 7, 'action': 'segment_alloc', 'size': 20 << 20, 'segment': 1}, f
assert t['segment_divergence'] is None
" || fail "doctored json"
expect_exit 1 "doctored block state diverges" -- "$GALLOC" replay --verify "$TMP/vb.pickle"
expect_in "$TMP/out" "^device events: 7 of 7 agree" "block doctored: events agree"
expect_in "$TMP/out" "^final segments: 3 of 4 agree" "block doctored: one segment differs"
expect_in "$TMP/out" "first final-state difference: the segment of segment_alloc #2 (0-based): block 0: snapshot 1024 bytes inactive, galloc 1024 bytes active_allocated" "block doctored: the block"
# A ring buffer that wrapped: galloc's snapshot keeps the last 4 entries only
# (free 12's pair, the segment_free, the oom). The state at the first entry is
# rebuilt backwards from the final segments and seeded.
expect_exit 1 "wrapped snapshot" -- "$GALLOC" replay --snapshot "$TMP/w.pickle" --snapshot-max-entries 4 "$TMP/v.trace"
expect_exit 0 "a trace that starts mid-run verifies from the reconstructed state" -- "$GALLOC" replay --verify "$TMP/w.pickle"
expect_in "$TMP/out" "^the trace starts mid-run: the state at its first entry was reconstructed backwards from the final segments (5 segments, 12 live blocks) and seeded" "mid-run reconstruction"
expect_in "$TMP/out" "^device events: 2 of 2 agree" "mid-run: segment_free and oom agree"
expect_in "$TMP/out" "^final segments: 4 of 4 agree" "mid-run: final segments agree"
expect_exit 0 "mid-run json" -- "$GALLOC" replay --verify --json "$TMP/w.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/out'))['traces'][0]
assert t['seeded'] == {'segments': 5, 'live_blocks': 12} and t['verdict'] == 'agrees', t
" || fail "mid-run json"
# Rings cut anywhere (between a free_requested and its free_completed too) in a
# 600-event mixed workload: each must verify from its reconstructed state.
"$PY" - "$TMP/lcg.trace" <<'PYEOF'
import sys
x = 12345
def rnd():  # a fixed LCG: the same trace on every Python
    global x
    x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
    return x >> 33
sizes = [512, 1000, 4096, 65536, 1 << 20, 3 << 20, 12 << 20, 100 << 20]
s, live = "galloc-trace 1\n", []
for i in range(600):
    if live and rnd() % 100 < 45:
        s += "free %d\n" % live.pop(rnd() % len(live))
    else:
        s += "alloc %d %d\n" % (i, sizes[rnd() % len(sizes)])
        live.append(i)
open(sys.argv[1], "w").write(s)
PYEOF
for n in 3 7 20 50 100 150 200 300 500 800 1000; do
    expect_exit 0 "ring of $n entries: snapshot" -- "$GALLOC" replay --snapshot "$TMP/l$n.pickle" --snapshot-max-entries "$n" "$TMP/lcg.trace"
    expect_exit 0 "ring of $n entries verifies" -- "$GALLOC" replay --verify "$TMP/l$n.pickle"
    expect_in "$TMP/out" "^verdict: agrees" "ring of $n entries agrees"
done
expect_in "$TMP/out" "^device events: 24 of 24 agree" "the whole trace: 24 segment_allocs"
expect_in "$TMP/out" "^final segments: 24 of 24 agree" "the whole trace: 24 segments"
grep -q "mid-run" "$TMP/out" && fail "a ring holding the whole trace is not mid-run"
# A segment marked expandable under settings without expandable segments (its
# trace has segment_alloc/free, not segment_map/unmap): its mapped run is
# reconstructed, but PyTorch's defaults cannot hold it, so its live blocks are
# allocated plainly (as --no-seed would) and that segment differs at the end.
"$PY" -c "
import pickle
d = pickle.load(open('$TMP/w.pickle', 'rb'))
d['segments'][0]['is_expandable'] = True
pickle.dump(d, open('$TMP/we.pickle', 'wb'))" || fail "doctor we.pickle"
expect_exit 1 "a mid-run trace with an expandable segment under the defaults diverges" -- "$GALLOC" replay --verify "$TMP/we.pickle"
expect_in "$TMP/out" "(5 segments, 12 live blocks) and seeded" "expandable under the defaults: seeded"
expect_in "$TMP/out" "^device events: 2 of 2 agree" "expandable under the defaults: device events"
expect_in "$TMP/out" "^final segments: 3 of 4 agree" "expandable under the defaults: final segments"
expect_in "$TMP/out" "(made before the trace): total_size 104857600 in the snapshot, 62914560 in galloc" "expandable under the defaults: the run held as plain blocks"
# The example (a 300-entry ring written by a miniature of PyTorch's allocator):
# device 0 starts mid-run and is seeded; device 1 starts at the beginning.
expect_exit 0 "example snapshot verifies" -- "$GALLOC" replay --verify "$EX/torch_snapshot.pickle"
expect_in "$TMP/out" "reconstructed backwards from the final segments (9 segments, 11 live blocks) and seeded" "example device 0 seeded"
expect_in "$TMP/out" "^device events: 1 of 1 agree" "example device 0 events"
expect_in "$TMP/out" "^final segments: 10 of 10 agree" "example device 0 segments"
# A block live before the window was freed in it with requested 8 MiB in a 9 MiB
# block (the 1 MiB tail was not split off): seeded with its request, its frees
# agree (with its rounded size: free_requested 99 of 100).
expect_in "$TMP/out" "^by kind: segment_alloc 1 of 1, alloc 96 of 96, free_requested 100 of 100, free_completed 100 of 100 " "example: seeded blocks keep their requests"
expect_in "$TMP/out" "^device events: 2 of 2 agree" "example device 1 agrees"
expect_in "$TMP/out" "^final segments: 2 of 2 agree" "example device 1 segments"
# galloc replay (without --verify) seeds the rebuilt state too; --no-seed keeps the prologue.
expect_exit 0 "replay seeds a mid-run snapshot" -- "$GALLOC" replay "$EX/torch_snapshot.pickle"
expect_in "$TMP/out" "^note: the trace starts mid-run: the allocator state at its first entry was rebuilt backwards from the final segments (9 segments, 11 live blocks) and seeded" "replay seeding note"
grep -q "were live before the trace's first entry" "$TMP/out" && fail "seeded replay still reports the prologue"
expect_exit 0 "replay --no-seed" -- "$GALLOC" replay --no-seed "$EX/torch_snapshot.pickle"
expect_in "$TMP/out" "^note: 11 blocks were live before the trace's first entry and were allocated first" "--no-seed prologue"
grep -q "seeded" "$TMP/out" && fail "--no-seed still seeds"
expect_exit 0 "replay seeding json" -- "$GALLOC" replay --json "$EX/torch_snapshot.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/out'))['traces']
assert [x['seeded'] for x in t] == [{'segments': 9, 'live_blocks': 11}, None], [x['seeded'] for x in t]
assert [x['device_memory_from_snapshot'] for x in t] == [False, False]
" || fail "seeded in json"
expect_exit 2 "--verify needs a snapshot" -- "$GALLOC" replay --verify "$TMP/v.trace"
expect_in "$TMP/err" "is not a PyTorch snapshot" "verify of a text trace"
expect_exit 2 "--verify with two confs" -- "$GALLOC" replay --verify --conf "" --conf expandable_segments:True "$TMP/v.pickle"
expect_exit 0 "--verify with --conf" -- "$GALLOC" replay --verify --conf "" "$TMP/v.pickle"

# ---- device addresses: recorded placement and the address tie-break ----------
# CUDA handed out B below A (descending). Both 20 MiB segments are free when c
# comes: PyTorch's best fit takes the lower address (B), so empty_cache releases
# A. Replayed at the recorded addresses galloc does the same; with rising sim
# addresses (A below B) it takes A and releases B.
"$PY" - "$TMP/tie.pickle" <<'PYEOF' || fail "make the tie snapshot"
import pickle, sys
M = 1 << 20
A, B = 0x7f5a40000000, 0x7f5a3e000000
def e(action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": []}
trace = [e("segment_alloc", A, 20 * M), e("alloc", A, 20 * M), e("segment_alloc", B, 20 * M), e("alloc", B, 20 * M),
         e("free_requested", A, 20 * M), e("free_completed", A, 20 * M),
         e("free_requested", B, 20 * M), e("free_completed", B, 20 * M),
         e("alloc", B, 20 * M), e("segment_free", A, 20 * M)]
seg = {"device": 0, "address": B, "total_size": 20 * M, "allocated_size": 20 * M, "active_size": 20 * M,
       "requested_size": 20 * M, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
       "is_expandable": False, "frames": [],
       "blocks": [{"address": B, "size": 20 * M, "requested_size": 20 * M, "state": "active_allocated", "frames": []}]}
pickle.dump({"segments": [seg], "device_traces": [trace], "allocator_settings": {}, "external_annotations": []},
            open(sys.argv[1], "wb"))
PYEOF
expect_exit 0 "recorded addresses: the tie goes as recorded" -- "$GALLOC" replay --verify "$TMP/tie.pickle"
expect_in "$TMP/out" "^device events: 3 of 3 agree" "tie: segment_alloc, segment_alloc, segment_free agree"
expect_in "$TMP/out" "^final segments: 1 of 1 agree" "tie: B holds c"
expect_exit 1 "rising addresses: the tie goes the other way" -- "$GALLOC" replay --verify --conf sim_placement:rising "$TMP/tie.pickle"
expect_in "$TMP/out" "^device events: 2 of 3 agree" "tie under rising: empty_cache frees the other segment"
expect_in "$TMP/out" "^verdict: diverges" "tie under rising diverges"
expect_exit 0 "tie snapshot replayed to a snapshot" -- "$GALLOC" replay --snapshot "$TMP/tie_out.pickle" "$TMP/tie.pickle"
"$PY" -c "
import pickle
d = pickle.load(open('$TMP/tie_out.pickle', 'rb'))
assert [s['address'] for s in d['segments']] == [0x7f5a3e000000], d['segments']
t = [(x['action'], x['addr']) for x in d['device_traces'][0] if x['action'] in ('segment_alloc', 'segment_free')]
assert t == [('segment_alloc', 0x7f5a40000000), ('segment_alloc', 0x7f5a3e000000), ('segment_free', 0x7f5a40000000)], t
" || fail "tie: galloc's snapshot holds the recorded addresses"

# ---- the oom entry records the request rounded to 512 bytes -----------------
# 2 GiB + 1000 bytes on a 1 GiB device: PyTorch's oom entry holds 2147484672
# (the request rounded to 512), not the 2 GiB + 2 MiB segment it tried to make;
# "Tried to allocate" names the segment.
printf 'galloc-trace 1 device_memory 1GiB\nalloc 1 4MiB\nalloc 2 2147484648\nfree 1\n' >"$TMP/oomsz.trace"
expect_exit 1 "oom size: snapshot" -- "$GALLOC" replay --snapshot "$TMP/oomsz.pickle" "$TMP/oomsz.trace"
expect_in "$TMP/out" "Tried to allocate 2.00 GiB" "oom size: the message names the segment"
"$PY" -c "
import pickle
d = pickle.load(open('$TMP/oomsz.pickle', 'rb'))
o = [e for e in d['device_traces'][0] if e['action'] == 'oom']
assert [e['size'] for e in o] == [2147484672], o
" || fail "oom size: the oom entry holds the request rounded to 512 bytes"
expect_exit 0 "oom size: verify" -- "$GALLOC" replay --verify "$TMP/oomsz.pickle"
expect_in "$TMP/out" "^device events: 2 of 2 agree" "oom size: segment_alloc and oom agree"

# ---- --verify re-aligns after a difference, and counts by kind ---------------
# Twelve allocations of distinct sizes, one segment each; the record gets one
# extra 8 MiB segment_alloc after the first. Compared position by position, 12
# of 13 device events would shift (1 of 13 agree); re-aligned, only the extra
# one differs.
"$PY" -c "
s = 'galloc-trace 1 device_memory 4GiB\n' + ''.join('alloc %d %dMiB\n' % (i, 30 + 2 * i) for i in range(12))
open('$TMP/shift.trace', 'w').write(s)"
expect_exit 0 "shift: snapshot" -- "$GALLOC" replay --snapshot "$TMP/shift.pickle" "$TMP/shift.trace"
"$PY" - "$TMP/shift.pickle" <<'PYEOF' || fail "shift: doctor"
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
t = d["device_traces"][0]
assert [e["action"] for e in t[:2]] == ["segment_alloc", "alloc"], t[:2]
t.insert(2, dict(t[0], addr=0x7f0000000000, size=8 << 20))
pickle.dump(d, open(sys.argv[1], "wb"))
PYEOF
expect_exit 1 "shift: verify" -- "$GALLOC" replay --verify "$TMP/shift.pickle"
expect_in "$TMP/out" "^device events: 12 of 13 agree" "shift: one extra event costs one"
expect_in "$TMP/out" "^by kind: segment_alloc 12 of 13, alloc 12 of 12 " "shift: by kind"
expect_in "$TMP/out" "^first divergence at device event 1:" "shift: where"
expect_in "$TMP/out" "snapshot device_traces\[0\]\[2\]: segment_alloc 8388608 bytes" "shift: the extra event"
expect_exit 1 "shift: verify json" -- "$GALLOC" replay --verify --json "$TMP/shift.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/out'))['traces'][0]
assert t['device_events'] == {'total': 13, 'agree': 12}, t
k = t['by_kind']
assert k['segment_alloc'] == {'total': 13, 'agree': 12} and k['alloc'] == {'total': 12, 'agree': 12}, k
assert k['oom'] == {'total': 0, 'agree': 0} and k['free_requested'] == {'total': 0, 'agree': 0}, k
f = t['first_divergence']
assert f['device_event'] == 1 and f['galloc_device_event'] == 1 and f['snapshot']['size'] == 8 << 20, f
" || fail "shift: json by kind"

# ---- every device on its own: three devices, an OOM on device 1 --------------
# Device 1's oom entry bounds its size (20 MiB reserved + 1004 MiB free =
# 1 GiB); devices 0 and 2 recorded none (80 GiB). Messages name GPU 1 and
# galloc's snapshots keep each device's index.
"$PY" - "$TMP/three.pickle" <<'PYEOF' || fail "make the three-device snapshot"
import pickle, sys
M = 1 << 20
def e(action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": []}
def seg(dev, addr, total, blocks):
    return {"device": dev, "address": addr, "total_size": total, "allocated_size": 0, "active_size": 0,
            "requested_size": 0, "stream": 0, "segment_type": "large" if total > 2 * M else "small",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}
def blk(addr, size, state, req=0):
    return {"address": addr, "size": size, "requested_size": req, "state": state, "frames": []}
A0, A1, A2 = 0x7f0000000000, 0x7f1000000000, 0x7f2000000000
t0 = [e("segment_alloc", A0, 2 * M), e("alloc", A0, 512)]
t1 = [e("segment_alloc", A1, 20 * M), e("alloc", A1, 20 * M),
      {"action": "oom", "device_free": 1004 * M, "size": 100 << 30, "stream": 0, "time_us": 0, "frames": []}]
t2 = [e("segment_alloc", A2, 40 * M), e("alloc", A2, 40 * M), e("free_requested", A2, 40 * M),
      e("free_completed", A2, 40 * M)]
segs = [seg(0, A0, 2 * M, [blk(A0, 512, "active_allocated", 512), blk(A0 + 512, 2 * M - 512, "inactive")]),
        seg(1, A1, 20 * M, [blk(A1, 20 * M, "active_allocated", 20 * M)]),
        seg(2, A2, 40 * M, [blk(A2, 40 * M, "inactive")])]
pickle.dump({"segments": segs, "device_traces": [t0, t1, t2], "allocator_settings": {}, "external_annotations": []},
            open(sys.argv[1], "wb"))
PYEOF
expect_exit 1 "three devices: replay" -- "$GALLOC" replay --snapshot "$TMP/three_out.pickle" "$TMP/three.pickle"
expect_in "$TMP/out" "device 0 (torch, 1 events, sim device 80.00 GiB)" "three: device 0 size"
expect_in "$TMP/out" "device 1 (torch, 2 events, sim device 1024.00 MiB)" "three: device 1 on its own size"
expect_in "$TMP/out" "device 2 (torch, 2 events, sim device 80.00 GiB)" "three: device 2 size"
expect_in "$TMP/out" "GPU 1 has a total capacity of at least 1024.00 MiB of which 1004.00 MiB is free" "three: the OOM names GPU 1"
"$PY" -c "
import pickle
for u, dev in ((1, 0), (2, 1), (3, 2)):
    d = pickle.load(open('$TMP/three_out.%d.pickle' % u, 'rb'))
    assert [s['device'] for s in d['segments']] == [dev], (u, d['segments'])
    assert len(d['device_traces']) == dev + 1 and d['device_traces'][dev], (u, d['device_traces'])
" || fail "three: galloc's snapshots keep the device index"
expect_exit 0 "three devices: verify" -- "$GALLOC" replay --verify "$TMP/three.pickle"
expect_in "$TMP/out" "three.pickle device 1: verify (settings: PyTorch's defaults; sim device 1024.00 MiB)" "three: verify device 1"
[ "$(grep -c '^verdict: agrees' "$TMP/out")" = 3 ] || fail "three: every device agrees"
expect_exit 1 "three devices: fit" -- "$GALLOC" fit "$TMP/three.pickle"
# The header names no single size when the units run on sizes of their own;
# a device without a recorded size says which it got.
expect_in "$TMP/out" "^galloc fit: 3 traces, 5 events, sim device: each trace's own size$" "three: fit header"
expect_in "$TMP/out" "^  #1 .*three.pickle device 0 (no recorded size: on 80.00 GiB)" "three: device 0 has no size"
expect_in "$TMP/out" "^  #2 .*three.pickle device 1 (on its own size: 1024.00 MiB)" "three: fit runs device 1 on its size"
expect_exit 1 "three devices: fit on one size" -- "$GALLOC" fit --device-memory 1GiB "$TMP/three.pickle"
expect_in "$TMP/out" "^galloc fit: 3 traces, 5 events, sim device 1024.00 MiB$" "three: --device-memory, one size"
expect_in "$TMP/out" "^   1  no  .*#2:1 genuine  *(recorded: PyTorch's defaults)" "three: fit finds device 1's OOM (the job's own run ranks first in a tie)"

# ---- written snapshots record PyTorch's settings keys only -------------------
expect_exit 0 "settings: snapshot" -- "$GALLOC" replay --conf max_split_size_mb:64 --snapshot "$TMP/set.pickle" "$TMP/tie.pickle"
"$PY" -c "
import pickle
d = pickle.load(open('$TMP/set.pickle', 'rb'))
assert d['allocator_settings']['PYTORCH_CUDA_ALLOC_CONF'] == 'max_split_size_mb:64', d['allocator_settings']
" || fail "settings: no sim_capacity or sim_placement in PYTORCH_CUDA_ALLOC_CONF"

# ---- recorded frames travel into galloc's snapshot ----------------------------
expect_exit 0 "frames: snapshot of the example" -- "$GALLOC" replay --snapshot "$TMP/fr.pickle" "$EX/torch_snapshot.pickle"
"$PY" -c "
import pickle
r = pickle.load(open('$EX/torch_snapshot.pickle', 'rb'))['device_traces'][0]
g = pickle.load(open('$TMP/fr.1.pickle', 'rb'))['device_traces'][0]
key = lambda fs: [(f['filename'], f['line'], f['name']) for f in fs]
for k in ('alloc', 'free_requested'):
    a = [key(e['frames']) for e in r if e['action'] == k]
    b = [key(e['frames']) for e in g if e['action'] == k]
    assert len(a) in (96, 100) and a == b, (k, len(a), len(b))
assert key([e for e in g if e['action'] == 'alloc'][0]['frames']) == [('train.py', 52, 'step')]
" || fail "frames: the user's code in galloc's trace entries"

# ---- seeding: every clue to a pre-window block's size, requests as recorded ----
# B at X was live before the window: its free says 8 MiB, but C was allocated
# at X + 9 MiB while B was live, and a 1 MiB gap cannot be a free block of the
# large pool: B was 9 MiB with its 1 MiB tail unsplit. Seeded so, and with its
# 8 MiB request: the final segment agrees and peak requested is 8 + 10 MiB.
"$PY" - "$TMP/clue.pickle" <<'PYEOF' || fail "make the clue snapshot"
import pickle, sys
M = 1 << 20
X = 0x7f0040000000
def e(action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": []}
trace = [e("alloc", X + 9 * M, 10 * M), e("free_requested", X, 8 * M), e("free_completed", X, 8 * M)]
blocks = [{"address": X, "size": 9 * M, "requested_size": 0, "state": "inactive", "frames": []},
          {"address": X + 9 * M, "size": 10 * M, "requested_size": 10 * M, "state": "active_allocated", "frames": []},
          {"address": X + 19 * M, "size": 21 * M, "requested_size": 0, "state": "inactive", "frames": []}]
seg = {"device": 0, "address": X, "total_size": 40 * M, "allocated_size": 10 * M, "active_size": 10 * M,
       "requested_size": 10 * M, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
       "is_expandable": False, "frames": [], "blocks": blocks}
pickle.dump({"segments": [seg], "device_traces": [trace], "allocator_settings": {}, "external_annotations": []},
            open(sys.argv[1], "wb"))
PYEOF
expect_exit 0 "clue: verify" -- "$GALLOC" replay --verify "$TMP/clue.pickle"
expect_in "$TMP/out" "^by kind: alloc 1 of 1, free_requested 1 of 1, free_completed 1 of 1 " "clue: frees carry the 8 MiB request"
expect_in "$TMP/out" "^final segments: 1 of 1 agree" "clue: B is 9 MiB"
expect_exit 0 "clue: replay json" -- "$GALLOC" replay --json "$TMP/clue.pickle"
"$PY" -c "
import json
r = json.load(open('$TMP/out'))['traces'][0]['results'][0]
assert (r['peak_requested_bytes'], r['peak_allocated_bytes'], r['peak_reserved_bytes']) == (18874368, 19922944, 41943040), r
" || fail "clue: seeded peaks are the run's (18 MiB requested, 19 MiB allocated, 40 MiB reserved)"

finish

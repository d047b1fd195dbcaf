#!/usr/bin/env bash
# verify_honest_test.sh: what galloc replay --verify says when the comparison
# could prove nothing or the record holds what no replay reproduces: "nothing
# to verify" (exit 3) with its reason, orphan entries named and left out,
# segment pool ids compared by correspondence, and block sizes and states.
# The snapshots are written by python3's pickle, as PyTorch's _dump_snapshot
# writes them.
. "${TEST_SRCDIR:-.}/${TEST_WORKSPACE:-galloc}/tests/tools/cli_lib.sh"

"$PY" - "$TMP" <<'PYEOF' || fail "make the snapshots"
import os, pickle, sys
d = sys.argv[1]
M = 1 << 20
X = 0x7f0040000000
def e(action, addr, size):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": 0, "frames": []}
def blk(addr, size, state, req=0):
    return {"address": addr, "size": size, "requested_size": req, "state": state, "frames": []}
def seg(addr, total, blocks, pool=(0, 0), small=False, device=0):
    return {"device": device, "address": addr, "total_size": total, "allocated_size": 0, "active_size": 0,
            "requested_size": 0, "stream": 0, "segment_type": "small" if small else "large",
            "segment_pool_id": pool, "is_expandable": False, "frames": [], "blocks": blocks}
def dump(name, segs, traces):
    pickle.dump({"segments": segs, "device_traces": traces, "allocator_settings": {}, "external_annotations": []},
                open(os.path.join(d, name), "wb"))
live = [blk(X, 4 * M, "active_allocated", 4 * M), blk(X + 4 * M, 16 * M, "inactive")]
dump("empty.pickle", [], [])
dump("notrace.pickle", [seg(X, 20 * M, live)], [])
dump("snaponly.pickle", [seg(X, 20 * M, live)], [[{"action": "snapshot", "addr": 0, "size": 0, "stream": 0}]])
pickle.dump([seg(X, 20 * M, live)], open(os.path.join(d, "list.pickle"), "wb"))
# device 0 has a whole trace, device 1 only segments
Y = 0x7f1000000000
dump("two.pickle", [seg(X, 20 * M, live), seg(Y, 20 * M, [blk(Y, 20 * M, "inactive")], device=1)],
     [[e("segment_alloc", X, 20 * M), e("alloc", X, 4 * M)], []])
# a free_completed of an address no segment holds and the trace never allocated
dump("orphan.pickle", [], [[e("free_completed", X, 4 * M)]])
# ... and a free pair of such an address among entries that agree
Z = X + (1 << 30)
dump("orphan2.pickle", [seg(X, 20 * M, live)],
     [[e("segment_alloc", X, 20 * M), e("alloc", X, 4 * M), e("free_requested", Z, 512), e("free_completed", Z, 512)]])
# a segment freed twice with no segment_alloc between
dump("segfree2.pickle", [],
     [[e("segment_alloc", X, 20 * M), e("alloc", X, 20 * M), e("free_requested", X, 20 * M),
       e("free_completed", X, 20 * M), e("segment_free", X, 20 * M), e("segment_free", X, 20 * M)]])
# a segment the trace made in a private pool (a graph capture): the replay does not capture
dump("capture.pickle", [seg(X, 20 * M, [blk(X, 20 * M, "active_allocated", 20 * M)], pool=(0, 1))],
     [[e("segment_alloc", X, 20 * M), e("alloc", X, 20 * M)]])
# Mid-run, a block the user freed that still waits on a stream at the end (P,
# active_pending_free, untouched by the trace: pending at the first entry
# too), a live block (Q) and one freed in the window (R).
dump("pend.pickle", [seg(X, 20 * M, [blk(X, 4 * M, "active_pending_free", 4 * M),
                                     blk(X + 4 * M, 4 * M, "active_allocated", 4 * M), blk(X + 8 * M, 12 * M, "inactive")])],
     [[e("free_requested", X + 8 * M, 4 * M), e("free_completed", X + 8 * M, 4 * M)]])
# ... and an allocation after R's free, P still pending at the end
dump("pend_alloc.pickle", [seg(X, 20 * M, [blk(X, 4 * M, "active_pending_free", 4 * M),
                                           blk(X + 4 * M, 4 * M, "active_allocated", 4 * M),
                                           blk(X + 8 * M, 4 * M, "active_allocated", 4 * M), blk(X + 12 * M, 8 * M, "inactive")])],
     [[e("free_requested", X + 8 * M, 4 * M), e("free_completed", X + 8 * M, 4 * M), e("alloc", X + 8 * M, 4 * M)]])
# Mid-run, two segments of a graph pool (G1 large, G2 small) beside default
# ones (D1, D2, and D4, which an empty_cache releases). PyTorch put the 10 MiB
# request in D1's 14 MiB gap and the 1000 bytes in D2, not in the graph pool's
# smaller free blocks (12 MiB, 2 MiB - 512), which best fit would pick if they
# were in the default pools; and empty_cache keeps a private pool's segments.
X0, X1, X2, X3, X4 = X, X - (32 << 20), X - (64 << 20), X - (96 << 20), X - (128 << 20)
def pools(name, pool):
    dump(name, [seg(X3, 2 * M, [blk(X3, 1024, "active_allocated", 1000), blk(X3 + 1024, 2 * M - 1024, "inactive")], small=True),
                seg(X2, 2 * M, [blk(X2, 512, "active_allocated", 512), blk(X2 + 512, 2 * M - 512, "inactive")], pool=pool,
                    small=True),
                seg(X1, 20 * M, [blk(X1, 8 * M, "active_allocated", 8 * M), blk(X1 + 8 * M, 12 * M, "inactive")], pool=pool),
                seg(X0, 20 * M, [blk(X0, 6 * M, "active_allocated", 6 * M), blk(X0 + 6 * M, 10 * M, "active_allocated", 10 * M),
                                 blk(X0 + 16 * M, 4 * M, "inactive")])],
         [[e("alloc", X0 + 6 * M, 10 * M), e("alloc", X3, 1000), e("segment_free", X4, 20 * M)]])
pools("pool01.pickle", (0, 1))
pools("pool50.pickle", (5, 0))  # a MemPool's id: galloc's pool takes it (galloc_mempool_create_id)
pools("pool00.pickle", (0, 0))  # the same segments in the default pools: what the seed did before
PYEOF

# ---- nothing to verify (exit 3), with the reason --------------------------------
expect_exit 3 "no segments, no trace" -- "$GALLOC" replay --verify "$TMP/empty.pickle"
expect_in "$TMP/out" "^nothing to verify: the snapshot holds no trace entries and no segments for device 0$" "empty: reason"
expect_in "$TMP/out" "^verdict: nothing to verify$" "empty: verdict"
grep -q "agrees" "$TMP/out" && fail "empty: a snapshot with nothing in it agrees"
[ -s "$TMP/err" ] && fail "empty: nothing to verify is no error: $(cat "$TMP/err")"
for f in notrace list; do
    expect_exit 3 "$f: segments without a trace" -- "$GALLOC" replay --verify "$TMP/$f.pickle"
    expect_in "$TMP/out" "^nothing to verify: the snapshot has no trace; its segments are the replay's own starting state$" "$f: reason"
    expect_in "$TMP/out" "^verdict: nothing to verify$" "$f: verdict"
    grep -q "^device events" "$TMP/out" && fail "$f: segments compared with themselves"
done
expect_exit 3 "a trace of a snapshot entry only" -- "$GALLOC" replay --verify "$TMP/snaponly.pickle"
expect_in "$TMP/out" "^nothing to verify: the trace's 1 entries hold no device event and no block event the replay reproduces, so its final segments are the replay's own starting state$" "snapshot entry only: reason"
expect_exit 3 "nothing to verify: json" -- "$GALLOC" replay --verify --json "$TMP/notrace.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/out'))['traces']
assert len(t) == 1, t
t = t[0]
assert t['verdict'] == 'nothing to verify' and t['error'] is None, t
assert t['reason'] == \"the snapshot has no trace; its segments are the replay's own starting state\", t
assert t['orphan_entries'] == 0 and t['first_orphan'] is None and 'device_events' not in t, t
" || fail "nothing to verify: json"
# Several units: the worst of cannot verify, diverges, agrees; 3 only when every unit had nothing.
expect_exit 0 "device 0 agrees, device 1 has nothing" -- "$GALLOC" replay --verify "$TMP/two.pickle"
[ "$(grep -c '^verdict: agrees$' "$TMP/out")" = 1 ] || fail "two devices: device 0 agrees"
[ "$(grep -c '^verdict: nothing to verify$' "$TMP/out")" = 1 ] || fail "two devices: device 1 has nothing"
expect_exit 3 "two files with nothing" -- "$GALLOC" replay --verify "$TMP/empty.pickle" "$TMP/list.pickle"
expect_exit 0 "an agreeing file and one with nothing" -- "$GALLOC" replay --verify "$TMP/list.pickle" "$TMP/two.pickle"

# ---- orphan entries: named, not compared ---------------------------------------
expect_exit 3 "a trace of one orphan free_completed" -- "$GALLOC" replay --verify "$TMP/orphan.pickle"
expect_in "$TMP/out" "^1 orphan entry: device_traces\[0\]\[0\] free_completed of 0x7f0040000000 which the trace never allocated and no segment holds$" "orphan: named"
expect_in "$TMP/out" "^nothing to verify: the trace holds only orphan entries (1), which no replay reproduces$" "orphan: reason"
grep -q "free_completed 0 of 1" "$TMP/out" && fail "orphan: compared as a free_completed galloc missed"
expect_exit 0 "an orphan free pair beside entries that agree" -- "$GALLOC" replay --verify "$TMP/orphan2.pickle"
expect_in "$TMP/out" "^2 orphan entries, the first: device_traces\[0\]\[2\] free_requested of 0x7f0080000000 which the trace never allocated and no segment holds$" "orphan2: named"
expect_in "$TMP/out" "^by kind: segment_alloc 1 of 1, alloc 1 of 1 (" "orphan2: the orphans are not compared"
expect_in "$TMP/out" "^verdict: agrees$" "orphan2: verdict"
expect_exit 0 "orphans: json" -- "$GALLOC" replay --verify --json "$TMP/orphan2.pickle"
"$PY" -c "
import json
t = json.load(open('$TMP/out'))['traces'][0]
assert t['orphan_entries'] == 2 and t['reason'] is None and t['verdict'] == 'agrees', t
assert t['first_orphan'] == {'entry': 2, 'action': 'free_requested', 'addr': 0x7f0080000000,
                             'why': 'which the trace never allocated and no segment holds'}, t
assert t['by_kind']['free_requested'] == {'total': 0, 'agree': 0}, t
" || fail "orphans: json"
expect_exit 0 "a segment freed twice" -- "$GALLOC" replay --verify "$TMP/segfree2.pickle"
expect_in "$TMP/out" "^1 orphan entry: device_traces\[0\]\[5\] segment_free of 0x7f0040000000 which the trace had already freed$" "segment freed twice: named"
expect_in "$TMP/out" "^device events: 2 of 2 agree" "segment freed twice: the rest agrees"

# ---- segment pool ids ----------------------------------------------------------
expect_exit 1 "a segment the trace made in a private pool" -- "$GALLOC" replay --verify "$TMP/capture.pickle"
expect_in "$TMP/out" "^final segments: 0 of 1 agree" "capture: the segment differs"
expect_in "$TMP/out" "^first final-state difference: the segment of segment_alloc #0 (0-based): segment_pool_id (0, 1) in the snapshot, (0, 0) in galloc$" "capture: the pool ids"
expect_in "$TMP/out" "^verdict: diverges$" "capture: verdict"

# ---- a mid-run start state keeps its pending frees and private pools -------------
# P is seeded pending (recorded on the replay's side stream, then freed) and
# stays so: nothing allocates after it. Before, the seed allocated it
# plainly, as --no-seed's prologue still does, and verify said "block 0:
# snapshot 4194304 bytes active_pending_free, galloc 4194304 bytes
# active_allocated".
expect_exit 0 "pending at the first entry and at the end" -- "$GALLOC" replay --verify "$TMP/pend.pickle"
expect_in "$TMP/out" "^the trace starts mid-run: the state at its first entry was reconstructed backwards from the final segments (1 segments, 3 live blocks) and seeded, 1 of the blocks pending free (waiting on a stream)$" "pending: seeded"
expect_in "$TMP/out" "^device events: 0 of 0 agree" "pending: no device event"
expect_in "$TMP/out" "^by kind: free_requested 1 of 1, free_completed 1 of 1 (" "pending: R's free"
expect_in "$TMP/out" "^final segments: 1 of 1 agree" "pending: P still pending"
expect_in "$TMP/out" "^verdict: agrees$" "pending: verdict"
expect_exit 2 "pending: --no-seed cannot verify a mid-run trace" -- "$GALLOC" replay --verify --no-seed "$TMP/pend.pickle"
expect_exit 0 "pending: replay's snapshot" -- "$GALLOC" replay --snapshot "$TMP/pend_out.pickle" "$TMP/pend.pickle"
expect_exit 0 "pending: --no-seed replay's snapshot" -- "$GALLOC" replay --no-seed --snapshot "$TMP/pend_ns.pickle" "$TMP/pend.pickle"
"$PY" -c "
import pickle
def blocks(f):
    return [(b['size'] >> 20, b['state']) for s in pickle.load(open(f, 'rb'))['segments'] for b in s['blocks']]
assert blocks('$TMP/pend_out.pickle') == [(4, 'active_pending_free'), (4, 'active_allocated'), (12, 'inactive')], blocks('$TMP/pend_out.pickle')
ns = blocks('$TMP/pend_ns.pickle')
assert (4, 'active_pending_free') not in ns and ns.count((4, 'active_allocated')) == 2, ns
" || fail "pending: seeded pending, --no-seed allocated"
# The sim device completes an event when it is recorded, so the next
# allocation returns a deferred free to the cache, seeded or replayed
# (docs/trace-format.md): PyTorch's P still waited there, galloc's did not.
expect_exit 1 "pending, then an allocation" -- "$GALLOC" replay --verify "$TMP/pend_alloc.pickle"
expect_in "$TMP/out" "^by kind: alloc 1 of 1, free_requested 1 of 1, free_completed 1 of 2 (" "pending then alloc: galloc completes P"
expect_in "$TMP/out" "^first final-state difference: the segment at 0x7f0040000000 (made before the trace): block 0: snapshot 4194304 bytes active_pending_free, galloc 4194304 bytes active_allocated$" "pending then alloc: P's place reused"
# The graph pool's segments are seeded in a galloc MemPool: the replay's
# allocations and empty_cache leave them alone, as PyTorch's did.
for f in pool01 pool50; do
    expect_exit 0 "$f: private pool segments mid-run" -- "$GALLOC" replay --verify "$TMP/$f.pickle"
    expect_in "$TMP/out" "^the trace starts mid-run: the state at its first entry was reconstructed backwards from the final segments (5 segments, 3 live blocks) and seeded, 2 segments in 1 private pools (MemPool or CUDA graph)$" "$f: seeded"
    expect_in "$TMP/out" "^device events: 1 of 1 agree" "$f: D4's segment_free only"
    expect_in "$TMP/out" "^by kind: segment_free 1 of 1, alloc 2 of 2 (" "$f: by kind"
    expect_in "$TMP/out" "^final segments: 4 of 4 agree" "$f: pools by correspondence"
    expect_in "$TMP/out" "^verdict: agrees$" "$f: verdict"
done
expect_exit 0 "pool50: replay's snapshot" -- "$GALLOC" replay --snapshot "$TMP/pool50_out.pickle" "$TMP/pool50.pickle"
"$PY" -c "
import pickle
d = pickle.load(open('$TMP/pool50_out.pickle', 'rb'))
assert [tuple(s['segment_pool_id']) for s in d['segments']] == [(0, 0), (5, 0), (5, 0), (0, 0)], d['segments']
" || fail "pool50: the replay's snapshot names the pool by its recorded id (5, 0)"
# The same segments in the default pools (the seed's old placement of them):
# best fit takes the graph pool's blocks and empty_cache releases D2.
expect_exit 1 "pool00: default pools" -- "$GALLOC" replay --verify "$TMP/pool00.pickle"
expect_in "$TMP/out" "^device events: 1 of 2 agree" "pool00: an extra segment_free"
expect_in "$TMP/out" "^final segments: 0 of 4 agree" "pool00: every segment differs"
expect_in "$TMP/out" "^verdict: diverges$" "pool00: verdict"

# ---- block sizes and states of the final segments -------------------------------
printf 'galloc-trace 1\nalloc 1 4MiB\nalloc 2 3MiB\nalloc 3 1000\n' >"$TMP/blk.trace"
expect_exit 0 "blocks: snapshot" -- "$GALLOC" replay --snapshot "$TMP/blk.pickle" "$TMP/blk.trace"
expect_exit 0 "blocks: galloc's own snapshot agrees" -- "$GALLOC" replay --verify "$TMP/blk.pickle"
expect_in "$TMP/out" "^final segments: 2 of 2 agree" "blocks: both segments"
"$PY" - "$TMP/blk.pickle" "$TMP/blksize.pickle" <<'PYEOF' || fail "doctor the block size"
import pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
b = next(s for s in d["segments"] if s["total_size"] == 20 << 20)["blocks"]
assert [x["size"] for x in b[:2]] == [4 << 20, 3 << 20], b
b[0]["size"] -= 512  # the tiling holds: the next block starts 512 bytes earlier
b[1]["size"] += 512
b[1]["address"] -= 512
pickle.dump(d, open(sys.argv[2], "wb"))
PYEOF
expect_exit 1 "a block's size differs" -- "$GALLOC" replay --verify "$TMP/blksize.pickle"
expect_in "$TMP/out" "^final segments: 1 of 2 agree" "block size: one segment differs"
expect_in "$TMP/out" "^first final-state difference: the segment of segment_alloc #0 (0-based): block 0: snapshot 4193792 bytes active_allocated, galloc 4194304 bytes active_allocated$" "block size: named with both sides"

# ---- the exit statuses are documented --------------------------------------------
expect_exit 0 "help" -- "$GALLOC" replay --help
expect_in "$TMP/out" "^--verify: 0 agrees, 1 diverges, 2 cannot verify (bad input, or a mid-run state that$" "help: exit statuses"
expect_in "$TMP/out" "3 nothing to verify" "help: exit 3"

finish

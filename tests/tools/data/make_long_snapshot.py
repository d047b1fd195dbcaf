#!/usr/bin/env python3
"""Write torch211_h200_long_default.pickle.gz: a 3.5 MB snapshot of a longer run.

Issue 38's complaint was `galloc replay --verify` on 3-4 MB snapshots (the
recorded ones of h200/ are 1.5 MB). This one is h200/torch211_h200_full_default
run for longer: its trace up to the oom entry holds a window after which the
allocator is back in the same state (the same live blocks at the same
addresses, the same segments: entries 5504..8714, about three of its training
steps), and that window is replayed EXTRA more times before the rest of the
trace (the oom), each copy's times shifted by the window's length. So the run
is about 8 + 24 steps, 34,404 entries, consistent entry for entry as PyTorch
would have recorded it: the same final segments, every free of an address it
allocated.
The copies share the recorded frame lists as PyTorch's own pickle shares them
(pickle memoizes one object written twice), so the file grows by the entries
only, as a longer recording does.

verify_memory_test replays it with and without --verify.

Deterministic: `python3 tests/tools/data/make_long_snapshot.py` rewrites the
same bytes (pickle protocol 4 like PyTorch's, gzip without a name or time).
"""
import gzip
import os
import pickle

EXTRA = 8  # copies of the steady window

here = os.path.dirname(os.path.abspath(__file__))
with gzip.open(os.path.join(here, "h200", "torch211_h200_full_default.pickle.gz")) as f:
    snap = pickle.load(f)
trace = snap["device_traces"][0]
stop = next((i for i, e in enumerate(trace) if e["action"] == "oom"), len(trace))

# The longest window [lo+1, hi] before the oom after which the live blocks and
# the segments are as they were after entry lo.
live, segs, first, window = {}, {}, {}, None
for i, e in enumerate(trace[:stop]):
    a = e["action"]
    if a == "alloc":
        live[e["addr"]] = e["size"]
    elif a == "free_completed":
        live.pop(e["addr"], None)
    elif a == "segment_alloc":
        segs[e["addr"]] = e["size"]
    elif a == "segment_free":
        segs.pop(e["addr"], None)
    state = (frozenset(live.items()), frozenset(segs.items()))
    if state in first and (window is None or i - first[state] > window[1] - window[0]):
        window = (first[state], i)
    first.setdefault(state, i)
lo, hi = window
assert (lo, hi) == (5503, 8714), window
steady = trace[lo + 1:hi + 1]
span = steady[-1]["time_us"] - trace[lo]["time_us"]

longer = trace[:hi + 1]
for k in range(1, EXTRA + 1):
    longer += [dict(e, time_us=e["time_us"] + k * span) for e in steady]
longer += [dict(e, time_us=e["time_us"] + EXTRA * span) for e in trace[hi + 1:]]
snap["device_traces"][0] = longer

with open(os.path.join(here, "torch211_h200_long_default.pickle.gz"), "wb") as raw:
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as f:
        pickle.dump(snap, f, protocol=4)

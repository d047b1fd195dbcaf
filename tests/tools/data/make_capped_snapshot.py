#!/usr/bin/env python3
"""Write capped_second_entry.pickle (regression_test: cap inference).

A snapshot whose memory-fraction-capped OOM is its trace's second entry: a 60 MiB
segment and a 60 MiB block in it, then an oom of 8 MiB with 4 GiB free on the device
(a fraction refused it), then the block's free. The replay "before the capped OOM" is the
first entry alone; the cap lies in [60 MiB, 80 MiB): the 8 MiB request needs a 20 MiB
segment.

Deterministic: `python3 tests/tools/data/make_capped_snapshot.py` rewrites the same bytes.
"""
import os
import pickle

MiB = 1 << 20
B = 0x7F8000000000
FR = [{"filename": "train.py", "line": 41, "name": "forward"}]
snap = {
    "segments": [{"device": 0, "address": B, "total_size": 60 * MiB, "allocated_size": 0, "active_size": 0,
                  "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                  "is_expandable": False, "frames": [],
                  "blocks": [{"address": B, "size": 60 * MiB, "requested_size": 0, "state": "inactive",
                              "frames": []}]}],
    "device_traces": [[
        {"action": "segment_alloc", "addr": B, "size": 60 * MiB, "stream": 0, "time_us": 1},
        {"action": "alloc", "addr": B, "size": 60 * MiB, "stream": 0, "time_us": 2, "frames": FR},
        {"action": "oom", "size": 8 * MiB, "stream": 0, "device_free": 4 << 30, "time_us": 3},
        {"action": "free_requested", "addr": B, "size": 60 * MiB, "stream": 0, "time_us": 4},
        {"action": "free_completed", "addr": B, "size": 60 * MiB, "stream": 0, "time_us": 5}]],
}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "capped_second_entry.pickle"), "wb") as f:
    pickle.dump(snap, f, protocol=4)

#!/usr/bin/env python3
"""Write live_block_no_size.pickle (seed_test: a start state galloc refuses to rebuild).

A PyTorch 1.13-style bare list of segments whose small segment lists an empty dict
between its allocated block and its free remainder: a block that is not inactive and
has no size. Rebuilding the start state must refuse it with a message naming the block,
not seed a live block of 0 bytes (found by seed_fuzz).

Deterministic: `python3 tests/tools/data/make_seed_refusals.py` rewrites the same bytes.
"""
import os
import pickle

MiB = 1 << 20
A, C = 0x7F0000000000, 0x7F0020000000
FR = [{"filename": "train.py", "line": 42, "name": "forward"}]


def hist(addr, real):
    return [{"addr": addr, "real_size": real, "frames": FR}]


segments = [
    {"device": 0, "address": A, "total_size": 20 * MiB, "allocated_size": 20 * MiB, "active_size": 20 * MiB,
     "requested_size": 20 * MiB - 100, "stream": 0, "segment_type": "large",
     "blocks": [{"size": 20 * MiB, "state": "active_allocated", "history": hist(A, 20 * MiB - 100)}]},
    {"device": 0, "address": C, "total_size": 2 * MiB, "allocated_size": 1024, "active_size": 1024,
     "requested_size": 1000, "stream": 0, "segment_type": "small",
     "blocks": [{"size": 1024, "state": "active_allocated", "history": hist(C, 1000)}, {},
                {"size": 2 * MiB - 1024, "state": "inactive"}]},
]
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "live_block_no_size.pickle"), "wb") as f:
    pickle.dump(segments, f, protocol=2)

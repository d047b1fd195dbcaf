#!/usr/bin/env python3
"""Write the snapshot shapes galloc replay --snapshot must carry through
(snapshot_shapes_test.sh), each a PyTorch 2.x _dump_snapshot dict:

shape_state_only.pickle: segments and no trace (device_traces [[]]), as
  _snapshot() writes when the history was never recorded: a 20 MiB segment
  with an allocated block, a block freed by the user and still waiting on a
  stream (active_pending_free) and a cached rest; a small-pool segment with a
  512-byte block. Blocks and segments carry frames.
shape_oom_marker.pickle: the same state, whose trace is one "snapshot" marker
  (what PyTorch 2.0's one-entry default history keeps of an OOM snapshot).
shape_graph_pools.pickle: a state of four segments, three in CUDA-graph pools:
  (0, 2) at the lowest address, then a small and a large one of (0, 1), and
  one of the default pool (0, 0).
shape_markers.pickle: a whole trace (it starts with a segment_alloc) with a
  "snapshot" marker after the first allocation and another after a free, each
  with its time and the active bytes then.

Deterministic: `python3 tests/tools/data/make_snapshot_shapes.py` rewrites
the same bytes (pickle protocol 4, as Python 3.8+ writes by default).
"""
import os
import pickle

M = 1 << 20
X = 0x7F5A00000000  # a CUDA-like device address, 2 MiB aligned
T0 = 1_700_000_000_000_000  # microseconds

SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False, "roundup_power2_divisions": {}}


def frames(*fs):
    return [{"filename": f, "name": n, "line": line} for f, n, line in fs]


F_SEG1 = frames(("model.py", "__init__", 12), ("train.py", "main", 3))
F_SEG2 = frames(("embed.py", "lookup", 7), ("train.py", "main", 3))
F_A = frames(("model.py", "forward", 41), ("train.py", "step", 20), ("train.py", "main", 3))
F_B = frames(("model.py", "backward", 88), ("train.py", "step", 21), ("train.py", "main", 3))
F_C = frames(("embed.py", "forward", 9), ("train.py", "step", 20), ("train.py", "main", 3))
F_D = frames(("graph.py", "capture", 5), ("train.py", "main", 3))


def blk(addr, size, state, req=0, fr=None):
    return {"address": addr, "size": size, "requested_size": req, "state": state, "frames": fr or []}


def seg(addr, blocks, small=False, pool=(0, 0), fr=None):
    live = [b for b in blocks if b["state"] != "inactive"]
    return {"device": 0, "address": addr, "total_size": sum(b["size"] for b in blocks),
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in live), "requested_size": sum(b["requested_size"] for b in live),
            "stream": 0, "segment_type": "small" if small else "large", "segment_pool_id": pool,
            "is_expandable": False, "frames": fr or [], "blocks": blocks}


def entry(action, addr, size, us, fr=None):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": T0 + us,
         "compile_context": "N/A", "user_metadata": ""}
    if fr is not None:
        e["frames"] = fr
    return e


def snapshot(segments, trace):
    return {"segments": segments, "device_traces": [trace], "allocator_settings": SETTINGS,
            "external_annotations": []}


S2 = X + 32 * M
STATE = [
    seg(X, [blk(X, 4 * M, "active_allocated", 4_000_000, F_A),
            blk(X + 4 * M, 2 * M, "active_pending_free", 2_000_000, F_B),
            blk(X + 6 * M, 14 * M, "inactive", 0)], fr=F_SEG1),
    seg(S2, [blk(S2, 512, "active_allocated", 100, F_C), blk(S2 + 512, 2 * M - 512, "inactive")], small=True,
        fr=F_SEG2),
]
ACTIVE = 4 * M + 2 * M + 512

G2, G1S, G1L = X - 96 * M, X - 64 * M, X - 32 * M
POOLS = [
    seg(G2, [blk(G2, 6 * M, "active_allocated", 6 * M, F_A), blk(G2 + 6 * M, 14 * M, "inactive")], pool=(0, 2),
        fr=F_D),
    seg(G1S, [blk(G1S, 1024, "active_allocated", 1000, F_D), blk(G1S + 1024, 2 * M - 1024, "inactive")],
        small=True, pool=(0, 1), fr=F_D),
    seg(G1L, [blk(G1L, 10 * M, "active_allocated", 10 * M, F_C), blk(G1L + 10 * M, 10 * M, "inactive")],
        pool=(0, 1), fr=F_D),
    seg(X, [blk(X, 8 * M, "active_allocated", 8 * M, F_B), blk(X + 8 * M, 12 * M, "inactive")], fr=F_SEG1),
]

Y = X + 64 * M
MARKERS = [
    entry("segment_alloc", X, 20 * M, 10, F_A),
    entry("alloc", X, 4 * M, 11, F_A),
    entry("snapshot", 0, 4 * M, 20),
    entry("alloc", X + 4 * M, 2 * M, 30, F_B),
    entry("free_requested", X, 4 * M, 40, F_C),
    entry("free_completed", X, 4 * M, 41, F_C),
    entry("snapshot", 0, 2 * M, 50),
    entry("segment_alloc", Y, 2 * M, 60, F_D),
    entry("alloc", Y, 700, 61, F_D),
]
MARKERS_FINAL = [
    seg(X, [blk(X, 4 * M, "inactive", 4 * M), blk(X + 4 * M, 2 * M, "active_allocated", 2 * M, F_B),
            blk(X + 6 * M, 14 * M, "inactive")], fr=F_A),
    seg(Y, [blk(Y, 1024, "active_allocated", 700, F_D), blk(Y + 1024, 2 * M - 1024, "inactive")], small=True,
        fr=F_D),
]


def main():
    d = os.path.dirname(os.path.abspath(__file__))
    files = {
        "shape_state_only.pickle": snapshot(STATE, []),
        "shape_oom_marker.pickle": snapshot(STATE, [entry("snapshot", 0, ACTIVE, 99)]),
        "shape_graph_pools.pickle": snapshot(POOLS, []),
        "shape_markers.pickle": snapshot(MARKERS_FINAL, MARKERS),
    }
    for name, snap in files.items():
        with open(os.path.join(d, name), "wb") as f:
            pickle.dump(snap, f, protocol=4)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the snapshots of tests/tools/verdicts_test.sh (issue 38, one verdict per
state): a window whose state at its first entry holds more than a small device, and
the three ways a device size is known.

state_larger.pickle: a window that starts mid-run (its first entries free a block the
  trace never allocated) and records no device size (no oom entry). At its first
  entry the allocator holds two segments: 6 GiB with one live 6 GiB block (freed in
  the window) and 5152 MiB with a live 4 GiB block and 1056 MiB free. So 10 GiB live
  and 11.03 GiB (11,844,714,496 bytes) reserved before the first event; the window
  allocates 512 MiB, frees it, and allocates 1 GiB (the largest request). At the end
  5152 MiB + 6 GiB are reserved, 5 GiB live.
oom_entry.pickle: the same window with an oom entry at its end (a 2 GiB request that
  failed with 1 GiB of the device free): its device size is inferred from that entry,
  reserved + device_free = 11.03 GiB + 1 GiB.
big_state.pickle: the same window scaled by 10 (60 GiB and 50 GiB + 320 MiB segments,
  100 GiB live, 110.31 GiB reserved), no device size recorded: a state larger than the
  80 GiB assumed, as an OOM snapshot of a larger GPU that records no size is.

Deterministic: `python3 tests/tools/data/make_verdict_shapes.py` rewrites the same bytes.
"""
import os
import pickle

MiB, GiB = 1 << 20, 1 << 30
HERE = os.path.dirname(os.path.abspath(__file__))
A, B = 0x7F0000000000, 0x7F2000000000  # the 6 GiB segment, the 5152 MiB one (x 10: big_state)
FR = [{"filename": "train.py", "line": 12, "name": "load_weights"}]
SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}


def entry(action, addr, size, t, **extra):
    e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": FR}
    e.update(extra)
    return e


def block(address, size, state):
    return {"address": address, "size": size, "requested_size": size if state != "inactive" else 0,
            "state": state, "frames": FR if state != "inactive" else []}


def segment(address, blocks):
    return {"device": 0, "address": address, "total_size": sum(b["size"] for b in blocks),
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
            "requested_size": sum(b["requested_size"] for b in blocks), "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": FR, "blocks": blocks}


def window(oom, k=1):
    x = B + 4 * k * GiB  # the 512 MiB block, in the free tail of B
    trace = [entry("free_requested", A, 6 * k * GiB, 1000), entry("free_completed", A, 6 * k * GiB, 1001),
             entry("alloc", x, 512 * MiB, 1002), entry("free_requested", x, 512 * MiB, 1003),
             entry("free_completed", x, 512 * MiB, 1004), entry("alloc", A, 1 * GiB, 1005)]
    if oom:
        trace.append(entry("oom", 0, 2 * GiB, 1006, device_free=1 * GiB))
    segments = [segment(A, [block(A, 1 * GiB, "active_allocated"), block(A + 1 * GiB, (6 * k - 1) * GiB, "inactive")]),
                segment(B, [block(B, 4 * k * GiB, "active_allocated"), block(x, 1056 * k * MiB, "inactive")])]
    return {"segments": segments, "device_traces": [trace], "allocator_settings": SETTINGS,
            "external_annotations": []}


for name, doc in (("state_larger.pickle", window(False)), ("oom_entry.pickle", window(True)),
                  ("big_state.pickle", window(False, 10))):
    with open(os.path.join(HERE, name), "wb") as f:
        pickle.dump(doc, f, protocol=4)

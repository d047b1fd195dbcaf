#!/usr/bin/env python3
"""Write the older-layout snapshot fixtures of tests/tools (readers_old_snapshot_test).

torch20_snapshot.pickle: the dict PyTorch 2.0's _dump_snapshot wrote: segments whose
  blocks have 'size', 'state' and (when allocated) a 'history' list of {addr, real_size,
  frames}, but no 'address' and no 'requested_size'; segments without 'is_expandable';
  trace entries with action/addr/size/stream/frames and no 'time_us'.
torch_segments_list.pickle: what torch.cuda.memory_snapshot() returns (and 1.13's
  _snapshot()): the same segments as a bare list, no dict, no device_traces.
torch_segments_idle.pickle: a bare list whose segments hold only inactive blocks.
torch20_noaddr.pickle: a 2.0 dict whose segment lacks 'address' too (blocks cannot be placed).

Deterministic: `python3 tests/tools/data/make_old_snapshots.py` rewrites the same bytes.
"""
import os
import pickle
import sys

KB, MB = 1024, 1024 * 1024
FR = [{"filename": "train.py", "line": 41, "name": "forward"}]


def block(size, state, real=None, addr=None):
    b = {"size": size, "state": state}
    if real is not None:  # 2.0 keeps the request in the block's history
        b["history"] = [{"addr": addr, "real_size": real, "frames": FR}]
    return b


def segment(device, address, stream, kind, blocks):
    total = sum(b["size"] for b in blocks)
    live = [b for b in blocks if b["state"] != "inactive"]
    return {"device": device, "address": address, "total_size": total,
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in live), "stream": stream,
            "segment_type": kind, "blocks": blocks}


S0, S1, S2 = 0x7F3A00000000, 0x7F3A01400000, 0x7F4C00000000
segments = [
    # device 0, large pool: 8 MiB live, 2 MiB cached, 10 MiB live (20 MiB segment)
    segment(0, S0, 0, "large", [block(8 * MB, "active_allocated", 8_000_000, S0),
                                block(2 * MB, "inactive"),
                                block(10 * MB, "active_allocated", 10_000_000, S0 + 10 * MB)]),
    # device 0, small pool: 512 + 1024 live, the rest of the 2 MiB cached
    segment(0, S1, 0, "small", [block(512, "active_allocated", 500, S1),
                                block(1024, "active_pending_free", 1000, S1 + 512),
                                block(2 * MB - 1536, "inactive")]),
    # device 1, small pool: one live 4 KiB block after 8 KiB cached
    segment(1, S2, 0, "small", [block(8 * KB, "inactive"),
                                block(4 * KB, "active_allocated", 4000, S2 + 8 * KB),
                                block(2 * MB - 12 * KB, "inactive")]),
]
# 2.0's default history keeps one trace entry: the last alloc, of the 10 MiB block.
traces = [[{"action": "alloc", "addr": S0 + 10 * MB, "size": 10_000_000, "stream": 0, "frames": FR}], []]

idle = [segment(0, S0, 0, "large", [block(20 * MB, "inactive")])]
noaddr = [segment(0, S0, 0, "large", [block(2 * MB, "inactive"), block(18 * MB, "active_allocated", 17_000_000)])]
del noaddr[0]["address"]

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
for name, doc in [("torch20_snapshot.pickle", {"segments": segments, "device_traces": traces}),
                  ("torch_segments_list.pickle", segments),
                  ("torch_segments_idle.pickle", idle),
                  ("torch20_noaddr.pickle", {"segments": noaddr, "device_traces": [[]]})]:
    with open(os.path.join(out, name), "wb") as f:
        pickle.dump(doc, f, protocol=4)

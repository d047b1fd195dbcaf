#!/usr/bin/env python3
"""Write snapshot_fields.pickle (readers_fields_test.cc): a PyTorch 2.x
_dump_snapshot dict whose trace entries carry the fields added after 2.5
(docs/trace-format.md, "Trace-entry fields"):

- compile_context: "N/A", or a "Torch-Compiled Region: 0/0" name;
- user_metadata: the recording thread's _set_memory_metadata string, "" when
  none: "step 1" on two entries, then "step 2", "", "step 2" again;
- device and pool_id on each entry (pool_id as PR #177717 proposes: the
  entry's MemPool, (0, 0) for the default pools), device 1's list holding
  device 1's entries;
- device 0 recorded with skip_actions=["free_requested"] (PR #168183): its
  frees are free_completed entries alone; device 1 keeps both.

snapshot_bad_device.pickle: the same with device 1's second entry naming
device 0, which the reader refuses.

No segments: the traces alone. Deterministic: `python3
tests/tools/data/make_snapshot_fields.py` rewrites the same bytes (protocol 4).
"""
import os
import pickle

M = 1 << 20
X = 0x7F5A00000000  # CUDA-like device addresses, 2 MiB aligned
Y = 0x7F6A00000000
T0 = 1_700_000_000_000_000  # microseconds
CC = "Torch-Compiled Region: 0/0"


def entry(action, addr, size, us, device, meta="", cc="N/A", pool=(0, 0)):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": T0 + us,
            "compile_context": cc, "user_metadata": meta, "device": device, "pool_id": pool}


DEVICE0 = [
    entry("segment_alloc", X, 2 * M, 1, 0),
    entry("alloc", X, 1000, 2, 0, "step 1", CC),
    entry("alloc", X + 1024, 2000, 3, 0, "step 1", CC, (1, 2)),
    entry("free_completed", X, 1000, 4, 0, "step 2"),
    entry("free_completed", X + 1024, 2000, 5, 0, "", pool=(1, 2)),
    entry("alloc", X, 3000, 6, 0, "step 2"),
]
DEVICE1 = [
    entry("alloc", Y, 512, 7, 1, "rank 1"),
    entry("free_requested", Y, 512, 8, 1, "rank 1"),
    entry("free_completed", Y, 512, 9, 1, "rank 1"),
]
SNAPSHOT = {"segments": [], "device_traces": [DEVICE0, DEVICE1], "external_annotations": []}

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "snapshot_fields.pickle"), "wb") as f:
        pickle.dump(SNAPSHOT, f, protocol=4)
    bad = dict(SNAPSHOT, device_traces=[DEVICE0, [DEVICE1[0], dict(DEVICE1[1], device=0), DEVICE1[2]]])
    with open(os.path.join(here, "snapshot_bad_device.pickle"), "wb") as f:
        pickle.dump(bad, f, protocol=4)

#!/usr/bin/env python3
"""Write examples/torch_snapshot.pickle: a small PyTorch memory snapshot.

It has the layout torch.cuda.memory._dump_snapshot() writes (a plain dict
pickled with Python's default protocol): 'segments', 'device_traces',
'allocator_settings' and 'external_annotations'. The allocator state and the
trace come from a miniature of PyTorch's caching allocator (512-byte
rounding, 2 MiB small-pool segments, 20 MiB segments for requests under
10 MiB, best fit, splitting and merging), so addresses, segments and trace
agree with each other as in a real snapshot.

The scenario: a few training steps on device 0 with weights, activations of
varying size and a tensor used on a second stream (its free waits for that
stream: a 'free_requested' whose 'free_completed' comes later), recorded with
a ring buffer of 300 entries, so the trace starts mid-run as real ones often
do; plus a short trace on device 1.

Usage: python3 examples/make_torch_snapshot.py [OUT]   (default: next to this script)
Deterministic: the same file on every run.
"""
import os
import pickle
import random
import sys

KB, MB = 1024, 1024 * 1024
STREAM0 = 0
STREAM1 = 0x55D0C0A0  # a side stream handle, as PyTorch records cudaStream_t values


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


class MiniAllocator:
    """Enough of DeviceCachingAllocator to produce a consistent snapshot."""

    def __init__(self, device, base):
        self.device = device
        self.next_va = base
        self.segments = []  # dicts: address, total_size, stream, pool, blocks (list of dicts)
        self.trace = []
        self.time = 1_700_000_000_000_000
        self.live = {}  # addr -> (segment, block)
        self.pending = []  # addrs whose free waits on another stream

    def record(self, action, addr, size, stream, **extra):
        self.time += 137
        entry = {"action": action, "addr": addr, "size": size, "stream": stream, "time_us": self.time,
                 "frames": [{"filename": "train.py", "line": 40 + len(self.trace) % 17, "name": "step"}]}
        entry.update(extra)
        self.trace.append(entry)

    def malloc(self, size, stream=STREAM0):
        self.process_events()
        rounded = round_size(size)
        small = rounded <= MB
        best = None
        for seg in self.segments:
            if seg["stream"] != stream or (seg["segment_type"] == "small") != small:
                continue
            for b in seg["blocks"]:
                if b["state"] == "inactive" and b["size"] >= rounded:
                    if best is None or (b["size"], b["address"]) < (best[1]["size"], best[1]["address"]):
                        best = (seg, b)
        if best is None:
            seg_size = 2 * MB if small else (20 * MB if rounded < 10 * MB else (rounded + 2 * MB - 1) // (2 * MB) * (2 * MB))
            seg = {"device": self.device, "address": self.next_va, "total_size": seg_size, "stream": stream,
                   "segment_type": "small" if small else "large", "segment_pool_id": (0, 0),
                   "is_expandable": False, "frames": [],
                   "blocks": [{"address": self.next_va, "size": seg_size, "requested_size": 0,
                               "state": "inactive", "frames": []}]}
            self.next_va += (seg_size + 2 * MB - 1) // (2 * MB) * (2 * MB)
            self.segments.append(seg)
            self.record("segment_alloc", seg["address"], seg_size, stream)
            best = (seg, seg["blocks"][0])
        seg, b = best
        remaining = b["size"] - rounded
        if (small and remaining >= 512) or (not small and remaining > MB):
            i = seg["blocks"].index(b)
            rest = {"address": b["address"] + rounded, "size": remaining, "requested_size": 0,
                    "state": "inactive", "frames": []}
            seg["blocks"].insert(i + 1, rest)
            b["size"] = rounded
        b["state"] = "active_allocated"
        b["requested_size"] = size
        b["frames"] = [{"filename": "train.py", "line": 12, "name": "forward"}]
        self.live[b["address"]] = (seg, b)
        self.record("alloc", b["address"], size, stream)
        return b["address"]

    def free(self, addr, used_on_other_stream=False):
        seg, b = self.live.pop(addr)
        self.record("free_requested", addr, b["requested_size"], seg["stream"])
        if used_on_other_stream:
            b["state"] = "active_pending_free"
            self.pending.append(addr)
            return
        self.free_block(seg, b)

    def free_block(self, seg, b):
        self.record("free_completed", b["address"], b["requested_size"], seg["stream"])
        b["state"] = "inactive"
        b["requested_size"] = 0
        b["frames"] = []
        blocks = seg["blocks"]
        i = blocks.index(b)
        if i + 1 < len(blocks) and blocks[i + 1]["state"] == "inactive":
            b["size"] += blocks.pop(i + 1)["size"]
        if i > 0 and blocks[i - 1]["state"] == "inactive":
            blocks[i - 1]["size"] += blocks.pop(i)["size"]

    def process_events(self):
        # The side stream's work is done by the next allocation (as on a GPU
        # that keeps up): PyTorch then logs free_completed from malloc.
        for addr in self.pending:
            for seg in self.segments:
                for b in seg["blocks"]:
                    if b["address"] == addr:
                        self.free_block(seg, b)
                        break
        self.pending = []

    def snapshot_segments(self):
        out = []
        for seg in self.segments:
            s = dict(seg)
            s["allocated_size"] = sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
            s["active_size"] = sum(b["size"] for b in seg["blocks"] if b["state"].startswith("active"))
            s["requested_size"] = sum(b["requested_size"] for b in seg["blocks"] if b["state"].startswith("active"))
            s["blocks"] = [dict(b) for b in seg["blocks"]]
            out.append(s)
        return out


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                               "torch_snapshot.pickle")
    rng = random.Random(8847)
    gpu0 = MiniAllocator(0, 0x7F0000000000)
    weights = [gpu0.malloc(s) for s in (48 * MB, 48 * MB, 12 * MB, 3 * MB, 700 * KB, 4096)]
    for step in range(12):
        seq = rng.choice((512, 1024, 2048))
        acts = [gpu0.malloc(seq * 4 * KB * rng.choice((1, 2, 3))) for _ in range(5)]
        small = [gpu0.malloc(rng.choice((256, 1000, 4096, 65536))) for _ in range(4)]
        side = gpu0.malloc(2 * MB + 123)  # used on the side stream too (record_stream)
        for a in reversed(acts):
            gpu0.free(a)
        for a in small:
            gpu0.free(a)
        gpu0.free(side, used_on_other_stream=True)
        if step % 4 == 3:
            gpu0.record("annotate", 0, 0, STREAM0, user_metadata=f"step {step}")
    keep = gpu0.malloc(5 * MB, STREAM1)  # still live at the snapshot
    del keep, weights

    gpu1 = MiniAllocator(1, 0x7F8000000000)
    a = gpu1.malloc(30 * MB)
    b = gpu1.malloc(800)
    gpu1.free(a)
    gpu1.malloc(10 * MB)
    del b

    max_entries = 300  # _record_memory_history(max_entries=300): a ring buffer
    snapshot = {
        "segments": gpu0.snapshot_segments() + gpu1.snapshot_segments(),
        "device_traces": [gpu0.trace[-max_entries:], gpu1.trace],
        # Keys as memory_snapshot.cpp spells them: the config-string names
        # (release_lock_on_cudamalloc, pinned_use_cuda_host_register), not its
        # C++ variable names (release_lock_on_malloc_s, pinned_use_host_register_s).
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "",
            "max_split_size": -1,
            "garbage_collection_threshold": 0.0,
            "expandable_segments": False,
            "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {"1": 0, "2": 0, "4": 0, "8": 0, "16": 0, "32": 0, "64": 0, "128": 0,
                                         "256": 0, "512": 0, "1024": 0, "2048": 0, "4096": 0, "8192": 0,
                                         "16384": 0, "32768": 0},
        },
        "external_annotations": [],
    }
    with open(out, "wb") as f:
        pickle.dump(snapshot, f)  # the default protocol, as _dump_snapshot uses
    print(f"wrote {out}: {os.path.getsize(out)} bytes, {len(snapshot['device_traces'][0])} + "
          f"{len(snapshot['device_traces'][1])} trace entries, {len(snapshot['segments'])} segments")


if __name__ == "__main__":
    main()

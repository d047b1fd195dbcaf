#!/usr/bin/env python3
"""Write the snapshots of tests/tools/shapes_test.sh: the shapes on which galloc's
commands used to give different answers for one job (issue 26, "one job, one answer").

shrinking_window.pickle: a window that starts with more reserved than it ends with. At
  its first entry the allocator holds a 1 GiB segment (one 1 GiB block, freed in the
  window) and a 20 MiB one (one 20 MiB block, live to the end); the window frees the
  1 GiB block, empties the cache (segment_free of the 1 GiB segment) and allocates
  8 MiB in a new 20 MiB segment.
  Reserved is 1044 MiB at the first entry and 40 MiB at the end.
deep_stacks.pickle: a whole run (no ring wrap) whose entries carry 100 frames each, the
  Python ones with 300-byte file names and 200-byte function names, and distinct stacks
  on an alloc, its free_requested and its free_completed.

Deterministic: `python3 tests/tools/data/make_job_shapes.py` rewrites the same bytes.
"""
import os
import pickle

MB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))


def entry(action, addr, size, t, frames=()):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": list(frames)}


def segment(address, total, blocks):
    return {"device": 0, "address": address, "total_size": total,
            "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
            "active_size": sum(b["size"] for b in blocks if b["state"] != "inactive"),
            "requested_size": sum(b["requested_size"] for b in blocks if b["state"] != "inactive"),
            "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
            "frames": [], "blocks": blocks}


def block(address, size, state, requested=None):
    return {"address": address, "size": size, "requested_size": size if requested is None else requested,
            "state": state, "frames": []}


SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}


def shrinking_window():
    big, small, new = 0x7F0000000000, 0x7F0040000000, 0x7F0080000000
    trace = [entry("free_requested", big, 1024 * MB, 1000),
             entry("free_completed", big, 1024 * MB, 1001),
             entry("segment_free", big, 1024 * MB, 1002),
             entry("segment_alloc", new, 20 * MB, 1003),
             entry("alloc", new, 8 * MB, 1004)]
    segments = [segment(small, 20 * MB, [block(small, 20 * MB, "active_allocated")]),
                segment(new, 20 * MB, [block(new, 8 * MB, "active_allocated"),
                                       block(new + 8 * MB, 12 * MB, "inactive")])]
    return {"segments": segments, "device_traces": [trace], "allocator_settings": SETTINGS,
            "external_annotations": []}


def frames(tag, n=100):
    out = []
    for i in range(n):
        if i % 3 == 0:  # a C++ frame, as PyTorch's "all" stacks interleave them
            out.append({"name": "c10::cuda::CUDACachingAllocator::Native::%s_%d(unsigned long)" % (tag, i),
                        "filename": "CUDACachingAllocator.cpp", "line": 0})
        else:
            out.append({"name": ("%s_function_%d_" % (tag, i)).ljust(200, "x"),
                        "filename": ("/home/user/projects/very/deep/package/layout/%s/module_%d.py" % (tag, i))
                        .ljust(300, "p"), "line": 1000 + i})
    return out


def deep_stacks():
    a, b = 0x7F1000000000, 0x7F1000000000 + 4 * MB
    trace = [entry("segment_alloc", a, 20 * MB, 2000, frames("alloc1")),
             entry("alloc", a, 4 * MB, 2001, frames("alloc1")),
             entry("alloc", b, 4 * MB, 2002, frames("alloc2")),
             entry("free_requested", a, 4 * MB, 2003, frames("free1")),
             entry("free_completed", a, 4 * MB, 2004, frames("done1"))]
    segments = [segment(a, 20 * MB, [block(a, 4 * MB, "inactive"), block(b, 4 * MB, "active_allocated"),
                                     block(b + 4 * MB, 12 * MB, "inactive")])]
    segments[0]["blocks"][1]["frames"] = frames("alloc2")
    return {"segments": segments, "device_traces": [trace], "allocator_settings": SETTINGS,
            "external_annotations": []}


for name, doc in (("shrinking_window.pickle", shrinking_window()), ("deep_stacks.pickle", deep_stacks())):
    with open(os.path.join(HERE, name), "wb") as f:
        pickle.dump(doc, f, protocol=4)

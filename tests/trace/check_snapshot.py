#!/usr/bin/env python3
"""check_snapshot.py: load snapshots written by tests/trace/snapshot_test.cc
with Python's own pickle and json modules and check every field against the
scripted model that test builds (the two files must agree).

Usage: check_snapshot.py scripted|wrapped FILE.pickle FILE.json
Exit status 0 when every check passes; the first failure is printed.
"""
import json
import pickle
import pickletools
import sys

# Opcodes MemoryViz.js's unpickler accepts (torch/utils/viz/MemoryViz.js,
# function unpickle); anything else makes the viewer fail with UNKNOWN OPCODE.
VIEWER_OPCODES = {
    "PROTO", "FRAME", "STOP", "MARK", "NONE", "NEWTRUE", "NEWFALSE", "BININT",
    "BININT1", "BININT2", "LONG1", "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_LIST", "LIST", "APPEND",
    "APPENDS", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "MEMOIZE",
    "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET",
}

MiB = 1 << 20
KiB = 1 << 10
T0 = 1_700_000_000_000_000  # the test's clock starts here (microseconds)


def fail(msg):
    raise AssertionError(msg)


def eq(what, got, want):
    if got != want:
        fail(f"{what}: got {got!r}, want {want!r}")


def check_opcodes(data):
    seen = set()
    protos = []
    for op, arg, _pos in pickletools.genops(data):
        seen.add(op.name)
        if op.name == "PROTO":
            protos.append(arg)
    extra = seen - VIEWER_OPCODES
    if extra:
        fail(f"opcodes outside MemoryViz's set: {sorted(extra)}")
    eq("protocol", protos, [4])  # the viewer rejects protocols above 4
    return seen


def untuple(v):
    """The pickled value with tuples as lists: what json gives."""
    if isinstance(v, tuple):
        return [untuple(x) for x in v]
    if isinstance(v, list):
        return [untuple(x) for x in v]
    if isinstance(v, dict):
        return {k: untuple(x) for k, x in v.items()}
    return v


def check_frame_shape(frames, what):
    if not isinstance(frames, list):
        fail(f"{what}: frames is {type(frames).__name__}")
    for f in frames:
        eq(f"{what} frame keys", sorted(f), ["filename", "line", "name"])
        if not (isinstance(f["name"], str) and isinstance(f["filename"], str) and isinstance(f["line"], int)):
            fail(f"{what}: bad frame {f!r}")


# The framework frames the test's callback supplies (innermost first), as
# they must come back: invalid UTF-8 replaced by U+FFFD.
USER_FRAMES = [
    {"name": "forward", "filename": "/src/modèle.py", "line": 42},
    {"name": 'quote"back\\slash\ttab\nnl\x01ctl', "filename": "/src/日本.py", "line": 7},
    {"name": "bad\ufffdbyte", "filename": "", "line": 2**40},
]


def check_scripted(snap, pickled):
    eq("top-level keys", sorted(snap), ["allocator_settings", "device_traces", "external_annotations", "segments"])

    # Segments, sorted by address (the test adds them out of order).
    segs = snap["segments"]
    eq("segment count", len(segs), 3)
    seg_keys = ["active_size", "address", "allocated_size", "blocks", "device", "frames", "is_expandable",
                "requested_size", "segment_pool_id", "segment_type", "stream", "total_size"]
    for s in segs:
        eq("segment keys", sorted(s), seg_keys)
    a, b, c = segs
    eq("seg0.address", a["address"], 0x7F0000000000)
    eq("seg1.address", b["address"], 0x7F0000200000)
    eq("seg2.address", c["address"], 0xFFFF000000000000 - 2**64)  # above 2^63: int64, as PyTorch writes it

    eq("seg0", {k: a[k] for k in seg_keys if k not in ("blocks", "frames")}, {
        "active_size": 2 * MiB, "address": 0x7F0000000000, "allocated_size": 2 * MiB, "device": 1,
        "is_expandable": True, "requested_size": 2 * MiB - 3,
        "segment_pool_id": (1, 2) if pickled else [1, 2], "segment_type": "small", "stream": 0x1234,
        "total_size": 2 * MiB})
    eq("seg0.frames", a["frames"], [])
    eq("seg0.blocks", a["blocks"], [
        {"address": 0x7F0000000000, "size": 2 * MiB, "requested_size": 2 * MiB - 3, "state": "active_allocated",
         "frames": []}])

    eq("seg1", {k: b[k] for k in seg_keys if k not in ("blocks", "frames")}, {
        "active_size": MiB + 512 * KiB, "address": 0x7F0000200000, "allocated_size": MiB, "device": 1,
        "is_expandable": False, "requested_size": 1000000 + 500000,
        "segment_pool_id": (0, 0) if pickled else [0, 0], "segment_type": "large", "stream": 0,
        "total_size": 2 * MiB})
    check_frame_shape(b["frames"], "seg1")
    names = [f["name"] for f in b["frames"]]
    if "trace_test_native_site" not in names:
        fail(f"seg1 frames do not name the test's function: {names}")
    blocks = b["blocks"]
    eq("seg1 block count", len(blocks), 3)
    eq("seg1.block0", blocks[0], {"address": 0x7F0000200000, "size": MiB, "requested_size": 1000000,
                                  "state": "active_allocated", "frames": USER_FRAMES})
    eq("seg1.block1", blocks[1], {"address": 0x7F0000300000, "size": 512 * KiB, "requested_size": 0,
                                  "state": "inactive", "frames": []})
    eq("seg1.block2", blocks[2], {"address": 0x7F0000380000, "size": 512 * KiB, "requested_size": 500000,
                                  "state": "active_pending_free", "frames": USER_FRAMES})
    if pickled and blocks[0]["frames"] is not blocks[2]["frames"]:
        fail("a stack shared by two blocks was not written once and referenced")

    eq("seg2", c, {"active_size": 0, "address": 0xFFFF000000000000 - 2**64, "allocated_size": 0, "device": 1,
                   "is_expandable": False, "requested_size": 0,
                   "segment_pool_id": (0, 0) if pickled else [0, 0], "segment_type": "small",
                   "stream": 2**40, "total_size": 512,
                   "frames": [], "blocks": [{"address": 0xFFFF000000000000 - 2**64, "size": 512, "requested_size": 100,
                                            "state": "inactive", "frames": []}]})

    # device_traces: one list per device; the recorder is device 1.
    traces = snap["device_traces"]
    eq("device_traces length", len(traces), 2)
    eq("device 0 trace", traces[0], [])
    t = traces[1]
    want = [
        ("segment_alloc", "addr", 0x7F0000200000, 2 * MiB, 0, True),
        ("alloc", "addr", 0x7F0000200000, MiB, 0, True),
        ("free_requested", "addr", 0x7F0000200000, MiB, 7, True),
        ("free_completed", "addr", 0x7F0000200000, MiB, 7, False),
        ("segment_map", "addr", 0x7F0000400000, 2 * MiB, 0, False),
        ("segment_unmap", "addr", 0x7F0000400000, 2 * MiB, 0, False),
        ("segment_free", "addr", 0x7F0000200000, 2 * MiB, 0, False),
        ("oom", "device_free", 12345678901, 3 * 2**30, 0, True),
        ("snapshot", "addr", 0, 3 * MiB + 512 * KiB, 0, False),
        ("alloc", "addr", 0xFFFF000000000000 - 2**64, 512, 2**40, False),
    ]
    eq("trace length", len(t), len(want))
    for i, (e, (action, addr_key, addr, size, stream, framed)) in enumerate(zip(t, want)):
        eq(f"entry {i} keys", sorted(e), sorted(["action", addr_key, "size", "stream", "compile_context",
                                                 "user_metadata", "frames", "time_us"]))
        eq(f"entry {i}.action", e["action"], action)
        eq(f"entry {i}.{addr_key}", e[addr_key], addr)
        eq(f"entry {i}.size", e["size"], size)
        eq(f"entry {i}.stream", e["stream"], stream)
        eq(f"entry {i}.time_us", e["time_us"], T0 + i)
        eq(f"entry {i}.compile_context", e["compile_context"], "N/A")
        eq(f"entry {i}.user_metadata", e["user_metadata"], "")
        eq(f"entry {i}.frames", e["frames"], USER_FRAMES if framed else [])

    eq("allocator_settings", snap["allocator_settings"], {
        "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512,roundup_power2_divisions:4",
        "max_split_size": 512 * MiB,
        "garbage_collection_threshold": 0.8,
        "expandable_segments": False,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": True,
        "graph_capture_record_stream_reuse": False,
        "roundup_power2_divisions": {str(1 << i): (4 if i < 3 else 0) for i in range(16)},
    })
    if not isinstance(snap["allocator_settings"]["garbage_collection_threshold"], float):
        fail("garbage_collection_threshold is not a float")
    eq("external_annotations", snap["external_annotations"], [
        {"name": "forward ✓", "stage": "START", "device": 1, "time_us": T0 + 100},
        {"name": "forward ✓", "stage": "END", "device": 1, "time_us": T0 + 101},
    ])


def check_wrapped(snap, pickled):
    # 5000 alloc/free_requested pairs through a ring of 3000: the newest 3000
    # entries remain, oldest first (entry k is event 7000 + k).
    eq("segments", snap["segments"], [])
    eq("device_traces length", len(snap["device_traces"]), 1)
    t = snap["device_traces"][0]
    eq("trace length", len(t), 3000)
    for k, e in enumerate(t):
        n = 7000 + k
        want = {"action": "alloc" if n % 2 == 0 else "free_requested", "addr": 0x10000 + (n // 2) * 512,
                "size": 512, "stream": 0, "compile_context": "N/A", "user_metadata": "", "frames": [],
                "time_us": T0 + n}
        if e != want:
            fail(f"entry {k}: got {e!r}, want {want!r}")
    eq("allocator_settings", snap["allocator_settings"], {})
    eq("external_annotations", snap["external_annotations"], [])


def main():
    mode, pickle_path, json_path = sys.argv[1:4]
    check = {"scripted": check_scripted, "wrapped": check_wrapped}[mode]
    with open(pickle_path, "rb") as f:
        data = f.read()
    seen = check_opcodes(data)
    snap_p = pickle.loads(data)
    check(snap_p, True)
    with open(json_path, "rb") as f:
        text = f.read()
    snap_j = json.loads(text.decode("utf-8"))  # strict UTF-8, as a browser's JSON.parse input
    check(snap_j, False)
    eq("pickle and json agree", untuple(snap_p), snap_j)
    print(f"{mode}: ok ({len(data)} pickle bytes, {len(text)} json bytes, opcodes {sorted(seen)})")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"check_snapshot: {e}", file=sys.stderr)
        sys.exit(1)

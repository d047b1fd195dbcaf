#!/usr/bin/env python3
"""make_seeds.py: the real-shaped seeds of the fuzz corpora, written from code.

Each seed is a small file in the shape of a record galloc meets in the field
(shapes from ../shared/traces and docs of snapshot-format.md, never copies of
those files): PyTorch snapshots of each era (a 1.13 bare list of segments,
2.0 blocks with `history`, a 2.1+ trace that starts mid-run, several devices
with oom entries, expandable segments with segment_map / segment_unmap,
the newest keys), as protocol 2 (TorchScript's pickler) and 4 (Python's
default) pickles; Kineto profiler traces that start mid-run (2022 layout with
Addr and totals) and the 2021 layout without addresses; Umpire 2022 logs
with `reallocate`; and a gzipped copy of each format the readers accept
gzipped. Only the standard library: pickle, gzip, json.

Usage: fuzz/corpus/make_seeds.py   (rewrites the generated seeds in place; the
hand-written seeds already in the corpus directories are left alone)

Seed file layouts, per target (the first bytes are the harness's, then the file):
  trace_reader_fuzz   1 byte format (0 = detect) + the file
  pickle_fuzz         1 byte limits (0 = default) + the pickle (not gzipped:
                      the decoder sees inflated bytes)
  seed_fuzz           1 byte (bit 0: force torch, bit 1: also seed under
                      expandable segments) + the file
  conf_fuzz, api_fuzz, replay_fuzz, sleep_fuzz, snapshot_roundtrip_fuzz: a mode
                      byte and a config string, or op bytes (op_seeds.py, which
                      follows each .cc's reader)
"""
import gzip
import io
import json
import os
import pickle
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the corpora
from op_seeds import all_seeds  # noqa: E402 (after the line above)

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
KiB = 1 << 10


def frames(name, line):
    return [{"filename": "train.py", "line": line, "name": name},
            {"filename": "torch/nn/modules/module.py", "line": 1501, "name": "_call_impl"}]


STACK = frames("forward", 42)  # one object shared by many entries: the pickler memoizes it


def seg(device, address, blocks, stream=0, small=False, expandable=None, pool=(0, 0), era="2.1"):
    """A segment dict; blocks: (size, state, requested) in address order."""
    total = sum(b[0] for b in blocks)
    out = {"device": device, "address": address, "total_size": total,
           "allocated_size": sum(b[0] for b in blocks if b[1] == "active_allocated"),
           "active_size": sum(b[0] for b in blocks if b[1] != "inactive"),
           "requested_size": sum(b[2] for b in blocks if b[1] != "inactive"),
           "stream": stream, "segment_type": "small" if small else "large"}
    bl, at = [], address
    for size, state, req in blocks:
        if era in ("1.13", "2.0"):
            b = {"size": size, "state": state}
            if state != "inactive":
                b["history"] = [{"addr": at, "real_size": req, "frames": STACK}]
        else:
            b = {"address": at, "size": size, "requested_size": req, "state": state,
                 "frames": STACK if state != "inactive" else []}
        bl.append(b)
        at += size
    out["blocks"] = bl
    if era not in ("1.13", "2.0"):
        out["segment_pool_id"] = pool
        out["is_expandable"] = bool(expandable)
        out["frames"] = []
    return out


def ev(action, addr, size, stream=0, t=None, frames_=True, **extra):
    e = {"action": action, "addr": addr, "size": size, "stream": stream}
    if action == "oom":
        del e["addr"]
    if t is not None:
        e["time_us"] = t
    if frames_ and action in ("alloc", "free_requested", "free_completed"):
        e["frames"] = STACK
    e.update(extra)
    return e


A = 0x7F0000000000  # a large segment
C = 0x7F0020000000  # a small one made in the window
D = 0x7F0010000000  # a small one freed in the window


def midrun_snapshot(time=True, newest=False):
    """PyTorch 2.1+ ring buffer that wrapped: the trace starts with the free of
    a block allocated before it and a segment_free of a segment it never made."""
    t = (lambda k: 1700000000000000 + 137 * k) if time else (lambda k: None)
    extra = {"compile_context": "", "user_metadata": ""} if newest else {}
    trace = [
        ev("free_requested", A, 8 * MiB, t=t(0), **extra),
        ev("free_completed", A, 8 * MiB, t=t(1), **extra),
        ev("segment_free", D, 2 * MiB, t=t(2), **extra),
        ev("alloc", A, 4 * MiB, t=t(3), **extra),
        ev("segment_alloc", C, 2 * MiB, t=t(4), **extra),
        ev("alloc", C, 1000, t=t(5), **extra),
        ev("alloc", A + 4 * MiB, 3000000, t=t(6), **extra),
        ev("free_requested", C, 1000, t=t(7), **extra),
    ]
    segments = [
        seg(0, A, [(4 * MiB, "active_allocated", 4 * MiB), (3000064, "active_allocated", 3000000),
                   (1194240, "inactive", 0), (2 * MiB, "active_allocated", 2 * MiB),
                   (10 * MiB, "inactive", 0)]),
        seg(0, C, [(1024, "active_pending_free", 1000), (2 * MiB - 1024, "inactive", 0)], small=True),
    ]
    snap = {"segments": segments, "device_traces": [trace]}
    if newest:
        snap["allocator_settings"] = {
            "PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:256,roundup_power2_divisions:[256:1,>:4]",
            "max_split_size": 256 * MiB, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
            "graph_capture_record_stream_reuse": False,
            "roundup_power2_divisions": {str(1 << i): (1 if i < 8 else 4) for i in range(16)}}
        snap["external_annotations"] = [
            {"name": "ProfilerStep#3", "stage": "START", "device": 0, "time_us": t(2)},
            {"name": "ProfilerStep#3", "stage": "END", "device": 0, "time_us": t(8)}]
    return snap


def torch20_snapshot():
    """PyTorch 2.0: blocks with `history`, no time_us, the default one-entry trace."""
    return {"segments": [
        seg(0, A, [(2 * MiB, "active_allocated", 2000000), (18 * MiB, "inactive", 0)], era="2.0"),
        seg(0, C, [(512, "active_allocated", 100), (2 * MiB - 512, "inactive", 0)], small=True, era="2.0")],
        "device_traces": [[{"action": "snapshot", "addr": 0, "size": 0, "stream": 0}]]}


def torch113_list():
    """PyTorch 1.13's torch.cuda.memory_snapshot(): a bare list of segments."""
    return [seg(0, A, [(20 * MiB, "active_allocated", 20 * MiB - 100)], era="1.13"),
            seg(0, C, [(1024, "active_allocated", 1000), (2 * MiB - 1024, "inactive", 0)], small=True, era="1.13")]


def multidevice_oom():
    """Three devices; device 1 ran out (device_free small: genuine), device 2 was
    capped by a memory fraction (device_free above the request)."""
    B1, B2 = 0x7F4000000000, 0x7F8000000000
    d0 = [ev("segment_alloc", A, 20 * MiB, t=1), ev("alloc", A, 6 * MiB, t=2)]
    d1 = [ev("segment_alloc", B1, 40 * MiB, t=3), ev("alloc", B1, 30 * MiB, t=4),
          ev("segment_free", B1 + 64 * MiB, 20 * MiB, t=5),
          {"action": "oom", "size": 5308694528, "stream": 0, "device_free": 1048576, "time_us": 6}]
    d2 = [ev("segment_alloc", B2, 60 * MiB, t=7), ev("alloc", B2, 60 * MiB, t=8),
          {"action": "oom", "size": 8 * MiB, "stream": 0, "device_free": 4 << 30, "time_us": 9},
          ev("free_requested", B2, 60 * MiB, t=10), ev("free_completed", B2, 60 * MiB, t=11)]
    return {"segments": [
        seg(0, A, [(6 * MiB, "active_allocated", 6 * MiB), (14 * MiB, "inactive", 0)]),
        seg(1, B1, [(30 * MiB, "active_allocated", 30 * MiB), (10 * MiB, "inactive", 0)]),
        seg(2, B2, [(60 * MiB, "inactive", 0)])],
        "device_traces": [d0, d1, d2]}


def expandable(midrun=False):
    """expandable_segments:True: one reservation mapped in 20 MiB pages (large)
    and one in 2 MiB pages (small), grown by segment_map, shrunk by segment_unmap."""
    R, S = 0x7F6000000000, 0x7F6100000000
    P = 20 * MiB
    trace = []
    if not midrun:
        trace += [ev("segment_map", R, P, t=1)]
    trace += [ev("alloc", R + (P if midrun else 0), 10 * MiB, t=2),
              ev("segment_map", R + (2 * P if midrun else P), P, t=3),
              ev("alloc", R + (P if midrun else 0) + 10 * MiB, 25 * MiB, t=4),
              ev("segment_map", S, 2 * MiB, t=5), ev("alloc", S, 4096, t=6),
              ev("segment_map", S + 2 * MiB, 2 * MiB, t=7), ev("alloc", S + 4096, 1 * MiB, t=8),
              ev("free_requested", S + 4096, 1 * MiB, t=9), ev("free_completed", S + 4096, 1 * MiB, t=10),
              ev("segment_unmap", S + 2 * MiB, 2 * MiB, t=11)]
    large = [(10 * MiB, "active_allocated", 10 * MiB), (25 * MiB, "active_allocated", 25 * MiB),
             (5 * MiB, "inactive", 0)]
    if midrun:  # a page mapped before the window, holding a block the window never touches
        large = [(P, "active_allocated", P)] + large
    segments = [seg(0, R, large, expandable=True),
                seg(0, S, [(4096, "active_allocated", 4096), (2 * MiB - 4096, "inactive", 0)], small=True,
                    expandable=True)]
    settings = {"expandable_segments": True, "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                "max_split_size": -1, "garbage_collection_threshold": 0.0,
                "roundup_power2_divisions": {}}
    return {"segments": segments, "device_traces": [trace], "allocator_settings": settings}


def private_pool():
    """A CUDA graph's private pool next to the default pools, with a pending free."""
    G = 0x7F3000000000
    return {"segments": [
        seg(0, G, [(8 * MiB, "active_allocated", 8 * MiB), (12 * MiB, "inactive", 0)], pool=(1, 0)),
        seg(0, A, [(2 * MiB, "active_pending_free", 2 * MiB), (18 * MiB, "inactive", 0)])],
        "device_traces": [[ev("alloc", G + 8 * MiB, 4 * MiB, t=1), ev("free_requested", G + 8 * MiB, 4 * MiB, t=2),
                           ev("free_completed", G + 8 * MiB, 4 * MiB, t=3)]]}


def snapshots():
    """(name, object, protocol) of every snapshot shape."""
    return [("torch_midrun_p4", midrun_snapshot(), 4),
            ("torch_midrun_p2", midrun_snapshot(), 2),
            ("torch_newest_p4", midrun_snapshot(newest=True), 4),
            ("torch21_notime_p4", midrun_snapshot(time=False), 4),
            ("torch20_p4", torch20_snapshot(), 4),
            ("torch113_list_p2", torch113_list(), 2),
            ("torch_multidevice_oom_p4", multidevice_oom(), 4),
            ("torch_expandable_p4", expandable(), 4),
            ("torch_expandable_midrun_p4", expandable(midrun=True), 4),
            ("torch_private_pool_p2", private_pool(), 2)]


def kineto(newer=True, midrun=True):
    """A profiler Chrome trace: [memory] instant events among operator events."""
    props = [{"id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34089730048, "computeMajor": 7,
              "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 80},
             {"id": 1, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34089730048, "computeMajor": 7,
              "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 80}]
    events, ts, idx = [], 1669783687464181.0, 42070
    allocated, reserved = 5435638784, 12782141440
    base = 139926520725504

    def mem(dev_type, dev, addr, nbytes):
        nonlocal ts, idx, allocated
        ts += 3.5
        idx += 1
        if dev_type == 1:
            allocated += nbytes
        args = {"Device Type": dev_type, "Device Id": dev, "Bytes": nbytes}
        if newer:
            args = {"Ev Idx": idx, "Device Type": dev_type, "Device Id": dev, "Addr": addr, "Bytes": nbytes,
                    "Total Allocated": allocated if dev_type == 1 else 64, "Total Reserved": reserved}
        e = {"ph": "i", "s": "t", "name": "[memory]", "pid": 783658, "tid": 785244, "ts": ts, "args": args}
        if newer:
            e["cat"] = "cpu_instant_event"
        events.append(e)

    events.append({"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 783658, "tid": 785244,
                   "ts": ts, "dur": 45, "args": {"External id": 3073, "Ev Idx": 0}})
    if midrun:  # frees of blocks allocated before the window
        mem(1, 1, base + 64 * MiB, -4 * MiB)
        mem(1, 1, base + 80 * MiB, -2342912)
    mem(0, -1, 94000000, 16)
    for k in range(6):
        mem(1, 1, base + k * 8 * MiB, 5242880 + k * 512)
    mem(0, -1, 94000000, -16)
    for k in (4, 1, 0):
        mem(1, 1, base + k * 8 * MiB, -(5242880 + k * 512))
    mem(1, 1, base + 48 * MiB, 98566144)  # a big one
    doc = {"schemaVersion": 1, "deviceProperties": props}
    if newer:
        doc.update({"distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2}, "profile_memory": 1,
                    "traceName": "/tmp/trace_8_rank_1.json"})
    doc["traceEvents"] = events
    return json.dumps(doc, indent=1).encode()


def umpire2022():
    """Umpire 2022.x: category/name lines, reallocate as a call line and a result
    line, both the in-allocator form (allocate/deallocate between) and the fallback."""
    ts = [1656100509508239593]

    def line(cat, name, num=None, strs=None, tags=None):
        ts[0] += 104311
        d = {"category": cat, "name": name}
        if num is not None:
            d["numeric_args"] = num
        d["string_args"] = strs or {}
        d["tags"] = tags if tags is not None else {"replay": "true"}
        d["timestamp"] = ts[0]
        return json.dumps(d, separators=(",", ":"))

    host, dev, pool = "0x10379980", "0x104759c0", "0x1037b920"
    out = [line("metadata", "version", {"major": 2022, "minor": 3, "patch": 1}, {"rc": "5d67af28"}, {}),
           line("operation", "make_memory_resource", {"introspection": 1}, {"allocator_ref": host},
                {"allocator_name": "HOST", "replay": "true"}),
           line("operation", "make_memory_resource", {"introspection": 1}, {"allocator_ref": dev},
                {"allocator_name": "DEVICE", "replay": "true"}),
           line("operation", "make_allocator", {"introspection": 1},
                {"allocator_ref": pool, "arg0": "DEVICE", "type": "N6umpire8strategy9QuickPoolE"},
                {"allocator_name": "DEVICE_QuickPool_spec_0", "replay": "true"}),
           line("operation", "allocate", {"size": 128}, {"allocator_ref": dev, "pointer": "0x200133200000"}),
           line("operation", "named_allocate", {"size": 256},
                {"allocator_ref": pool, "pointer": "0x200133200200", "allocation_name": "weights"}),
           # reallocate through the allocator's own allocate/deallocate
           line("operation", "reallocate", {"size": 372}, {"allocator_ref": dev, "current_ptr": "0x200133200000"}),
           line("operation", "allocate", {"size": 372}, {"allocator_ref": dev, "pointer": "0x200133200400"}),
           line("operation", "deallocate", None, {"allocator_ref": dev, "pointer": "0x200133200000"}),
           line("operation", "reallocate", {}, {"allocator_ref": dev, "new_ptr": "0x200133200400"},
                {"allocator_name": "DEVICE"}),
           # the fallback: no allocate/deallocate between (a move), then in place, then from null
           line("operation", "reallocate", {"size": 84}, {"allocator_ref": host, "current_ptr": "0x200133200200"}),
           line("operation", "reallocate", {}, {"allocator_ref": host, "new_ptr": "0x200004b70000"}),
           line("operation", "reallocate", {"size": 96}, {"allocator_ref": host, "current_ptr": "0x200004b70000"}),
           line("operation", "reallocate", {}, {"allocator_ref": host, "new_ptr": "0x200004b70000"}),
           line("operation", "reallocate", {"size": 0}, {"allocator_ref": host, "current_ptr": "0"}),
           line("operation", "reallocate", {}, {"allocator_ref": host, "new_ptr": "0x200004b80000"}),
           line("operation", "copy", {"dst_offset": 0, "size": 64, "src_offset": 12},
                {"dst": "0x200133200400", "dst_allocator_ref": dev, "src": "0x1048e8fc", "src_allocator_ref": host}),
           line("operation", "register_external_allocation", {"size": 4096},
                {"allocator_ref": dev, "pointer": "0x7f0000001000"}),
           line("operation", "deregister_external_allocation", None,
                {"allocator_ref": dev, "pointer": "0x7f0000001000"}),
           line("operation", "coalesce", None, {"allocator_ref": pool}),
           line("operation", "release", None, {"allocator_ref": pool}),
           line("operation", "deallocate", None, {"allocator_ref": dev, "pointer": "0x200133200400"}),
           line("operation", "deallocate", None, {"allocator_ref": host, "pointer": "0x200004b70000"}),
           line("statistic", "allocation_stats", {"current_size": 256}, {"allocator_ref": pool})]
    return ("\n".join(out) + "\n").encode()


def gz(data):
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as f:  # mtime 0: the same bytes on every run
        f.write(data)
    return buf.getvalue()


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    for name, obj, proto in snapshots():
        p = pickle.dumps(obj, protocol=proto)
        assert len(p) < 8 * KiB, (name, len(p))
        write("trace_reader_fuzz", name, b"\0" + p)
        write("pickle_fuzz", name, b"\0" + p)
        write("seed_fuzz", name, b"\3" + p)
    for name, obj, proto in snapshots()[:3:2] + snapshots()[6:8]:
        write("trace_reader_fuzz", name + ".gz", b"\0" + gz(pickle.dumps(obj, protocol=proto)))
        write("seed_fuzz", name + ".gz", b"\1" + gz(pickle.dumps(obj, protocol=proto)))
    k22, k21 = kineto(), kineto(newer=False, midrun=False)
    write("trace_reader_fuzz", "kineto_2022_midrun.json", b"\0" + k22)
    write("trace_reader_fuzz", "kineto_2022_midrun.json.gz", b"\0" + gz(k22))
    write("trace_reader_fuzz", "kineto_2021_noaddr.json.gz", b"\0" + gz(k21))
    write("seed_fuzz", "kineto_2022_midrun.json", b"\0" + k22)  # seeding from profiler totals
    write("seed_fuzz", "kineto_2022_midrun.json.gz", b"\2" + gz(k22))
    u = umpire2022()
    write("trace_reader_fuzz", "umpire_2022_reallocate", b"\0" + u)
    write("trace_reader_fuzz", "umpire_2022_reallocate.gz", b"\0" + gz(u))
    # gzipped copies of the hand-written seeds of the other formats (RMM CSV,
    # galloc text, Umpire's older layout), the format byte kept
    for name in ("rmm_csv", "galloc_text", "umpire_log"):
        with open(os.path.join(HERE, "trace_reader_fuzz", name), "rb") as f:
            data = f.read()
        write("trace_reader_fuzz", name + ".gz", data[:1] + gz(data[1:]))
    op_seeds()


def op_seeds():
    """Byte programs and config strings for the op-driven targets (op_seeds.py)."""
    for target, seeds in all_seeds().items():
        for name, data in seeds:
            write(target, name, data)


if __name__ == "__main__":
    main()

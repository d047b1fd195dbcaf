#!/usr/bin/env python3
"""check_snapshots.py: load the snapshots snapshot_roundtrip_fuzz kept with Python's own
pickle (which cannot run inside the fuzzer) and check them as PyTorch's viewer reads them.

Usage:
  mkdir -p /tmp/snaps
  GALLOC_FUZZ_SNAPSHOT_DIR=/tmp/snaps bazel-bin/fuzz/snapshot_roundtrip_fuzz -runs=0 \\
      fuzz/corpus/snapshot_roundtrip_fuzz $FUZZ_WORK/snapshot_roundtrip_fuzz/corpus
  fuzz/check_snapshots.py /tmp/snaps

Each N.pickle must load with pickle.load (protocol 2-4, no class references), equal its
N.json twin (galloc's JSON writer, tuples as lists; the `snapshot` entry each write adds
aside), and hold what MemoryViz.js needs
(docs of snapshot-format.md, 2.4): a dict with a list `segments` and a list of lists
`device_traces`; every segment's blocks tiling its total_size; every trace entry an action
with addr (device_free for oom), size and stream; no protocol 5 opcodes. Prints one line per
problem and a summary; exits 1 if any.
"""
import json
import os
import pickle
import pickletools
import sys


def lists(x):
    if isinstance(x, (list, tuple)):
        return [lists(v) for v in x]
    if isinstance(x, dict):
        return {k: lists(v) for k, v in x.items()}
    return x


def same(p, j):
    """The pickle and its JSON twin, written one after the other: the same dict, except
    that each write records its own `snapshot` trace entry, which in a full ring pushes
    out the oldest entry."""
    errs = []
    for key in set(p) | set(j):
        if key != "device_traces" and p.get(key) != j.get(key):
            errs.append(f"{key} differs from the JSON twin's")
    pt, jt = p.get("device_traces", []), j.get("device_traces", [])
    if len(pt) != len(jt):
        return errs + ["device_traces differ in length from the JSON twin's"]
    for d, (a, b) in enumerate(zip(pt, jt)):
        a = [e for e in a if e.get("action") != "snapshot"]
        b = [e for e in b if e.get("action") != "snapshot"]
        if a != b and a[1:] != b[: len(a) - 1]:
            errs.append(f"device_traces[{d}] differs from the JSON twin's")
    return errs


def check(snap):
    if not isinstance(snap, dict):
        return ["root is not a dict"]
    errs = []
    segs, traces = snap.get("segments"), snap.get("device_traces")
    if not isinstance(segs, list) or not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        return ["segments / device_traces are not lists (of lists)"]
    for i, s in enumerate(segs):
        total = sum(b["size"] for b in s["blocks"])
        if total != s["total_size"]:
            errs.append(f"segments[{i}]: blocks sum to {total}, total_size {s['total_size']}")
        at = s["address"]
        for j, b in enumerate(s["blocks"]):
            if b.get("address", at) != at:
                errs.append(f"segments[{i}].blocks[{j}]: address {b['address']:#x}, expected {at:#x}")
            at += b["size"]
            if b["state"] not in ("active_allocated", "active_pending_free", "inactive"):
                errs.append(f"segments[{i}].blocks[{j}]: state {b['state']!r}")
        if not isinstance(s["device"], int) or s["device"] >= len(traces):
            errs.append(f"segments[{i}]: device {s['device']!r} has no device_traces entry")
    for d, tr in enumerate(traces):
        for k, e in enumerate(tr):
            need = ("action", "size", "stream") + (("device_free",) if e.get("action") == "oom" else ("addr",))
            missing = [key for key in need if key not in e]
            if missing:
                errs.append(f"device_traces[{d}][{k}]: missing {missing}")
    return errs


def main(argv):
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    d, bad, n = argv[1], 0, 0
    for name in sorted(f for f in os.listdir(d) if f.endswith(".pickle")):
        n += 1
        path = os.path.join(d, name)
        with open(path, "rb") as f:
            data = f.read()
        errs = []
        try:
            snap = pickle.loads(data)
        except Exception as e:  # what Python's pickle refuses is the finding
            errs.append(f"pickle.load: {e!r}")
            snap = None
        if snap is not None:
            proto = max((arg for op, arg, _ in pickletools.genops(data) if op.name == "PROTO"), default=0)
            if proto not in (2, 3, 4):
                errs.append(f"protocol {proto}")
            errs += check(snap)
            twin = path[: -len(".pickle")] + ".json"
            if os.path.exists(twin):
                with open(twin, encoding="utf-8") as f:
                    errs += same(lists(snap), json.load(f))
        for e in errs:
            print(f"{path}: {e}")
        bad += bool(errs)
    print(f"{n} snapshots checked, {bad} with problems")
    return 1 if bad or n == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

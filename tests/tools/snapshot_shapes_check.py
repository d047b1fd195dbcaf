#!/usr/bin/env python3
"""snapshot_shapes_check.py GALLOC DATA TMPDIR: issue 38's snapshot writer
bullets, one check each, with exact figures, on the shapes of
data/make_snapshot_shapes.py and PyTorch 2.11's own H200 snapshot:

  state:   a state-only snapshot, one whose trace is one "snapshot" marker and
           one of CUDA-graph pools (0, 1) and (0, 2) are written (they exited
           2 with "not written: --snapshot-range starts at event 0"), with
           their segments, blocks and states, frames and pools;
  size:    the H200 replay shares each frames list, frame dict and string
           once (PyTorch's file: 5,733 lists, 488 dicts, 941 strings; galloc
           wrote 804,454 dicts): 84 lists for its 84 stacks, 412 dicts for its
           412 frames, 432 strings, 9,309 dicts in all, at most 1.5x the input;
  segment_free: its 86 segment_free entries carry their own recorded frames
           and time_us (they had their segment_alloc's and a replay clock);
  markers: "snapshot" entries are kept, with their size and time;
  requested: its 11 inactive blocks keep PyTorch's requested_size.
Each prints what it checked; the first failure of a check is printed and the
script goes on to the next; exit 1 if any failed.
"""
import collections
import os
import pickle
import pickletools
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

M = 1 << 20
X = 0x7F5A00000000
T0 = 1_700_000_000_000_000


def replay(galloc, path, out):
    p = subprocess.run([galloc, "replay", "--no-owners", "--snapshot", out, path], capture_output=True, text=True)
    if p.returncode not in (0, 1):  # 1: the replay ran out of memory (the H200 run's own OOM)
        raise sc.Mismatch(f"{os.path.basename(path)}: exit {p.returncode}: {p.stderr.strip()[:300]}")
    snap, data = sc.load(out)
    sc.check_opcodes(data, out)
    return snap, data


def eq(what, got, want):
    if got != want:
        raise sc.Mismatch(f"{what}: got {got!r}, want {want!r}")


def blocks(snap):
    return {g["address"]: (tuple(g["segment_pool_id"]), g["segment_type"], g["requested_size"],
                           [(b["size"], b["state"], b["requested_size"] if b["state"] != "inactive" else None,
                             len(b["frames"])) for b in g["blocks"]])
            for g in snap["segments"]}


def check_state(galloc, data, tmp):
    for name in ("shape_state_only", "shape_oom_marker", "shape_graph_pools"):
        path = os.path.join(data, name + ".pickle")
        out, _ = replay(galloc, path, os.path.join(tmp, name + ".pickle"))
        inp, _ = sc.load(path)
        sc.compare_replay(inp, out, 0, True, True, name)  # every segment, block, frame and pool
    out, _ = sc.load(os.path.join(tmp, "shape_state_only.pickle"))
    eq("state only: trace", out["device_traces"], [[]])
    eq("state only: segments", blocks(out), {
        X: ((0, 0), "large", 6_000_000, [(4 * M, "active_allocated", 4_000_000, 3),
                                         (2 * M, "active_pending_free", 2_000_000, 3), (14 * M, "inactive", None, 0)]),
        X + 32 * M: ((0, 0), "small", 100, [(512, "active_allocated", 100, 3), (2 * M - 512, "inactive", None, 0)])})
    eq("state only: segment frames", [len(g["frames"]) for g in out["segments"]], [2, 2])
    out, _ = sc.load(os.path.join(tmp, "shape_oom_marker.pickle"))
    eq("oom marker: trace", [(e["action"], e["addr"], e["size"], e["time_us"], e["frames"])
                             for e in out["device_traces"][0]], [("snapshot", 0, 6 * M + 512, T0 + 99, [])])
    out, _ = sc.load(os.path.join(tmp, "shape_graph_pools.pickle"))
    eq("graph pools: pools by address", {g["address"]: tuple(g["segment_pool_id"]) for g in out["segments"]},
       {X - 96 * M: (0, 2), X - 64 * M: (0, 1), X - 32 * M: (0, 1), X: (0, 0)})
    return "state-only, one-marker and graph-pool snapshots written with their state, frames and pools"


def h200(galloc, data, tmp):
    path = os.path.join(data, "h200", "torch211_h200_full_default.pickle.gz")
    out_path = os.path.join(tmp, "h200_full_default.pickle")
    if not os.path.exists(out_path):
        replay(galloc, path, out_path)
    inp, raw_in = sc.load(path)
    out, raw_out = sc.load(out_path)
    return inp, raw_in, out, raw_out


def check_size(galloc, data, tmp):
    inp, raw_in, out, raw_out = h200(galloc, data, tmp)
    trace = out["device_traces"][0]
    eq("entries", len(trace), 8716)
    eq("frames lists", len({id(e["frames"]) for e in trace if e["frames"]}), 84)
    eq("distinct recorded stacks", len({tuple(sc.frames_of(e["frames"])) for e in inp["device_traces"][0]}), 84)
    eq("frame dicts", len({id(f) for e in trace for f in e["frames"]}), 412)
    eq("frame strings", len({id(f[k]) for e in trace for f in e["frames"] for k in ("filename", "name")}), 432)
    ops = collections.Counter(op.name for op, _, _ in pickletools.genops(raw_out))
    eq("dicts written (8,716 entries, 412 frames, 20 segments, 158 blocks, 2 settings, the root)", ops["EMPTY_DICT"],
       9309)
    if len(raw_out) > 1.5 * len(raw_in):
        raise sc.Mismatch(f"{len(raw_out)} bytes for {len(raw_in)}: more than 1.5x")
    return f"{len(raw_out)} bytes for the input's {len(raw_in)} ({len(raw_out) / len(raw_in):.3f}x), 84 lists, 412 " \
           f"frame dicts, 432 strings, 9,309 dicts"


def check_segment_free(galloc, data, tmp):
    inp, _, out, _ = h200(galloc, data, tmp)
    rec = [e for e in inp["device_traces"][0] if e["action"] == "segment_free"]
    got = [e for e in out["device_traces"][0] if e["action"] == "segment_free"]
    eq("segment_free entries", len(got), 86)
    eq("their addresses and sizes", [(e["addr"], e["size"]) for e in got], [(e["addr"], e["size"]) for e in rec])
    eq("their time_us", [e["time_us"] for e in got], [e["time_us"] for e in rec])
    eq("their frames", [sc.frames_of(e["frames"]) for e in got], [sc.frames_of(e["frames"]) for e in rec])
    eq("the first one's frames (empty_cache's 21)", len(got[0]["frames"]), 21)
    return "86 of 86 segment_free entries with their own recorded frames and time_us"


def check_markers(galloc, data, tmp):
    path = os.path.join(data, "shape_markers.pickle")
    out, _ = replay(galloc, path, os.path.join(tmp, "shape_markers.pickle"))
    inp, _ = sc.load(path)
    sc.compare_replay(inp, out, 0, True, True, "markers")
    eq("markers", [(i, e["size"], e["time_us"]) for i, e in enumerate(out["device_traces"][0])
                   if e["action"] == "snapshot"], [(2, 4 * M, T0 + 20), (6, 2 * M, T0 + 50)])
    return "2 of 2 snapshot markers kept in place, with their active bytes and time_us"


def check_requested(galloc, data, tmp):
    inp, _, out, _ = h200(galloc, data, tmp)

    def inactive(s):
        return [(g["address"], b["size"], b["requested_size"]) for g in s["segments"] for b in g["blocks"]
                if b["state"] == "inactive"]
    eq("inactive blocks", inactive(out), inactive(inp))
    eq("their requested sizes", [r for _, _, r in inactive(out)],
       [1638400, 6553600, 1638400, 3145728, 4194304, 1638400, 4, 2048, 1638400, 4194304, 1638400])
    return "11 of 11 inactive blocks with PyTorch's requested_size"


def main():
    galloc, data, tmp = sys.argv[1:4]
    failed = 0
    for check in (check_state, check_size, check_segment_free, check_markers, check_requested):
        try:
            print(f"{check.__name__}: {check(galloc, data, tmp)}")
        except (sc.Mismatch, KeyError, ValueError, TypeError, OSError) as e:
            failed += 1
            print(f"FAIL: {check.__name__}: {type(e).__name__}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

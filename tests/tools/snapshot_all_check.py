#!/usr/bin/env python3
"""snapshot_all_check.py GALLOC TMPDIR FILE...: replay every trace with
`galloc replay --snapshot` under its recorded settings (a snapshot's own,
the "recorded" column; PyTorch's defaults for a trace that records none) and
check each file written (snapshot_check.py says what each check is):

  every trace:     Python's pickle loads it, only MemoryViz's opcodes, and
                   the viewer's undo walk over its whole trace ends at the
                   replay's own start (the prologue or seeded live blocks):
                   no entry missing, none extra; a state larger than the
                   device stops the replay before its first entry: the
                   file holds the blocks seeded before the failed request
                   and no entry;
  PyTorch snapshot: also every recorded entry (with its frames and time_us),
                   every final segment, block and pool kept (a recorded
                   OOM the replay avoided is written as its alloc and
                   free_requested), and each file
                   (one per device) at most MAX_RATIO x the input's
                   uncompressed bytes (plus, for an input without
                   allocator_settings, those galloc writes).
                   A trace of another format has no recorded snapshot to
                   compare with: the first line's checks only.

Inputs galloc refuses (REFUSED) must exit 2 with their reason and write
nothing. Prints one line per trace (units, entries kept, size ratio) and
exits 1 on the first failure of any trace, after checking every trace.
"""
import json
import os
import pickle
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import snapshot_check as sc  # noqa: E402

MAX_RATIO = 1.5

# Refused by galloc's readers, on purpose (their own tests say why).
REFUSED = {
    "torch20_noaddr.pickle": "expected a live block with int 'size' and 'address'",
    "torch_segments_idle.pickle": "with no allocated block: it holds no trace",
    "snapshot_bad_device.pickle": "'device' is not the index of its list",
}
# Replayed, but their final state is not PyTorch's to compare with: a block
# that is an empty dict (the start state cannot be rebuilt; seed_test).
NOT_COMPARED = {"live_block_no_size.pickle"}


# Written by PyTorch's rules, free blocks' requested_size too (make_snapshot_shapes.py).
SHAPES = {"shape_state_only.pickle", "shape_oom_marker.pickle", "shape_graph_pools.pickle", "shape_markers.pickle"}


def verify(galloc, path):
    """--verify's verdict per unit: whether the replay makes the recording's decisions."""
    p = subprocess.run([galloc, "replay", "--verify", "--json", path], capture_output=True, text=True)
    return {t["unit"]: t.get("verdict") for t in json.loads(p.stdout)["traces"]}


def run(galloc, path, out):
    p = subprocess.run([galloc, "replay", "--no-owners", "--json", "--snapshot", out, path], capture_output=True,
                       text=True)
    return p.returncode, p.stdout, p.stderr


def check_file(galloc, tmp, k, path):
    name = os.path.basename(path)
    out = os.path.join(tmp, f"all{k}.pickle")
    rc, stdout, stderr = run(galloc, path, out)
    if name in REFUSED:
        if rc != 2 or REFUSED[name] not in stderr:
            raise sc.Mismatch(f"exit {rc}, want 2 with '{REFUSED[name]}': {stderr[:300]}")
        return "refused as it should be: " + REFUSED[name]
    if rc not in (0, 1):
        raise sc.Mismatch(f"exit {rc}: {stderr[:500]}")
    doc = json.loads(stdout)
    inp = data = None
    is_torch = doc["traces"] and doc["traces"][0]["format"] == "torch"
    if is_torch:
        inp, data = sc.load(path)
        if isinstance(inp, list):  # torch.cuda.memory_snapshot(): segments, no trace
            inp = {"segments": inp, "device_traces": []}
        verdicts = verify(galloc, path)
    units, entries, written, largest, added = 0, 0, 0, 0, 0
    for t in doc["traces"]:
        (r,) = t["results"]  # one column: the recorded settings (or the defaults)
        snap = r["snapshot"]
        if snap is None or snap["error"] is not None:
            raise sc.Mismatch(f"{t['unit'] or 'device 0'}: not written: {snap}")
        what = f"{name} {t['unit']}".strip()
        before = t["seeded"]["live_blocks"] if t["seeded"] else t["prologue_allocs"]
        stopped = any(o.get("before_first_event") for o in r["ooms"])
        if stopped:
            # A state larger than the device: the replay stops at its start,
            # holding the blocks seeded before the request that failed, and
            # replays no entry.
            before = r["memory_stats"]["allocation.all.current"]
        got, raw = sc.check_written(snap["path"], t["device"], before, t["seeded"] is not None, what)
        written += len(raw)
        largest = max(largest, len(raw))
        if stopped:
            if got["device_traces"][t["device"]] if t["device"] < len(got["device_traces"]) else []:
                raise sc.Mismatch(f"{what}: entries written after the start ran out of memory")
        if inp is not None and "allocator_settings" not in inp:
            added = len(pickle.dumps(got["allocator_settings"], protocol=4))
        units += 1
        if stopped:
            continue
        if is_torch and name not in NOT_COMPARED:
            agrees = verdicts.get(t["unit"]) in ("agrees", "nothing to verify")
            entries += sc.compare_replay(inp, got, t["device"], agrees, "/h200/" in path or name in SHAPES, what)
        else:
            entries += len(got["device_traces"][t["device"]])
    line = f"{units} unit(s), {entries} entries"
    if is_torch:
        line += f", {written} bytes written for {len(data)} ({written / len(data):.3f}x)"
        if units > 1:
            line += f", the largest of {units} files {largest} ({largest / len(data):.3f}x)"
        # Each file is held to the bound (one per device, each a whole
        # snapshot). galloc always writes allocator_settings, as PyTorch 2.6+
        # does: an input without them (older, hand-made) is allowed their bytes.
        if largest > MAX_RATIO * len(data) + added:
            raise sc.Mismatch(f"{line}: more than {MAX_RATIO}x the input" +
                              (f" plus {added} bytes of allocator_settings it lacks" if added else ""))
        if added:
            line += f", allowed {added} bytes of allocator_settings the input lacks"
    return line


def main():
    galloc, tmp, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    failed = 0
    for k, path in enumerate(files):
        shown = path.split(".runfiles/galloc/")[-1]
        try:
            print(f"{shown}: {check_file(galloc, tmp, k, path)}")
        except (sc.Mismatch, KeyError, ValueError, TypeError) as e:
            failed += 1
            print(f"FAIL: {shown}: {type(e).__name__}: {e}")
    print(f"{len(files) - failed} of {len(files)} traces pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

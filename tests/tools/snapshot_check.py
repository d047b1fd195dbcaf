#!/usr/bin/env python3
"""snapshot_check.py: what a snapshot galloc replay --snapshot wrote must
hold, checked with Python's own pickle (shared by snapshot_all_test.sh and
snapshot_shapes_test.sh).

Every written snapshot (check_written):
  - pickle.load reads it; it declares protocol 4 and uses only the opcodes
    MemoryViz.js's unpickler knows;
  - MemoryViz's Allocator State History can undo its whole trace from its
    final segments (viewer_walk): every alloc, free_requested and lone
    free_completed finds its block, every segment_alloc its segment, and a
    block a free re-creates lies in a segment then; the blocks left live
    before the first entry are exactly those the replay made before it
    recorded (the prologue, or the seeded start state's live blocks), so no
    entry of the replay's record is missing or extra.

A snapshot replayed under its recorded settings (compare_replay) "keeps every
recorded entry": for each device,
  - trace: the replay's entries equal the recording's, one for one and in
    order, in action, addr (oom: device_free), size, stream, time_us (where
    the recording has one) and frames (every frame's filename, name and
    line; no 'frames' key is the empty list); the recording's 'snapshot'
    markers are entries too. Left out of the comparison: 'annotate' entries
    (the replay keeps their user_metadata as external annotations, checked
    there) and actions galloc does not know;
  - final state: the same segments (address, total_size, segment_type,
    stream, is_expandable, segment_pool_id, allocated/active/requested sums),
    each with the same blocks (address, size, state), every active block with
    its requested_size and frames, inactive blocks with their requested_size
    in segments the trace made (a seeded start state's free blocks say the
    seeding's requests: PyTorch's are not knowable from a snapshot), and the
    segment's frames where the recording has any (PyTorch 2.x leaves them
    empty once the segment's head block is split off);
  - size: each written file (one per device) holds at most max_ratio x
    the recording's uncompressed bytes (plus, for a recording without
    allocator_settings, the bytes of those galloc writes).
Where the replay does not make the recording's decisions (--verify says
"diverges": a hand-made trace PyTorch's rules would not have produced), the
trace comparison keeps to the program's own calls (alloc, free_requested,
oom, snapshot; addresses aside) and the final state is not compared. In
every case every recorded frame appears in the written file and every
recorded pool id names a segment of it. Inactive blocks' requested_size is compared for
PyTorch's own recordings only: a hand-made snapshot's free blocks say what
its author chose (the size, 0).
"""
import gzip
import pickle
import pickletools

VIEWER_OPCODES = {
    "PROTO", "FRAME", "STOP", "MARK", "NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1",
    "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE", "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_LIST", "LIST",
    "APPEND", "APPENDS", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "MEMOIZE", "BINPUT", "LONG_BINPUT",
    "BINGET", "LONG_BINGET",
}
REPLAYED = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
            "segment_unmap", "snapshot", "oom"}


class Mismatch(AssertionError):
    pass


def read_bytes(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        return f.read()


def load(path):
    data = read_bytes(path)
    return pickle.loads(data), data


def check_opcodes(data, what):
    protos = []
    seen = set()
    for op, arg, _ in pickletools.genops(data):
        seen.add(op.name)
        if op.name == "PROTO":
            protos.append(arg)
    if protos != [4]:
        raise Mismatch(f"{what}: PROTO {protos}, want [4]")
    if seen - VIEWER_OPCODES:
        raise Mismatch(f"{what}: opcodes MemoryViz cannot read: {sorted(seen - VIEWER_OPCODES)}")


class Ranges:
    """Address ranges held (segments, or an expandable segment's mapped pages)."""

    def __init__(self):
        self.r = []

    def add(self, a, n):
        self.r.append((a, a + n))

    def remove(self, a, n):
        """Take [a, a + n) out; false when some of it was not held."""
        out, cut = [], 0
        for s, e in self.r:
            lo, hi = max(s, a), min(e, a + n)
            if lo >= hi:
                out.append((s, e))
                continue
            cut += hi - lo
            if s < lo:
                out.append((s, lo))
            if hi < e:
                out.append((hi, e))
        self.r = out
        return cut == n

    def holds(self, a):
        return any(s <= a < e for s, e in self.r)


def viewer_walk(snap, device, what):
    """Undo snap's trace of device from its final state, as MemoryViz's
    Allocator State History does; return how many blocks are live before
    the first entry."""
    live = {}
    segs = Ranges()
    for g in snap["segments"]:
        if g["device"] != device:
            continue
        segs.add(g["address"], g["total_size"])
        addr = g["address"]
        for b in g["blocks"]:
            if b["state"] != "inactive":
                live[addr] = b["state"] == "active_pending_free"
            addr += b["size"]
    trace = snap["device_traces"][device] if device < len(snap["device_traces"]) else []
    i = len(trace)
    while i > 0:
        i -= 1
        e = trace[i]
        act, addr = e["action"], e.get("addr")
        where = f"{what}: device_traces[{device}][{i}] ({act} {addr})"
        if act == "free_completed" and i > 0 and trace[i - 1]["action"] == "free_requested" and \
                trace[i - 1].get("addr") == addr:
            i -= 1  # MemoryViz merges the pair into one 'free'
            act = "free"
        if act in ("free", "free_completed"):
            if addr in live:
                raise Mismatch(f"{where}: re-created while live")
            if not segs.holds(addr):
                raise Mismatch(f"{where}: the freed block lies in no segment then")
            live[addr] = act == "free_completed"  # pending until completed
        elif act == "free_requested":
            if addr not in live:
                raise Mismatch(f"{where}: no block to undo the request of")
            live[addr] = False
        elif act == "alloc":
            if live.pop(addr, None) is None:
                raise Mismatch(f"{where}: no block to undo")
        elif act in ("segment_free", "segment_unmap"):
            segs.add(addr, e["size"])
        elif act in ("segment_alloc", "segment_map"):
            if not segs.remove(addr, e["size"]):
                raise Mismatch(f"{where}: undone where no segment was")
    return len(live)


def check_written(path, device, live_before, exact, what):
    """A written snapshot: loads, the viewer's opcodes, its record complete:
    live_before blocks live before its first entry (at most that many when
    not exact: a prologue's count holds its reserve event too)."""
    snap, data = load(path)
    check_opcodes(data, what)
    left = viewer_walk(snap, device, what)
    if left > live_before or (exact and left != live_before):
        raise Mismatch(f"{what}: {left} blocks live before the first entry, want {'' if exact else 'at most '}"
                       f"{live_before} (the replay's own start)")
    return snap, data


def frames_of(v):
    return [(f.get("filename"), f.get("name"), f.get("line")) for f in (v or [])]


def norm_blocks(g):
    """A segment's blocks as (address, size, state, requested_size, frames),
    PyTorch 2.0 blocks (no address, the request and frames in history[0])
    read as MemoryViz reads them."""
    out, addr = [], g["address"]
    for b in g["blocks"]:
        hist = (b.get("history") or [{}])[0]
        req = b.get("requested_size", hist.get("real_size"))
        fr = b.get("frames", hist.get("frames"))
        out.append((b.get("address", addr), b["size"], b["state"], req, frames_of(fr)))
        addr += b["size"]
    return out


def compare_entry(i, x, y, what):
    keys = ["action", "size", "stream"] + (["device_free"] if x["action"] == "oom" else ["addr"])
    if "time_us" in x:
        keys.append("time_us")
    for k in keys:
        if x.get(k) != y.get(k):
            raise Mismatch(f"{what}: entry {i} ({x['action']}): {k} {y.get(k)!r}, recorded {x.get(k)!r}")
    if frames_of(x.get("frames")) != frames_of(y.get("frames")):
        raise Mismatch(f"{what}: entry {i} ({x['action']}): frames {frames_of(y.get('frames'))[:2]}..., recorded "
                       f"{frames_of(x.get('frames'))[:2]}...")


def all_frames(snap, device):
    """Every frame (filename, name, line) of device's entries, blocks and segments."""
    out = set()
    trace = snap["device_traces"][device] if device < len(snap["device_traces"]) else []
    for e in trace:
        out.update(frames_of(e.get("frames")))
    for g in snap["segments"]:
        if g["device"] == device:
            out.update(frames_of(g.get("frames")))
            for b in norm_blocks(g):
                out.update(b[4])
    return out


def fold_avoided(want, got):
    """got with each recorded OOM the replay avoided (an alloc of the OOM's
    size and its free_requested where the recording has the oom: the replay
    made the request, then gave it back as PyTorch's caller would have had
    it failed) read back as the oom entry, so the calls line up."""
    out, j = [], 0
    for x in want:
        if j >= len(got):
            break
        y = got[j]
        if (x["action"] == "oom" and y["action"] == "alloc" and y["size"] == x["size"] and j + 1 < len(got) and
                got[j + 1]["action"] == "free_requested" and got[j + 1]["size"] == x["size"]):
            out.append(dict(y, action="oom", device_free=x.get("device_free")))
            j += 2
        else:
            out.append(y)
            j += 1
    return out + got[j:]


def compare_replay(inp, out, device, agrees, pytorch_written, what):
    """out, the replay of device of the recording inp: every entry, frame,
    time_us, block and pool kept (see the module's docstring). agrees: the
    replay made the recording's own decisions (--verify agrees, or a state
    with nothing to verify); else only the program's own calls are compared
    (alloc, free_requested, oom, snapshot: addresses aside, as the replay
    placed them), and the pools and frames as sets. pytorch_written: the
    recording is PyTorch's own, whose free blocks say their last request."""
    rec = inp["device_traces"][device] if device < len(inp["device_traces"]) else []
    got = out["device_traces"][device] if device < len(out["device_traces"]) else []
    # Recorded with skip_actions=["free_requested"] (free_completed entries
    # alone): the replay records both halves of each free; compare without
    # the half the recording left out.
    acts = {e.get("action") for e in rec}
    if "free_completed" in acts and "free_requested" not in acts:
        got = [e for e in got if e.get("action") != "free_requested"]
    want = [e for e in rec if e.get("action") in REPLAYED]
    missing = all_frames(inp, device) - all_frames(out, device)
    if missing:
        raise Mismatch(f"{what}: {len(missing)} recorded frames missing, e.g. {sorted(missing)[:2]}")
    pools_in = {tuple(g.get("segment_pool_id", (0, 0))) for g in inp["segments"] if g["device"] == device}
    pools_out = {tuple(g["segment_pool_id"]) for g in out["segments"] if g["device"] == device}
    if not pools_in <= pools_out:
        raise Mismatch(f"{what}: pools {sorted(pools_out)}, recorded {sorted(pools_in)}")
    if not agrees:
        calls = ("alloc", "free_requested", "oom", "snapshot")
        want = [dict(e, addr=None) for e in want if e["action"] in calls]
        got = [dict(e, addr=None) for e in got if e["action"] in calls]
    if not agrees:
        got = fold_avoided(want, got)
    if len(got) != len(want):
        raise Mismatch(f"{what}: {len(got)} entries, recorded {len(want)} (of {len(rec)})")
    for i, (x, y) in enumerate(zip(want, got)):
        compare_entry(i, x, y, what)
    if not agrees:
        return len(want)
    notes = [e["user_metadata"] for e in rec if e.get("action") == "annotate" and isinstance(e.get("user_metadata"), str)]
    names = [a.get("name") for a in out.get("external_annotations", [])]
    if names[:len(notes)] != notes:
        raise Mismatch(f"{what}: annotate entries {notes[:3]} not kept as external annotations ({names[:3]})")
    made = {e["addr"] for e in rec if e.get("action") in ("segment_alloc", "segment_map")}
    segs_in = {g["address"]: g for g in inp["segments"] if g["device"] == device}
    segs_out = {g["address"]: g for g in out["segments"] if g["device"] == device}
    if sorted(segs_in) != sorted(segs_out):
        raise Mismatch(f"{what}: segments at {sorted(segs_out)}, recorded at {sorted(segs_in)}")
    for a, x in segs_in.items():
        y = segs_out[a]
        at = f"{what}: segment {a:#x}"
        for k in ("total_size", "segment_type", "stream", "allocated_size", "active_size", "requested_size"):
            if k in x and x[k] != y[k]:
                raise Mismatch(f"{at}: {k} {y[k]!r}, recorded {x[k]!r}")
        if x.get("is_expandable", False) != y["is_expandable"]:
            raise Mismatch(f"{at}: is_expandable {y['is_expandable']!r}, recorded {x.get('is_expandable')!r}")
        if tuple(x.get("segment_pool_id", (0, 0))) != tuple(y["segment_pool_id"]):
            raise Mismatch(f"{at}: segment_pool_id {y['segment_pool_id']!r}, recorded {x.get('segment_pool_id')!r}")
        if x.get("frames") and frames_of(x["frames"]) != frames_of(y["frames"]):
            raise Mismatch(f"{at}: frames differ")
        bx, by = norm_blocks(x), norm_blocks(y)
        if [b[:3] for b in bx] != [b[:3] for b in by]:
            raise Mismatch(f"{at}: blocks {[b[:3] for b in by]}, recorded {[b[:3] for b in bx]}")
        for b, c in zip(bx, by):
            if b[2] != "inactive" and (b[3], b[4]) != (c[3], c[4]):
                raise Mismatch(f"{at}: block {b[0]:#x}: requested_size {c[3]} / frames {c[4][:1]}, recorded "
                               f"{b[3]} / {b[4][:1]}")
            if b[2] == "inactive" and pytorch_written and a in made and b[3] is not None and b[3] != c[3]:
                raise Mismatch(f"{at}: inactive block {b[0]:#x}: requested_size {c[3]}, recorded {b[3]}")
    return len(want)

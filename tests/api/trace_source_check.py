"""trace_source_check.py WANT: load the snapshots a trace source test wrote
(pickle and/or JSON, named in WANT) with Python's own pickle and json modules
and check every frames list and time against what the source supplied.

WANT (JSON, written by trace_source_test.cc):
  pickle, json: paths (pickle may be null)
  big: tokens whose frames are BIG_FRAMES frames with BIG_NAME-byte names
  entries: [action, time_token, frames] per trace entry, in order
  segments: [address, frames] per segment, in address order
  blocks: [address, state, frames] per active block (inactive blocks: no frames)
  annotations: [stage, name, time_token]
where time_token 0 means galloc's own clock, and frames is a token (the
source's frames of that token for the entry's action, "block" or
"segment"), 0 (none) or "cb" (the frames callback's one frame).
The source's frames, as trace_source_test.cc's SourceFrames makes them: none
for a token divisible by 4; else BIG_FRAMES (big tokens) or token % 4 frames,
name f"{action}@{token}#{i}:" padded with 'x' to BIG_NAME bytes (big tokens),
filename f"rec/{token}/{i}.py", line token * 1000 + i.
Exit 0 when everything matches, 1 with the mismatches listed."""
import json
import pickle
import sys

BIG_FRAMES = 200
BIG_NAME = 10240
CLOCK_AFTER_US = 10**15  # galloc's clock: microseconds since the epoch, after 2001

errors = []


def eq(what, got, want):
    if got != want:
        g, w = repr(got), repr(want)
        errors.append(f"{what}: got {g[:300]}, want {w[:300]}")


def source_frames(token, action, big):
    if token % 4 == 0:
        return []
    n = BIG_FRAMES if token in big else token % 4
    out = []
    for i in range(n):
        name = f"{action}@{token}#{i}:"
        if token in big:
            name += "x" * (BIG_NAME - len(name))
        out.append({"name": name, "filename": f"rec/{token}/{i}.py", "line": token * 1000 + i})
    return out


def expected_frames(spec, action, big):
    if spec == "cb":
        return [{"name": "forward", "filename": "train.py", "line": 42}]
    return source_frames(spec, action, big) if spec else []


def check_time(what, got, token):
    if token == 0:
        eq(f"{what} time_us from galloc's clock", got > CLOCK_AFTER_US, True)
    else:
        eq(f"{what} time_us", got, 1000 * token)


def check(snap, want, label):
    big = set(want["big"])
    trace = snap["device_traces"][0]
    eq(f"{label}: entries", [e["action"] for e in trace], [w[0] for w in want["entries"]])
    for i, (e, (action, time_token, frames)) in enumerate(zip(trace, want["entries"])):
        what = f"{label}: entry {i} ({action})"
        check_time(what, e["time_us"], time_token)
        eq(f"{what} frames", e["frames"], expected_frames(frames, action, big))
    segs = snap["segments"]
    eq(f"{label}: segments", [s["address"] for s in segs], [w[0] for w in want["segments"]])
    active = []
    for s, (addr, frames) in zip(segs, want["segments"]):
        eq(f"{label}: segment {addr:#x} frames", s["frames"], expected_frames(frames, "segment", big))
        for b in s["blocks"]:
            if b["state"] == "inactive":
                eq(f"{label}: inactive block {b['address']:#x} frames", b["frames"], [])
            else:
                active.append(b)
    eq(f"{label}: active blocks", [[b["address"], b["state"]] for b in active],
       [[w[0], w[1]] for w in want["blocks"]])
    for b, (addr, state, frames) in zip(active, want["blocks"]):
        eq(f"{label}: block {addr:#x} frames", b["frames"], expected_frames(frames, "block", big))
    notes = snap["external_annotations"]
    eq(f"{label}: annotations", [[x["stage"], x["name"]] for x in notes], [w[:2] for w in want["annotations"]])
    for x, w in zip(notes, want["annotations"]):
        check_time(f"{label}: annotation {w[0]}", x["time_us"], w[2])


def main():
    with open(sys.argv[1]) as f:
        want = json.load(f)
    snaps = []
    if want.get("pickle"):
        with open(want["pickle"], "rb") as f:
            snaps.append(("pickle", pickle.load(f)))
    with open(want["json"]) as f:
        snaps.append(("json", json.load(f)))
    for label, snap in snaps:
        check(snap, want, label)
    if len(snaps) == 2:
        # The same dictionary both times: the first write added no "snapshot"
        # entry to the trace the second one wrote.
        eq("json equals pickle", snaps[1][1] == json.loads(json.dumps(snaps[0][1])), True)

    if errors:
        print("\n".join(errors[:50]))
        return 1
    print("ok")
    return 0


sys.exit(main())

#!/usr/bin/env python3
"""Extract the distinct recorded stacks of a PyTorch snapshot's allocations (site_test's fixture).

    python3 tests/tools/data/stacks/extract_stacks.py SNAPSHOT.pickle[.gz] OUT.stacks

Reads the pickle that torch.cuda.memory._snapshot() returns (the system python3's gzip
and pickle only, no torch) and writes, for device 0's trace, every distinct stack of its
`alloc` and `oom` entries, in the order each first appears. A stack is the entry's
`frames` (innermost first; with stacks="all", PyTorch's default, C++ and Python frames),
then the record_function annotations in force at the entry's time_us, innermost first,
as frames with a name only: what trace_reader.h says a snapshot reader yields
(GA_STACK_FRAMES). An annotation is in force from its START entry in
`external_annotations` to its END entry on the same device.

The output is text, one record a line, fields separated by tabs:

    f  ID  LINE  FILE  NAME          a frame; FILE "-" is no file (an annotation),
                                     "" an empty one (as C++ frames record it)
    s  ID  COUNT ACTION FRAME_IDS    a stack: how many entries carry it, alloc or oom,
                                     its frame ids innermost first (space-separated)
    # ...                            a comment: where the stack comes from, for a reader

Frames are shared between stacks (each distinct (file, line, name) once), so the file
stays small. Deterministic: the same snapshot gives the same bytes.
"""
import gzip
import pickle
import sys

NO_FILE = "-"


def load(path):
    with open(path, "rb") as f:
        head = f.read(2)
    opener = gzip.open if head == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return pickle.load(f)


def annotations_in_force(snap, device):
    """(time_us, names in force innermost first) after each START or END, in time order."""
    events = [a for a in snap.get("external_annotations", []) if a.get("device", device) == device]
    events.sort(key=lambda a: a["time_us"])
    steps, stack = [], []
    for a in events:
        if a["stage"] == "START":
            stack.append(a["name"])
        elif a["name"] in stack:  # END closes the innermost range of that name
            del stack[len(stack) - 1 - stack[::-1].index(a["name"])]
        steps.append((a["time_us"], list(reversed(stack))))
    return steps


def in_force(steps, t):
    names = []
    for when, now in steps:  # few annotations: a linear walk is enough
        if when > t:
            break
        names = now
    return names


def clean(text, what):
    if "\t" in text or "\n" in text:
        sys.exit("extract_stacks: a %s holds a tab or a newline: %r" % (what, text))
    return text


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: extract_stacks.py SNAPSHOT.pickle[.gz] OUT.stacks")
    snap = load(sys.argv[1])
    device = 0
    steps = annotations_in_force(snap, device)
    frame_id, frames = {}, []
    stack_id, stacks = {}, []
    for e in snap["device_traces"][device]:
        if e["action"] not in ("alloc", "oom"):
            continue
        ids = []
        recorded = [(f["filename"], f["line"], f["name"]) for f in e.get("frames", [])]
        labels = [(NO_FILE, 0, name) for name in in_force(steps, e.get("time_us", 0))]
        for fr in recorded + labels:
            if fr not in frame_id:
                frame_id[fr] = len(frames)
                frames.append(fr)
            ids.append(frame_id[fr])
        key = (e["action"], tuple(ids))
        if key not in stack_id:
            stack_id[key] = len(stacks)
            stacks.append([e["action"], ids, 0])
        stacks[stack_id[key]][2] += 1

    out = [
        "# galloc site fixture: the distinct stacks of device 0's alloc and oom entries in",
        "# %s, written by tests/tools/data/stacks/extract_stacks.py (see its docstring)." % sys.argv[1].split("/")[-1],
        "# %d frames, %d stacks." % (len(frames), len(stacks)),
    ]
    for i, (file, line, name) in enumerate(frames):
        out.append("f\t%d\t%d\t%s\t%s" % (i, line, clean(file, "file"), clean(name, "name")))
    for i, (action, ids, count) in enumerate(stacks):
        # A hint for a reader of the file, not a classification: the innermost Python
        # frame, the innermost one outside site-packages, the innermost node's apply.
        py = [frames[j] for j in ids if frames[j][1] > 0]
        own = [f for f in py if "-packages/" not in f[0]][:1]
        node = [frames[j][2].split("(")[0] for j in ids if "::apply(" in frames[j][2]][:1]
        note = "; ".join("%s:%d %s" % (f.split("/")[-1], ln, n) for f, ln, n in (py[:1] + own)) or "no Python frame"
        if node:
            note += "; " + node[0]
        ann = [frames[j][2] for j in ids if frames[j][0] == NO_FILE]
        if ann:
            note += " [in %s]" % ", ".join(ann)
        out.append("# stack %d: %s" % (i, note))
        out.append("s\t%d\t%d\t%s\t%s" % (i, count, action, " ".join(str(j) for j in ids)))
    with open(sys.argv[2], "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()

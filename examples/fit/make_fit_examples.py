#!/usr/bin/env python3
"""Writes the galloc fit example traces (galloc text format, docs/trace-format.md).

  load_order.trace  the 80 GiB scenario: a job that loads 150 buffers of 530 MiB
                    (a checkpoint's shards), frees them, then allocates buffers of
                    270 MiB. Under PyTorch's defaults each cached 530 MiB block is
                    split into 270 MiB + a 260 MiB remainder that no later request
                    fits, and the job dies with half of its reserved memory
                    unallocated; galloc fit finds the settings that fit.

  python3 make_fit_examples.py [OUTDIR]              the example (default: this folder)
  python3 make_fit_examples.py --bench PATH EVENTS   a variable-sequence-length training
                    trace of about EVENTS events, for timing galloc fit (docs/fit.md)
"""
import os
import random
import sys

MiB = 1 << 20
GiB = 1 << 30


def load_order(path, n_big=150, big=530, small=270, n_small=280):
    out = ["# galloc fit example: load order (see examples/fit/README.md)",
           "galloc-trace 1 device_memory 80GiB",
           "annotate load checkpoint"]
    for i in range(n_big):
        out.append("alloc %d %dMiB" % (i + 1, big))
    for i in range(n_big):
        out.append("free %d" % (i + 1))
    out.append("annotate build buffers")
    for i in range(n_small):
        out.append("alloc %d %dMiB" % (1000 + i, small))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def bench(path, events):
    """Weights, then steps of activations sized by a random sequence length,
    freed in reverse order; one small tensor per step kept for 10 steps."""
    rng = random.Random(14)
    out = ["galloc-trace 1 device_memory 80GiB"]
    nid = 0
    for _ in range(40):
        nid += 1
        out.append("alloc %d %d" % (nid, GiB))
    kept = []
    while len(out) < events:
        seq = rng.choice((512, 1024, 2048, 4096))
        acts = []
        for j in range(24):
            nid += 1
            acts.append(nid)
            out.append("alloc %d %d" % (nid, seq * 16 * 1024 + rng.randrange(0, 64) * 4096))
            if j % 4 == 0:
                nid += 1
                out.append("alloc %d %d" % (nid, rng.randrange(1, 512) * 1024))
                out.append("free %d" % nid)
        nid += 1
        kept.append(nid)
        out.append("alloc %d %d" % (nid, 20 * MiB))
        for a in reversed(acts):
            out.append("free %d" % a)
        if len(kept) > 10:
            out.append("free %d" % kept.pop(0))
    with open(path, "w") as f:
        f.write("\n".join(out[:events + 1]) + "\n")


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--bench":
        bench(sys.argv[2], int(sys.argv[3]))
        return
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    load_order(os.path.join(outdir, "load_order.trace"))


if __name__ == "__main__":
    main()

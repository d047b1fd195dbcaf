#!/usr/bin/env python3
"""Write the small example traces in examples/ (deterministic, seeded).

  rmm_small.csv        a RAPIDS RMM logging_resource_adaptor log: two threads,
                       two streams, some buffers freed on another stream than
                       they were allocated on.
  fragmentation.trace  a galloc text trace of a training job whose activation
                       sizes change with the sequence length of each batch while
                       long-lived tensors pin the segments they land in: the
                       pattern behind the "79.8 GB reserved, 62.1 GB allocated"
                       out-of-memory of the allocator lesson, on an 80 GiB device.

Usage: python3 examples/make_examples.py [OUTDIR]   (default: next to this script)
The PyTorch snapshot example comes from make_torch_snapshot.py.
"""
import os
import random
import sys

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def rmm_small(path):
    rng = random.Random(7)
    threads = (140573312345856, 140573303953152)
    streams = (0x0, 0x55D0C0A0)
    rows = ["Thread,Time,Action,Pointer,Size,Stream"]
    live = []
    next_ptr = 0x7F8A40000000
    t = 8 * 3600 + 51 * 60 + 26
    us = 245621
    for i in range(160):
        us += rng.randint(3, 40)
        stamp = "%02d:%02d:%02d:%06d" % (t // 3600, t // 60 % 60, t % 60, us % 1000000)
        tid = threads[i % 7 == 3]
        if live and (rng.random() < 0.45 or len(live) > 24):
            ptr, size, stream = live.pop(rng.randrange(len(live)))
            if rng.random() < 0.2:  # freed on the other stream: stream-ordered reuse waits for it
                stream = streams[1] if stream == streams[0] else streams[0]
            rows.append("%d,%s,free,0x%x,%d,0x%x" % (tid, stamp, ptr, size, stream))
        else:
            size = rng.choice((256, 4000, 65536, 1 << 20, 3 * MiB + 17, 24 * MiB, 100 * MiB))
            stream = streams[rng.random() < 0.3]
            ptr = next_ptr
            next_ptr += (size + 0xFFFFF) // 0x100000 * 0x100000
            live.append((ptr, size, stream))
            rows.append("%d,%s,allocate,0x%x,%d,0x%x" % (tid, stamp, ptr, size, stream))
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")


def fragmentation(path):
    """80 GiB device; 40 GiB of weights and optimizer state; 120 steps, each
    with six activations whose size follows the batch's sequence length (256
    MiB to 2 GiB) and one 200 MiB tensor kept until the end of the epoch
    (outputs gathered for an evaluation), allocated while the activations are
    live. The kept tensors land in the split remainders of cached activation
    blocks and pin those segments: under PyTorch's defaults the job dies with
    several GiB reserved but unallocated; with expandable_segments:True it fits.
    """
    rng = random.Random(8847)
    out = ["# A training job with varying sequence lengths (see examples/README.md).",
           "galloc-trace 1 device_memory 80GiB"]
    next_id = [1]

    def alloc(size):
        i = next_id[0]
        next_id[0] += 1
        out.append("alloc %d %d" % (i, size))
        return i

    for _ in range(40):  # weights, gradients, optimizer state
        alloc(GiB)
    for step in range(120):
        out.append("annotate step %d" % step)
        seq = rng.choice((512, 1024, 2048, 4096))
        acts = []
        for j in range(6):
            acts.append(alloc(seq * 512 * KiB + rng.randrange(0, 8) * MiB))
            if j == 3:
                alloc(200 * MiB)  # kept until the end of the epoch
        for a in reversed(acts):
            out.append("free %d" % a)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    rmm_small(os.path.join(outdir, "rmm_small.csv"))
    fragmentation(os.path.join(outdir, "fragmentation.trace"))
    for name in ("rmm_small.csv", "fragmentation.trace"):
        p = os.path.join(outdir, name)
        print("wrote %s: %d bytes" % (p, os.path.getsize(p)))


if __name__ == "__main__":
    main()

"""galloc beside PyTorch's own CUDA caching allocator, on one GPU (bench/RESULTS.md).
Not in CI (no GPU there); tests/gpu/device_check.sh runs it:

    python3 speed.py pairs OUT.json LIBGALLOC      malloc+free pairs, same process, same GPU
    python3 speed.py step OUT.json native|galloc   one training step's time and peak reserved

pairs builds tests/gpu/native_pairs.cpp (with bench/sequences.cc) as a PyTorch
C++ extension and times, for bench/'s sequences fixed_4KiB, small_mix and
training_mix, on 1 and 2 threads (each on its own stream), a pair through
c10::cuda::CUDACachingAllocator::raw_alloc_with_stream + raw_delete and a pair
through galloc_malloc + galloc_free of LIBGALLOC (the "cuda" backend).

step times a decoder training step (tests/gpu/workloads.py's model at scale 1,
fixed length) after 3 warm-up steps: the median of 20 steps, each bounded by
torch.cuda.synchronize, and the peak reserved bytes; galloc: PyTorch's
allocator is galloc's (galloc.torch.use(), before CUDA is touched). Run once
per allocator, each in its own process.
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SEQS = ("fixed_4KiB", "small_mix", "training_mix")
PAIRS = {"fixed_4KiB": 1_000_000, "small_mix": 1_000_000, "training_mix": 200_000}


def pairs(out, lib):
    import torch
    from torch.utils.cpp_extension import load

    ext = load("galloc_native_pairs", [os.path.join(HERE, "native_pairs.cpp"), os.path.join(REPO, "bench", "sequences.cc")],
               extra_include_paths=[REPO], extra_cflags=["-O2"], verbose=False)
    torch.cuda.init()
    rows = []
    for seq in SEQS:
        for threads in (1, 2):
            n = PAIRS[seq] // threads
            native = ext.native(seq, threads, n)
            ours = ext.galloc(lib, "", seq, threads, n)
            rows.append({"sequence": seq, "threads": threads, "pairs_per_thread": n, "native_ns": native,
                         "galloc_ns": ours, "speedup": native / ours})
            print(f"{seq:13s} threads {threads}: native {native:8.1f} ns, galloc {ours:8.1f} ns, "
                  f"{native / ours:5.2f}x", file=sys.stderr)
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "rows": rows},
              open(out, "w"), indent=1)


def step(out, which):
    if which == "galloc":
        import galloc.torch
        galloc.torch.use("")
    import torch
    sys.path.insert(0, HERE)
    import workloads as w

    d, h, layers, vocab, batch, seq = w._dims(1)
    torch.manual_seed(0)
    model = w.Decoder(d, h, layers, vocab).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, vocab, (batch, seq + 1), device="cuda")

    def one():
        logits = model(ids[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        one()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        t0 = time.perf_counter()
        one()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    if which == "galloc":
        peak = galloc.torch.memory_stats()["reserved_bytes.all.peak"]
    else:
        peak = torch.cuda.max_memory_reserved()
    doc = {"allocator": which, "median_step_s": statistics.median(times), "min_step_s": min(times),
           "peak_reserved": peak, "torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
    json.dump(doc, open(out, "w"), indent=1)
    print(f"step {which}: median {1e3 * doc['median_step_s']:.2f} ms, peak reserved {peak / 2**30:.3f} GiB",
          file=sys.stderr)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("pairs", "step"):
        sys.exit(__doc__)
    (pairs if sys.argv[1] == "pairs" else step)(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()

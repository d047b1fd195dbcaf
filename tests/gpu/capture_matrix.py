"""Run the capture matrix's workloads (tests/gpu/workloads.py) on a CUDA GPU
under one allocator setting, for galloc's accuracy check (docs/accuracy.md).
Not in CI (no GPU there); tests/gpu/matrix.sh runs it, one process per
setting, because PyTorch reads PYTORCH_CUDA_ALLOC_CONF once per process.

    python3 capture_matrix.py record OUT SETTING   # every workload, history recorded
    python3 capture_matrix.py caps OUT SETTING     # the capped reruns OUT/plan.json asks for

record writes, per workload W, OUT/W__SETTING.pickle.gz (the snapshot, its
history from the workload's first allocation) and OUT/W__SETTING.json:
memory_stats() at the end, the peaks, the setting, the device's total, and
torch.cuda.mem_get_info() before the process's first allocation and after
every step-sized chunk of the run (so what lies outside the allocator:
total - free - reserved).

caps reruns each workload under each memory fraction OUT/plan.json lists for
SETTING (torch.cuda.set_per_process_memory_fraction) and writes
OUT/caps__SETTING.json: per run the fraction, the cap in bytes as PyTorch
computes it (fraction x total), whether it ran out of memory, and its peak
reserved.

Between workloads everything is dropped, cuBLAS's workspaces cleared and the
cache emptied, so each starts from an empty allocator (checked and recorded:
"reserved_at_start").
"""
import gc
import gzip
import json
import os
import pickle
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from workloads import WORKLOADS  # noqa: E402

MAX_ENTRIES = 1_000_000


def settle():
    """Back to an empty allocator: nothing live, cuBLAS workspaces given back, cache emptied."""
    gc.collect()
    torch.cuda.synchronize()
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
    if clear is not None:
        clear()
    torch.cuda.empty_cache()
    return torch.cuda.memory_reserved()


def run_one(name):
    torch.cuda.reset_peak_memory_stats()
    torch.cuda.reset_accumulated_memory_stats()
    t0 = time.perf_counter()
    WORKLOADS[name]("cuda", 1)
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def outside(total):
    free, _ = torch.cuda.mem_get_info()
    return total - free - torch.cuda.memory_reserved()


def record(out, setting):
    total = torch.cuda.get_device_properties(0).total_memory
    free0, _ = torch.cuda.mem_get_info()  # the context exists, no allocation yet
    for name in WORKLOADS:
        at_start = settle()
        torch.cuda.memory._record_memory_history(max_entries=MAX_ENTRIES)
        before = len(torch.cuda.memory._snapshot()["device_traces"][0])
        seconds = run_one(name)
        out_end = outside(total)  # before the cache is emptied: the job's own footprint
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        # Only this workload's entries (whether or not re-enabling cleared the ring).
        snap["device_traces"] = [t[before:] if i == 0 else t for i, t in enumerate(snap["device_traces"])]
        stats = {k: int(v) for k, v in torch.cuda.memory_stats().items()}
        base = os.path.join(out, f"{name}__{setting}")
        with gzip.open(base + ".pickle.gz", "wb") as f:
            pickle.dump(snap, f)
        info = {
            "workload": name, "setting": setting, "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
            "torch": torch.__version__, "device": torch.cuda.get_device_name(0), "total_memory": total,
            "seconds": seconds, "reserved_at_start": at_start, "entries": len(snap["device_traces"][0]),
            "outside_before_first_alloc": total - free0, "outside_at_end": out_end,
            "peak_reserved": stats["reserved_bytes.all.peak"], "peak_allocated": stats["allocated_bytes.all.peak"],
            "memory_stats": stats,
        }
        with open(base + ".json", "w") as f:
            json.dump(info, f, indent=1, sort_keys=True)
        print(f"{name} {setting}: {seconds:.2f} s, {info['entries']} entries, peak reserved "
              f"{info['peak_reserved'] / 2**30:.3f} GiB", file=sys.stderr)


def caps(out, setting):
    plan = json.load(open(os.path.join(out, "plan.json")))["caps"].get(setting, {})
    total = torch.cuda.get_device_properties(0).total_memory
    runs = []
    for name, fractions in plan.items():
        for frac in fractions:
            settle()
            torch.cuda.set_per_process_memory_fraction(frac, 0)
            oom = None
            try:
                run_one(name)
            except torch.OutOfMemoryError as e:
                oom = str(e).splitlines()[0]
            peak = torch.cuda.max_memory_reserved()
            runs.append({"workload": name, "fraction": frac, "cap": int(frac * total), "oom": oom is not None,
                         "message": oom, "peak_reserved": peak})
            print(f"{name} {setting} fraction {frac:.6f}: {'OOM' if oom else 'fits'}", file=sys.stderr)
    torch.cuda.set_per_process_memory_fraction(1.0, 0)
    with open(os.path.join(out, f"caps__{setting}.json"), "w") as f:
        json.dump({"setting": setting, "total_memory": total, "runs": runs}, f, indent=1)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("record", "caps"):
        sys.exit(__doc__)
    what, out, setting = sys.argv[1:]
    os.makedirs(out, exist_ok=True)
    torch.cuda.init()
    (record if what == "record" else caps)(out, setting)


if __name__ == "__main__":
    main()

"""Record a real PyTorch memory snapshot on a CUDA GPU, for galloc's fidelity tests.

Run on a machine with a GPU and PyTorch >= 2.1 (not in CI: CI has no GPU):

    python3 tests/gpu/capture_torch_snapshot.py OUT_DIR [--start-step N] [--fraction F] [--name NAME]

It trains a small transformer for a few steps with variable sequence lengths
(so block sizes vary and the cache is reused), records the allocator's history
with torch.cuda.memory._record_memory_history from step --start-step on (a
window that starts mid-run, as users' snapshots do; -1: from before the first
allocation, so the whole run is in the trace and its final memory_stats can
be compared key by key). With --fraction, torch.cuda.set_per_process_memory_fraction
caps the allocator and, after the steps, one allocation of twice the cap is
made and its torch.OutOfMemoryError message kept (an oom entry in the trace).
It writes:
  OUT_DIR/NAME.pickle.gz   torch.cuda.memory._dump_snapshot's pickle, gzipped
  OUT_DIR/NAME.json        torch.cuda.memory_stats() at the end, the torch
                           version, the device, the config, the steps and
                           the out-of-memory message (with --fraction)
PYTORCH_CUDA_ALLOC_CONF must be set by the caller (--conf only records it);
it is read once, when the process first touches CUDA.
"""
import argparse
import gzip
import json
import os
import pickle
import sys

import torch


def step(model, opt, batch, seq, d_model, gen):
    x = torch.randn(batch, seq, d_model, device="cuda", generator=gen)
    y = model(x)
    loss = y.float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return float(loss.detach())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--start-step", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--name", default="torch_real")
    ap.add_argument("--fraction", type=float, default=None)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.fraction is not None:
        torch.cuda.set_per_process_memory_fraction(args.fraction, 0)
    if args.start_step < 0:
        torch.cuda.memory._record_memory_history(max_entries=200000)

    torch.manual_seed(0)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    d_model = 512
    layer = torch.nn.TransformerEncoderLayer(d_model, 8, 2048, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 4).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    seqs = [128, 384, 256, 512, 96, 448, 320, 200, 512, 64]
    losses = []
    for i in range(args.steps):
        if i == args.start_step:
            torch.cuda.memory._record_memory_history(max_entries=200000)
        losses.append(step(model, opt, 16, seqs[i % len(seqs)], d_model, gen))
        if i == args.steps // 2:
            torch.cuda.empty_cache()  # an empty_cache inside the window
    oom = None
    if args.fraction is not None:
        cap = int(args.fraction * torch.cuda.get_device_properties(0).total_memory)
        try:
            torch.empty(2 * cap, dtype=torch.uint8, device="cuda")
        except torch.OutOfMemoryError as e:
            oom = str(e)
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    with gzip.open(os.path.join(args.out, args.name + ".pickle.gz"), "wb") as f:
        pickle.dump(snap, f)
    info = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "total_memory": torch.cuda.get_device_properties(0).total_memory,
        "conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "start_step": args.start_step,
        "steps": args.steps,
        "losses": losses,
        "fraction": args.fraction,
        "oom_message": oom,
        "memory_stats": {k: int(v) for k, v in torch.cuda.memory_stats().items()},
    }
    with open(os.path.join(args.out, args.name + ".json"), "w") as f:
        json.dump(info, f, indent=1, sort_keys=True)
    print(args.name, "events", sum(len(t) for t in snap["device_traces"]), "segments", len(snap["segments"]),
          "reserved", info["memory_stats"]["reserved_bytes.all.current"], file=sys.stderr)


# The job main() runs, for a recording without a GPU: python/tests/
# test_torch113_estimate.py records it with galloc.record and compares the
# estimate with the H200 runs. main() keeps its own lines (the recorded
# snapshots' frames name them: capture_torch_snapshot.py:35 step, :76 main),
# so the model is written out twice: keep both the same.
D_MODEL = 512
HEADS = 8
FF = 2048
LAYERS = 4
BATCH = 16
SEQS = [128, 384, 256, 512, 96, 448, 320, 200, 512, 64]


def build(device):
    """main()'s model and optimizer on device, after torch.manual_seed(0)."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(D_MODEL, HEADS, FF, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, LAYERS).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    return model, opt


if __name__ == "__main__":
    main()

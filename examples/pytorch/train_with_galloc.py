"""Train a small model with galloc as PyTorch's CUDA allocator, then dump
galloc's statistics and a memory snapshot.

NOT RUN IN CI: it needs PyTorch built with CUDA and a GPU, which galloc's CI
machines do not have. What CI does check is the same library driven the same
way through ctypes on a fake CUDA driver (tests/api/torch_shim_test.cc and
torch_shim_check.py), and that this file parses and names only exported
entry points (//examples/pytorch:train_with_galloc_parse_test).

Build the library, then run on a machine with a GPU:

    ./bazelw build //torch_plugin:galloc_torch
    python3 examples/pytorch/train_with_galloc.py --lib bazel-bin/torch_plugin/libgalloc_torch.so

The switch itself is three lines (see use_galloc): load the library as a
CUDAPluggableAllocator, optionally hand PyTorch galloc's hooks, and make it
the current allocator before anything touches CUDA memory. PyTorch's own
torch.cuda.memory_stats() and _dump_snapshot() raise for a pluggable
allocator, so statistics and snapshots come from galloc's ctypes entry points
(torch_plugin/galloc_torch.h).

Configuration: galloc's keys go in GALLOC_CONF or galloc_torch_configure,
not in PYTORCH_CUDA_ALLOC_CONF (PyTorch parses that variable too and rejects
keys it does not know). PyTorch's own keys (expandable_segments:True,
max_split_size_mb:512, ...) work in either place. With no device_backend,
the library uses the GPU (cuda, else hip) and fails if there is none; it
simulates a device only when told device_backend:sim. With the Python
package installed (README, "Install"), galloc.torch.use() does all of this
in one call.
"""
import argparse
import ctypes
import json

import torch

# galloc_history_t, galloc_context_t, galloc_stacks_t (api/galloc_trace.h).
HISTORY_ALL, CONTEXT_ALLOC, STACKS_ALL = 2, 2, 1


def load(lib_path):
    """galloc's ctypes entry points, with their C signatures."""
    lib = ctypes.CDLL(lib_path)  # the same handle PyTorch's loader gets
    lib.galloc_torch_configure.argtypes = [ctypes.c_char_p]
    lib.galloc_torch_memory_stats_json.argtypes = [
        ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    lib.galloc_torch_record_memory_history.argtypes = [
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_size_t]
    lib.galloc_torch_snapshot.argtypes = [ctypes.c_int, ctypes.c_char_p]
    lib.galloc_torch_last_error.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    return lib


def use_galloc(lib_path, lib):
    """Make galloc PyTorch's CUDA allocator. Call before any CUDA allocation."""
    alloc = torch.cuda.memory.CUDAPluggableAllocator(lib_path, "galloc_torch_malloc", "galloc_torch_free")
    # Optional hooks, as function addresses (torch/csrc/cuda/Module.cpp):
    # init gets the device count, reset is torch.cuda.empty_cache(),
    # set_per_process_memory_fraction and Tensor.record_stream reach galloc.
    hooks = alloc.allocator()
    for setter, fn in [("set_init_fn", "galloc_torch_init"), ("set_reset_fn", "galloc_torch_reset"),
                       ("set_memory_fraction_fn", "galloc_torch_set_memory_fraction"),
                       ("set_record_stream_fn", "galloc_torch_record_stream")]:
        getattr(hooks, setter)(ctypes.cast(getattr(lib, fn), ctypes.c_void_p).value)
    torch.cuda.memory.change_current_allocator(alloc)


def check(lib, device, status, what):
    if status != 0:
        buf = ctypes.create_string_buffer(1024)
        lib.galloc_torch_last_error(device, buf, len(buf))
        raise RuntimeError(f"galloc: {what}: {buf.value.decode()}")


def galloc_stats(lib, device):
    """torch.cuda.memory_stats(device)'s 123 keys, from galloc."""
    buf = ctypes.create_string_buffer(8192)  # always enough (galloc_torch.h)
    check(lib, device, lib.galloc_torch_memory_stats_json(device, buf, len(buf), None), "memory_stats")
    return json.loads(buf.value.decode())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lib", required=True, help="path to libgalloc_torch.so")
    p.add_argument("--conf", default="expandable_segments:True",
                   help="galloc configuration, applied over PYTORCH_CUDA_ALLOC_CONF and GALLOC_CONF")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--snapshot", default="galloc_snapshot.pickle",
                   help="open it at https://pytorch.org/memory_viz")
    args = p.parse_args()

    lib = load(args.lib)
    check(lib, 0, lib.galloc_torch_configure(args.conf.encode()), "configure")
    use_galloc(args.lib, lib)
    device = torch.cuda.current_device()
    check(lib, device, lib.galloc_torch_record_memory_history(device, HISTORY_ALL, CONTEXT_ALLOC, STACKS_ALL, 100000),
          "record_memory_history")

    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096), torch.nn.GELU(),
        torch.nn.Linear(4096, 1024)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    side = torch.cuda.Stream()
    for step in range(args.steps):
        batch = 64 * (1 + step % 4)  # varying shapes: the case caching allocators find hard
        x = torch.randn(batch, 4096, device="cuda")
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        # A copy consumed on another stream: record_stream keeps galloc from
        # reusing x's memory before the side stream is done with it.
        with torch.cuda.stream(side):
            x.sum()
        x.record_stream(side)
        del x, loss
    torch.cuda.synchronize()

    s = galloc_stats(lib, device)
    print(f"allocated {s['allocated_bytes.all.current']} (peak {s['allocated_bytes.all.peak']}), "
          f"reserved {s['reserved_bytes.all.current']} (peak {s['reserved_bytes.all.peak']}), "
          f"device allocations {s['num_device_alloc']}, retries {s['num_alloc_retries']}, OOMs {s['num_ooms']}")
    check(lib, device, lib.galloc_torch_snapshot(device, args.snapshot.encode()), "snapshot")
    print(f"snapshot written to {args.snapshot}")
    torch.cuda.empty_cache()  # calls galloc_torch_reset through the reset hook
    print(f"reserved after empty_cache: {galloc_stats(lib, device)['reserved_bytes.all.current']}")


if __name__ == "__main__":
    main()

"""Drive libgalloc_torch.so as PyTorch would, through ctypes, on the fake CUDA
driver (torch_shim_test runs one case per fresh python3 process).

usage: torch_shim_check.py CASE LIBGALLOC_TORCH LIBFAKE_CUDA SCRATCH_DIR

The caller sets GALLOC_CONF=device_backend:cuda,driver_path:LIBFAKE_CUDA. This
script loads the same fake library (same path: one loaded copy, so its
controls see galloc's calls), configures two fake devices, calls the entry
points with PyTorch's signatures (alloc_fn(size, device, stream),
free_fn(ptr, size, device, stream), the set_*_fn hooks), and checks galloc's
stats, snapshot and messages with exact values: PyTorch's 512-byte rounding,
2 MiB small segments, 20 MiB segments for 1-10 MiB, 2 MiB multiples above.
At the end every allocator is shut down and the fake must count no leak and
no broken driver contract. Prints "ok" and exits 0, or fails an assert.
"""
import ctypes
import json
import os
import pickle
import sys
import tempfile

MiB = 1 << 20
GiB = 1 << 30
OK, E_INVAL, E_OOM, E_NOT_OWNED, E_CONFIG, E_UNAVAILABLE = 0, 1, 2, 3, 4, 6
HISTORY_ALL, CONTEXT_NONE, STACKS_PYTHON = 2, 0, 0


class FakeStats(ctypes.Structure):
    """tests/fake_cuda/fake_gpu.h fake_gpu_stats_t, member for member (keep in step)."""

    _fields_ = [
        (name, ctypes.c_uint64)
        for name in (
            "calls faults violations leaks leaked_at_destroy live_segments live_segment_bytes "
            "live_async live_async_bytes live_handles live_handle_bytes live_mappings "
            "live_mapped_bytes live_reservations live_events events_with_timing live_streams ctx_refs"
        ).split()
    ] + [("device_used", ctypes.c_uint64 * 8),
         # Room for members appended later: fake_cuda_stats writes its whole
         # struct, which must never overrun this one.
         ("spare", ctypes.c_uint64 * 64)]


def bind(lib_path, fake_path):
    g = ctypes.CDLL(lib_path)
    f = ctypes.CDLL(fake_path)
    vp, ssz, c_int, sz = ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_size_t
    sigs = {
        # PyTorch's hooks (torch/csrc/cuda/CUDAPluggableAllocator.h).
        "galloc_torch_malloc": (vp, [ssz, c_int, vp]),
        "galloc_torch_free": (None, [vp, ssz, c_int, vp]),
        "galloc_torch_init": (None, [c_int]),
        "galloc_torch_reset": (None, []),
        "galloc_torch_set_memory_fraction": (None, [ctypes.c_double, c_int]),
        "galloc_torch_record_stream": (None, [vp, vp]),
        # galloc's ctypes entry points.
        "galloc_torch_configure": (c_int, [ctypes.c_char_p]),
        "galloc_torch_memory_stats_json": (c_int, [c_int, ctypes.c_char_p, sz, ctypes.POINTER(sz)]),
        "galloc_torch_record_memory_history": (c_int, [c_int, c_int, c_int, c_int, sz]),
        "galloc_torch_snapshot": (c_int, [c_int, ctypes.c_char_p]),
        "galloc_torch_reset_peak_memory_stats": (c_int, [c_int]),
        "galloc_torch_reset_accumulated_memory_stats": (c_int, [c_int]),
        "galloc_torch_memory_summary": (c_int, [c_int, ctypes.c_char_p, sz, ctypes.POINTER(sz)]),
        "galloc_torch_last_error": (c_int, [c_int, ctypes.c_char_p, sz]),
        "galloc_torch_shutdown": (None, []),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(g, name)
        fn.restype, fn.argtypes = res, args
    for name, res, args in [
        ("fake_cuda_reset", None, []),
        ("fake_cuda_configure", c_int, [c_int, ctypes.c_uint64, ctypes.c_uint64]),
        ("fake_cuda_stats", None, [ctypes.POINTER(FakeStats)]),
        ("fake_cuda_stream_create", c_int, [c_int, ctypes.POINTER(ctypes.c_uint64)]),
        ("fake_cuda_stream_destroy", c_int, [ctypes.c_uint64]),
        ("fake_cuda_last_violation", sz, [ctypes.c_char_p, sz]),
    ]:
        fn = getattr(f, name)
        fn.restype, fn.argtypes = res, args
    return g, f


class Shim:
    def __init__(self, lib_path, fake_path, scratch):
        self.g, self.f = bind(lib_path, fake_path)
        self.lib_path, self.fake_path, self.scratch = lib_path, fake_path, scratch
        self.f.fake_cuda_reset()
        # Two 1 GiB devices, 2 MiB pages: the fake charges whole pages, so its
        # per-device usage must equal galloc's reserved bytes.
        assert self.f.fake_cuda_configure(2, GiB, 2 * MiB) == 0

    def malloc(self, size, device, stream=None):
        return self.g.galloc_torch_malloc(size, device, stream)

    def free(self, ptr, size, device, stream=None):
        self.g.galloc_torch_free(ptr, size, device, stream)

    def stats(self, device):
        needed = ctypes.c_size_t(0)
        assert self.g.galloc_torch_memory_stats_json(device, None, 0, ctypes.byref(needed)) == OK
        buf = ctypes.create_string_buffer(needed.value + 1)
        assert self.g.galloc_torch_memory_stats_json(device, buf, len(buf), ctypes.byref(needed)) == OK
        assert needed.value == len(buf.value), (needed.value, len(buf.value))
        s = json.loads(buf.value.decode())
        assert len(s) == 123, len(s)
        return s

    def last_error(self, device):
        buf = ctypes.create_string_buffer(1024)
        st = self.g.galloc_torch_last_error(device, buf, len(buf))
        return st, buf.value.decode()

    def fake_stats(self):
        s = FakeStats()
        self.f.fake_cuda_stats(ctypes.byref(s))
        return s

    def stderr_of(self, call):
        """C-level stderr written during call() (the hooks' reports)."""
        sys.stderr.flush()
        saved = os.dup(2)
        with tempfile.TemporaryFile(dir=self.scratch) as t:
            os.dup2(t.fileno(), 2)
            try:
                r = call()
            finally:
                os.dup2(saved, 2)
                os.close(saved)
            t.seek(0)
            return r, t.read().decode()

    def finish(self):
        self.g.galloc_torch_shutdown()
        s = self.fake_stats()
        buf = ctypes.create_string_buffer(512)
        self.f.fake_cuda_last_violation(buf, len(buf))
        assert s.violations == 0, buf.value
        assert s.leaks == 0 and s.live_segments == 0, (s.leaks, s.live_segments)


def expect(stats, **want):
    """want: flattened keys with '_' for '.', e.g. allocated_bytes_all_current=512."""
    for k, v in want.items():
        key = k.replace("_all_", ".all.").replace("_small_pool_", ".small_pool.").replace("_large_pool_", ".large_pool.")
        assert stats[key] == v, (key, stats[key], v)


def case_alloc_free_two_devices(t):
    # Sizes as PyTorch rounds them: 1 -> 512, 1000 -> 1024 (one 2 MiB small
    # segment); 5 MiB -> a 20 MiB segment (kLargeBuffer); 12 MiB and
    # 25 MiB + 1 -> their own segments rounded to 2 MiB (12 and 26 MiB); the
    # 26 MiB block is not split (the rest, under 1 MiB, is not worth a block:
    # PyTorch's should_split), so all 26 MiB count as allocated.
    d0 = [(1, 0), (1000, 0), (5 * MiB, 0)]
    d1 = [(12 * MiB, 1), (25 * MiB + 1, 1)]
    ptrs = [(t.malloc(n, d), n, d) for n, d in d0 + d1]
    for p, n, d in ptrs:
        assert p, (n, d, t.last_error(d))
        assert p % 512 == 0, hex(p)
    s0, s1 = t.stats(0), t.stats(1)
    expect(s0, allocated_bytes_all_current=512 + 1024 + 5 * MiB, requested_bytes_all_current=1 + 1000 + 5 * MiB,
           reserved_bytes_all_current=22 * MiB, reserved_bytes_small_pool_current=2 * MiB,
           reserved_bytes_large_pool_current=20 * MiB, segment_small_pool_current=1, segment_large_pool_current=1,
           allocation_all_current=3, allocation_small_pool_current=2)
    assert s0["num_device_alloc"] == 2 and s0["num_ooms"] == 0
    expect(s1, allocated_bytes_all_current=38 * MiB, requested_bytes_all_current=37 * MiB + 1,
           reserved_bytes_all_current=38 * MiB,
           reserved_bytes_large_pool_current=38 * MiB, segment_large_pool_current=2, segment_small_pool_current=0)
    assert s1["num_device_alloc"] == 2
    fs = t.fake_stats()
    assert fs.device_used[0] == 22 * MiB and fs.device_used[1] == 38 * MiB, (fs.device_used[0], fs.device_used[1])
    assert fs.live_segments == 4, fs.live_segments

    for p, n, d in ptrs:
        t.free(p, n, d)
    t.free(None, 0, 0)  # PyTorch never frees NULL, but it must be harmless
    s0 = t.stats(0)
    expect(s0, allocated_bytes_all_current=0, allocated_bytes_all_peak=512 + 1024 + 5 * MiB,
           reserved_bytes_all_current=22 * MiB)  # cached, as PyTorch's
    assert t.fake_stats().device_used[0] == 22 * MiB
    # torch.cuda.empty_cache() calls the reset hook: every device's cache goes.
    t.g.galloc_torch_reset()
    s0, s1 = t.stats(0), t.stats(1)
    expect(s0, reserved_bytes_all_current=0, reserved_bytes_all_peak=22 * MiB)
    expect(s1, reserved_bytes_all_current=0, segment_all_freed=2)
    assert s0["num_device_free"] == 2 and s1["num_device_free"] == 2
    fs = t.fake_stats()
    assert fs.device_used[0] == 0 and fs.device_used[1] == 0 and fs.live_segments == 0

    assert t.g.galloc_torch_reset_peak_memory_stats(0) == OK
    expect(t.stats(0), allocated_bytes_all_peak=0, reserved_bytes_all_peak=0)
    assert t.g.galloc_torch_reset_accumulated_memory_stats(1) == OK
    s1 = t.stats(1)
    assert s1["num_device_alloc"] == 0 and s1["allocated_bytes.all.allocated"] == 0, s1
    expect(s1, reserved_bytes_all_peak=38 * MiB)  # resets are separate


def case_hooks(t):
    t.g.galloc_torch_init(2)  # PyTorch: the number of visible devices
    p, err = t.stderr_of(lambda: t.malloc(4096, 2))
    assert p is None and "device 2 is not one of the 2 devices" in err, (p, err)
    assert t.malloc(0, 0) is None and t.malloc(-5, 0) is None

    # Tensor.record_stream: the block waits for the stream's work before reuse.
    stream = ctypes.c_uint64(0)
    assert t.f.fake_cuda_stream_create(0, ctypes.byref(stream)) == 0
    s_ptr = ctypes.c_void_p(stream.value)
    p = t.malloc(4096, 0)
    assert p
    t.g.galloc_torch_record_stream(p, s_ptr)
    t.free(p, 4096, 0)
    s = t.stats(0)
    # allocated drops at free; active stays until the stream's event completes.
    expect(s, allocated_bytes_all_current=0, active_bytes_all_current=4096)
    t.g.galloc_torch_reset()  # empty_cache synchronizes the pending event first
    expect(t.stats(0), active_bytes_all_current=0, reserved_bytes_all_current=0)
    _, err = t.stderr_of(lambda: t.g.galloc_torch_record_stream(ctypes.c_void_p(0x1000), s_ptr))
    assert "galloc: record_stream: 0x1000 is not a live allocation of any device" in err, err

    # torch.cuda.set_per_process_memory_fraction(0.5, 0) on a 1 GiB device.
    t.g.galloc_torch_set_memory_fraction(0.5, 0)
    p, err = t.stderr_of(lambda: t.malloc(600 * MiB, 0))
    assert p is None, p
    assert "galloc: malloc on device 0: CUDA out of memory. Tried to allocate 600.00 MiB" in err, err
    st, msg = t.last_error(0)
    assert st == E_OOM and msg.startswith("CUDA out of memory. Tried to allocate 600.00 MiB"), (st, msg)
    assert t.stats(0)["num_ooms"] == 1
    q = t.malloc(400 * MiB, 0)
    assert q, t.last_error(0)
    _, err = t.stderr_of(lambda: t.g.galloc_torch_set_memory_fraction(1.5, 0))
    assert "galloc: set_memory_fraction on device 0" in err, err
    assert t.last_error(0)[0] == E_INVAL
    assert t.malloc(600 * MiB, 0) is None  # the 0.5 cap still holds
    # Device 1 has no cap.
    r = t.malloc(600 * MiB, 1)
    assert r, t.last_error(1)
    expect(t.stats(1), reserved_bytes_all_current=600 * MiB)
    t.free(q, 400 * MiB, 0)
    t.free(r, 600 * MiB, 1)
    # A foreign free is reported and changes nothing.
    _, err = t.stderr_of(lambda: t.free(ctypes.c_void_p(0x1000), 8, 1))
    assert "galloc: free on device 1" in err and t.last_error(1)[0] == E_NOT_OWNED, err
    expect(t.stats(1), allocated_bytes_all_current=0, allocation_all_freed=1)
    assert t.f.fake_cuda_stream_destroy(stream.value) == 0


def case_snapshot_and_summary(t):
    assert t.g.galloc_torch_record_memory_history(1, HISTORY_ALL, CONTEXT_NONE, STACKS_PYTHON, 0) == OK
    a = t.malloc(1000, 1)
    b = t.malloc(3 * MiB, 1)
    assert a and b
    t.free(a, 1000, 1)
    pkl = os.path.join(t.scratch, "torch.pickle").encode()
    js = os.path.join(t.scratch, "torch.json").encode()
    assert t.g.galloc_torch_snapshot(1, pkl) == OK, t.last_error(1)
    assert t.g.galloc_torch_snapshot(1, js) == OK, t.last_error(1)
    with open(pkl, "rb") as f:
        snap_p = pickle.load(f)
    with open(js) as f:
        snap_j = json.load(f)
    for snap, n_snapshots in ((snap_p, 1), (snap_j, 2)):
        segs = sorted(snap["segments"], key=lambda s: s["address"])
        got = sorted((s["segment_type"], s["total_size"], s["allocated_size"], s["requested_size"]) for s in segs)
        assert got == [("large", 20 * MiB, 3 * MiB, 3 * MiB), ("small", 2 * MiB, 0, 0)], got
        assert all(s["device"] == 1 for s in segs)
        large = next(s for s in segs if s["segment_type"] == "large")
        states = [(blk["size"], blk["state"]) for blk in large["blocks"]]
        assert states == [(3 * MiB, "active_allocated"), (17 * MiB, "inactive")], states
        traces = snap["device_traces"]
        assert all(not tr for i, tr in enumerate(traces) if i != 1), traces
        actions = [(e["action"], e["size"]) for e in traces[1]]
        # Trace entries carry the size asked for, as PyTorch's (orig_size).
        want = [("segment_alloc", 2 * MiB), ("alloc", 1000), ("segment_alloc", 20 * MiB), ("alloc", 3 * MiB),
                ("free_requested", 1000), ("free_completed", 1000)]
        assert actions[:-n_snapshots] == want, actions
        assert [x for x, _ in actions[-n_snapshots:]] == ["snapshot"] * n_snapshots, actions
    st = t.g.galloc_torch_snapshot(1, b"/nonexistent/dir/x.pickle")
    assert st != OK and "/nonexistent/dir/x.pickle" in t.last_error(1)[1], (st, t.last_error(1))

    needed = ctypes.c_size_t(0)
    buf = ctypes.create_string_buffer(16384)
    assert t.g.galloc_torch_memory_summary(1, buf, len(buf), ctypes.byref(needed)) == OK
    text = buf.value.decode()
    assert needed.value == len(text)
    assert "PyTorch CUDA memory summary, device ID 1" in text, text
    assert "| GPU reserved memory   |  22528 KiB |  22528 KiB |  22528 KiB |      0 B   |" in text, text
    t.free(b, 3 * MiB, 1)


def case_configure_and_errors(t):
    # GALLOC_CONF names the fake driver; the configure string adds to it.
    assert t.g.galloc_torch_configure(b"max_split_size_mb:lots") == E_CONFIG
    st, msg = t.last_error(0)
    assert st == E_CONFIG and "max_split_size_mb" in msg, (st, msg)
    assert t.g.galloc_torch_configure(b"max_split_size_mb:64") == OK
    p = t.malloc(100 * MiB, 0)  # over max_split_size: an oversize segment
    assert p, t.last_error(0)
    s = t.stats(0)
    assert s["max_split_size"] == 64 * MiB and s["oversize_allocations.current"] == 1, s
    # Too late now: an allocator exists.
    assert t.g.galloc_torch_configure(b"max_split_size_mb:128") == E_INVAL
    t.free(p, 100 * MiB, 0)
    # Out-of-range devices: refused without creating anything.
    assert t.g.galloc_torch_memory_stats_json(64, None, 0, None) == E_INVAL
    assert t.g.galloc_torch_last_error(-1, ctypes.create_string_buffer(8), 8) == E_INVAL
    p, err = t.stderr_of(lambda: t.malloc(16, 64))
    assert p is None and "galloc: malloc" in err, err
    # The library exports the galloc_torch_* entry points and nothing else.
    lib = ctypes.CDLL(t.lib_path)
    for hidden in ("galloc_malloc", "galloc_device_malloc", "ga_conf_parse", "galloc_strerror"):
        try:
            getattr(lib, hidden)
        except AttributeError:
            continue
        raise AssertionError(hidden + " is exported")


def case_bad_driver(t):
    # A device the fake does not have: creation fails, the registry says why.
    p, err = t.stderr_of(lambda: t.malloc(16, 5))
    assert p is None and "galloc: malloc on device 5" in err, err
    st, msg = t.last_error(5)
    assert st != OK and "device 5" in msg, (st, msg)
    # Device 0 still works.
    q = t.malloc(16, 0)
    assert q, t.last_error(0)
    t.free(q, 16, 0)


def case_probe_picks_cuda(t):
    # No source names device_backend: the shim probes cuda (the fake, through
    # driver_path), finds device 0 and serves PyTorch from it, silently.
    os.environ["GALLOC_CONF"] = "driver_path:" + t.fake_path
    p, err = t.stderr_of(lambda: t.malloc(1, 0))
    assert p and err == "", (p, err)
    expect(t.stats(0), allocated_bytes_all_current=512, reserved_bytes_all_current=2 * MiB)
    assert t.fake_stats().device_used[0] == 2 * MiB  # real (fake) device memory, not sim
    t.free(p, 1, 0)


def case_no_driver_no_sim(t):
    # Neither driver loads: nothing is simulated, every call says why.
    os.environ["GALLOC_CONF"] = "driver_path:/nonexistent/libcuda.so.1"
    p, err = t.stderr_of(lambda: t.malloc(1, 0))
    assert p is None and "galloc: malloc on device 0: no GPU driver for PyTorch's memory" in err, (p, err)
    st, msg = t.last_error(0)
    assert st == E_UNAVAILABLE, (st, msg)
    assert "device_backend:cuda: " in msg and "device_backend:hip: " in msg and "/nonexistent/libcuda.so.1" in msg, msg
    assert t.g.galloc_torch_memory_stats_json(0, None, 0, None) == E_UNAVAILABLE
    assert t.g.galloc_torch_snapshot(0, os.path.join(t.scratch, "x.json").encode()) == E_UNAVAILABLE
    # Naming the backend afterwards works (configure resets the probe).
    assert t.g.galloc_torch_configure(("device_backend:cuda,driver_path:" + t.fake_path).encode()) == OK
    q = t.malloc(1, 0)
    assert q, t.last_error(0)
    t.free(q, 1, 0)


def case_sim_only_when_named(t):
    # device_backend:sim, named: served, with one warning for the process.
    os.environ["GALLOC_CONF"] = "device_backend:sim,sim_capacity:1GiB"
    p, err = t.stderr_of(lambda: t.malloc(1, 0))
    assert p and err.startswith("galloc: device_backend:sim: PyTorch is given simulated addresses, not device memory"), err
    assert err.count("\n") == 1, err
    q, err = t.stderr_of(lambda: t.malloc(1, 0))
    assert q and err == "", err
    expect(t.stats(0), allocated_bytes_all_current=1024, reserved_bytes_all_current=2 * MiB)
    assert t.fake_stats().device_used[0] == 0  # nothing reached the (fake) driver
    t.free(p, 1, 0)
    t.free(q, 1, 0)
    # Out of memory on the simulated device: NULL, and PyTorch's message.
    r, err = t.stderr_of(lambda: t.malloc(2 * GiB, 0))
    assert r is None and "CUDA out of memory. Tried to allocate 2.00 GiB" in err, err


CASES = {
    "alloc_free_two_devices": case_alloc_free_two_devices,
    "hooks": case_hooks,
    "snapshot_and_summary": case_snapshot_and_summary,
    "configure_and_errors": case_configure_and_errors,
    "bad_driver": case_bad_driver,
    "probe_picks_cuda": case_probe_picks_cuda,
    "no_driver_no_sim": case_no_driver_no_sim,
    "sim_only_when_named": case_sim_only_when_named,
}


def main():
    case, lib_path, fake_path, scratch = sys.argv[1:5]
    assert os.environ.get("GALLOC_CONF", "").startswith("device_backend:cuda,driver_path:"), os.environ.get("GALLOC_CONF")
    t = Shim(lib_path, fake_path, scratch)
    CASES[case](t)
    t.finish()
    print("ok")


if __name__ == "__main__":
    main()

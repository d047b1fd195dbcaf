"""galloc as PyTorch's CUDA (or ROCm) allocator, and its statistics.

    import galloc.torch
    galloc.torch.use("expandable_segments:True")   # before anything touches GPU memory
    ...                                             # train
    galloc.torch.memory_stats()["reserved_bytes.all.peak"]
    galloc.torch.snapshot("mem.pickle")             # https://pytorch.org/memory_viz

use() loads the package's libgalloc_torch.so through
torch.cuda.memory.CUDAPluggableAllocator and makes it PyTorch's allocator.
PyTorch's own torch.cuda.memory_stats() raises for a pluggable allocator, so
the figures come from this module (the same 123 keys). Importing this module
does not import torch; use() does.

Sleep and wake (training and inference taking turns on one GPU, as vLLM's
sleep mode):

    with galloc.torch.tagged("weights"):
        model = build_model().cuda()                # its tensors: tag "weights"
    with galloc.torch.tagged("kv_cache"):
        cache = torch.empty(n, device="cuda")
    galloc.torch.sleep(offload="weights")           # GPU memory back to the driver
    ...                                             # another engine uses the GPU
    galloc.torch.wake()                             # same data_ptr()s; weights restored

galloc must be PyTorch's allocator for this (use(), or
torch.cuda.memory.change_current_allocator with a CUDAPluggableAllocator
of LIBRARY), and be so before the tensors are made: only memory
galloc handed out can sleep. PyTorch keeps no cache over a pluggable
allocator (a freed tensor goes straight back to galloc), so every byte a tag
holds is galloc's to release. A discarded tag's tensors (not in offload)
keep their data_ptr() but hold undefined bytes after wake: refill them.
"""
import contextlib
import ctypes
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

from . import _native
from .errors import error

LIBRARY = os.path.join(_native.LIB_DIR, "libgalloc_torch.so")
_OOM_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_oom.cpp")

# PyTorch's optional hooks (methods of torch._C._cuda_CUDAAllocator, each
# taking a function address) and the entry points galloc gives them.
HOOKS = (
    ("set_init_fn", "galloc_torch_init"),
    ("set_reset_fn", "galloc_torch_reset"),
    ("set_memory_fraction_fn", "galloc_torch_set_memory_fraction"),
    ("set_record_stream_fn", "galloc_torch_record_stream"),
)


# The first torch with torch.cuda.memory.CUDAPluggableAllocator, which use() needs.
TORCH_MIN = (2, 0)


class GallocWarning(UserWarning):
    """galloc.torch could not do something it tries to (the message says what)."""


_vp, _sz, _ci, _cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
_SIGNATURES = {
    "galloc_torch_malloc": (_vp, [ctypes.c_ssize_t, _ci, _vp]),
    "galloc_torch_free": (None, [_vp, ctypes.c_ssize_t, _ci, _vp]),
    "galloc_torch_configure": (_ci, [_cp]),
    "galloc_torch_memory_stats_json": (_ci, [_ci, _cp, _sz, ctypes.POINTER(_sz)]),
    "galloc_torch_memory_summary": (_ci, [_ci, _cp, _sz, ctypes.POINTER(_sz)]),
    "galloc_torch_snapshot": (_ci, [_ci, _cp]),
    "galloc_torch_reset_peak_memory_stats": (_ci, [_ci]),
    "galloc_torch_last_error": (_ci, [_ci, _cp, _sz]),
    "galloc_torch_shutdown": (None, []),
    "galloc_torch_set_expandable_reserve_class": (_ci, [_ci, _vp, _cp]),
    "galloc_torch_set_oom_rejection_observer": (_ci, [_ci, _native.OOM_REJECTION, _vp]),
    "galloc_torch_tag_begin": (_ci, [_ci, _cp]),
    "galloc_torch_tag_end": (_ci, [_ci, _cp]),
    "galloc_torch_sleep": (_ci, [_ci, _cp, _cp]),
    "galloc_torch_sleep_prepare": (_ci, [_ci, _cp, _cp]),
    "galloc_torch_wake": (_ci, [_ci, _cp]),
    "galloc_torch_tag_asleep": (_ci, [_ci, _cp, ctypes.POINTER(_ci)]),
    "galloc_torch_sleep_stats": (_ci, [_ci, ctypes.POINTER(_native.SleepStats)]),
}
_lib_handle = None


def _lib():
    global _lib_handle
    if _lib_handle is None:
        lib = ctypes.CDLL(LIBRARY)  # the handle PyTorch's loader gets too (same path)
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _lib_handle = lib
    return _lib_handle


def _address(name):
    return ctypes.cast(getattr(_lib(), name), ctypes.c_void_p).value


def last_error(device: int = 0) -> tuple[str, str]:
    """(status name, message) of the last failure on device ("OK", "" if none)."""
    buf = ctypes.create_string_buffer(_native.MESSAGE_BUFFER)
    st = _lib().galloc_torch_last_error(device, buf, len(buf))
    return _native.STATUS_NAMES[st], buf.value.decode(errors="replace")


def _check(st, device):
    if st != _native.OK:
        buf = ctypes.create_string_buffer(_native.MESSAGE_BUFFER)
        _lib().galloc_torch_last_error(device, buf, len(buf))
        raise error(st, buf.value.decode(errors="replace"))


def _check_torch(torch):
    """Refuse a torch older than TORCH_MIN, naming both versions, before use()
    does anything (configures galloc, opens a device, compiles its wrapper).
    A version that does not parse (a custom build) is let through."""
    version = str(getattr(torch, "__version__", ""))
    m = re.match(r"(\d+)\.(\d+)", version)
    if m and (int(m.group(1)), int(m.group(2))) < TORCH_MIN:
        need = ".".join(map(str, TORCH_MIN))
        raise error(_native.STATUS_NAMES.index("E_UNSUPPORTED"),
                    f"galloc.torch needs torch >= {need} (torch.cuda.memory.CUDAPluggableAllocator); "
                    f"this is torch {version}")


def _device(device):
    if device is not None:
        return int(device)
    torch = sys.modules.get("torch")  # never import it here
    if torch is not None and torch.cuda.is_initialized():
        return torch.cuda.current_device()
    return 0


def use(conf: str = "", *, device_backend: str | None = None, oom: str = "raise"):
    """Make galloc PyTorch's GPU allocator; call before anything touches GPU memory.

    conf: galloc's configuration string (PyTorch's keys and galloc's),
    applied over PYTORCH_CUDA_ALLOC_CONF and GALLOC_CONF. device_backend:
    "cuda" or "hip" (default: the one this torch is built for); "sim" only
    to test the wiring (PyTorch is then given addresses that are not memory).
    The device is opened now: a missing driver raises galloc.UnavailableError
    here, not at the first tensor.
    oom: "raise" builds (once, cached) a small C++ wrapper against this
    torch's headers so that galloc's out-of-memory reaches Python as
    torch.OutOfMemoryError with galloc's message; without a C++ compiler or
    torch's headers it warns (GallocWarning) and falls back to "null": the
    shim returns NULL, which PyTorch 2.x does not check (docs/integration.md).
    Also wires PyTorch's optional hooks where this torch has them (init,
    empty_cache, set_per_process_memory_fraction, record_stream). Returns
    the torch.cuda.memory.CUDAPluggableAllocator. A torch older than 2.0
    (no pluggable allocators) raises galloc.UnsupportedError naming its
    version, before anything is configured, opened or compiled.
    torch.multiprocessing cannot then send or receive CUDA tensors: PyTorch's
    pluggable allocator raises RuntimeError ("CUDAPluggableAllocator does not
    yet support shareIPcHandle") in Queue.put and in the receiver; share
    blocks with galloc.Allocator.ipc_export / ipc_send / ipc_recv instead
    (docs/integration.md, "Sharing blocks between processes").
    """
    import torch

    _check_torch(torch)
    if oom not in ("raise", "null"):
        raise ValueError(f'oom must be "raise" or "null", not {oom!r}')
    if device_backend is None:
        device_backend = "hip" if getattr(torch.version, "hip", None) else "cuda"
    lib = _lib()
    _check(lib.galloc_torch_configure(",".join(s for s in (f"device_backend:{device_backend}", conf) if s).encode()),
           0)
    _check(lib.galloc_torch_memory_stats_json(0, None, 0, None), 0)  # opens device 0 now

    path, alloc_fn, free_fn = LIBRARY, "galloc_torch_malloc", "galloc_torch_free"
    if oom == "raise":
        wrapper, why = _oom_wrapper(torch)
        if wrapper is not None:
            path, alloc_fn, free_fn = wrapper, "galloc_torch_oom_malloc", "galloc_torch_oom_free"
        else:
            warnings.warn(f"galloc.torch.use: out of memory will reach PyTorch as a NULL pointer, not "
                          f"torch.OutOfMemoryError ({why}); galloc.torch.last_error() has galloc's message",
                          GallocWarning, stacklevel=2)
    alloc = torch.cuda.memory.CUDAPluggableAllocator(path, alloc_fn, free_fn)
    hooks = alloc.allocator()
    for setter, fn in HOOKS:
        if hasattr(hooks, setter):
            getattr(hooks, setter)(_address(fn))
    torch.cuda.memory.change_current_allocator(alloc)
    return alloc


def _oom_wrapper(torch):
    """(path of the built _torch_oom.cpp, None) or (None, why not)."""
    try:
        from torch.utils import cpp_extension
    except ImportError as e:
        return None, f"torch.utils.cpp_extension: {e}"
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        return None, f"no C++ compiler ({cxx})"
    includes, libdirs = list(cpp_extension.include_paths()), list(cpp_extension.library_paths())
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    with open(_OOM_SOURCE, "rb") as f:
        source = f.read()
    key = hashlib.sha256(repr((source, torch.__version__, includes, libdirs, abi)).encode()).hexdigest()[:16]
    cache = os.environ.get("GALLOC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "galloc")
    out = os.path.join(cache, f"galloc_torch_oom-{key}.so")
    if not os.path.isfile(out):
        os.makedirs(cache, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=cache)
        os.close(fd)
        cmd = ([cxx, "-shared", "-fPIC", "-O2", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={abi}"]
               + [f"-I{d}" for d in includes] + [_OOM_SOURCE, "-o", tmp]
               + [f"-L{d}" for d in libdirs] + ["-lc10"] + [f"-Wl,-rpath,{d}" for d in libdirs])
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            os.unlink(tmp)
            return None, f"building {os.path.basename(_OOM_SOURCE)} failed: {r.stderr.strip()[-500:]}"
        os.replace(tmp, out)
    w = ctypes.CDLL(out)
    w.galloc_torch_oom_bind.argtypes = [_vp, _vp, _vp, _ci]
    w.galloc_torch_oom_bind(_address("galloc_torch_malloc"), _address("galloc_torch_free"),
                            _address("galloc_torch_last_error"), _native.E_OOM)
    return out, None


def memory_stats(device: int | None = None) -> dict:
    """torch.cuda.memory_stats(device) for galloc: the 123 keys, PyTorch's order, int values."""
    d = _device(device)
    lib, needed = _lib(), ctypes.c_size_t(0)
    _check(lib.galloc_torch_memory_stats_json(d, None, 0, ctypes.byref(needed)), d)
    buf = ctypes.create_string_buffer(needed.value + 1)
    _check(lib.galloc_torch_memory_stats_json(d, buf, len(buf), ctypes.byref(needed)), d)
    return json.loads(buf.value.decode())


def memory_summary(device: int | None = None) -> str:
    """torch.cuda.memory_summary(device) for galloc."""
    d = _device(device)
    lib, needed = _lib(), ctypes.c_size_t(0)
    _check(lib.galloc_torch_memory_summary(d, None, 0, ctypes.byref(needed)), d)
    buf = ctypes.create_string_buffer(needed.value + 1)
    _check(lib.galloc_torch_memory_summary(d, buf, len(buf), ctypes.byref(needed)), d)
    return buf.value.decode()


def snapshot(path: str, device: int | None = None) -> None:
    """torch.cuda.memory._dump_snapshot(path) for galloc: JSON if path ends in
    ".json", else pickle."""
    d = _device(device)
    _check(_lib().galloc_torch_snapshot(d, str(path).encode()), d)


def reset_peak_memory_stats(device: int | None = None) -> None:
    """torch.cuda.reset_peak_memory_stats(device) for galloc."""
    d = _device(device)
    _check(_lib().galloc_torch_reset_peak_memory_stats(d), d)


def set_expandable_reserve_class(stream, name, device: int | None = None) -> None:
    """PyTorch main's setExpandableSegmentReserveClassForStream for galloc:
    new expandable segments of stream (a torch.cuda.Stream, or its
    cuda_stream handle as an int) reserve the class's entry of
    expandable_segments_reserve_by_class (else expandable_segments_reserve,
    else 9/8 of device memory). name None or "" clears the class. The device
    is the stream's when it has one, else device (default: the current one)."""
    handle = getattr(stream, "cuda_stream", stream)
    if device is None and getattr(stream, "device", None) is not None:
        device = getattr(stream.device, "index", None)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name: a str or None, not {type(name).__name__}")
    d = _device(device)
    _check(_lib().galloc_torch_set_expandable_reserve_class(d, int(handle) or None,
                                                             None if name is None else name.encode()), d)


_rejection_cbs = {}  # device -> the ctypes callback the library holds a pointer to


def set_oom_rejection_observer(fn, device: int | None = None) -> None:
    """fn(device, alloc_size, total_allocated, device_total) for every
    allocation on device that throw_on_cudamalloc_oom refuses: what PyTorch's
    attachOomRejectionObserver does for its native allocator, which a
    pluggable allocator cannot take. fn runs on the allocating thread before
    the OutOfMemoryError reaches torch; an exception it raises is printed and
    dropped. None removes it. One observer per device."""
    if fn is not None and not callable(fn):
        raise TypeError(f"fn: a callable or None, not {type(fn).__name__}")
    d = _device(device)
    cb = None
    if fn is not None:
        def cb(_ctx, dev, alloc_size, total_allocated, device_total):
            fn(dev, alloc_size, total_allocated, device_total)
        cb = _native.OOM_REJECTION(cb)
    _check(_lib().galloc_torch_set_oom_rejection_observer(d, cb or _native.OOM_REJECTION(), None), d)
    _rejection_cbs[d] = cb


def _synchronize(d):
    """Wait for device d's kernels when torch has CUDA running: memory must
    not be unmapped or copied under a kernel still using it."""
    torch = sys.modules.get("torch")  # never import it here
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize(d)


@contextlib.contextmanager
def tagged(tag: str, device: int | None = None):
    """Tensors this thread creates on device inside the `with` block come from
    galloc tag `tag` (a sleepable pool, created at first use), for sleep()
    and wake():

        with galloc.torch.tagged("weights"):
            w = torch.empty(1 << 28, device="cuda")

    The tag ends with the block, exception or not. Only this thread's
    allocations are tagged (PyTorch allocates on the thread that creates a
    tensor; autograd's backward threads are not covered). Tag names: 1 to 31
    bytes of [A-Za-z0-9_.-]. Raises galloc.InvalidArgumentError for a bad
    name or a tag this thread has already begun on device. galloc must be
    PyTorch's allocator (use()), else the tensors are not galloc's."""
    if not isinstance(tag, str):
        raise TypeError(f"tagged: the tag is a str, not {type(tag).__name__}")
    d, name = _device(device), tag.encode()
    _check(_lib().galloc_torch_tag_begin(d, name), d)
    try:
        yield
    except BaseException:
        _lib().galloc_torch_tag_end(d, name)  # the block's exception wins over a failed end
        raise
    _check(_lib().galloc_torch_tag_end(d, name), d)


def sleep(tags=None, offload=None, device: int | None = None) -> None:
    """Put galloc tags on device to sleep: their GPU memory goes back to the
    driver (torch.cuda.mem_get_info's free rises), their tensors' data_ptr()s
    stay valid.

    tags: a tag name, names joined by commas, or an iterable of names;
    None: every tag. offload: the tags (same forms) whose bytes are copied
    to pinned host memory and restored by wake(); None: none. A tag not
    offloaded is discarded: after wake() its tensors hold undefined bytes.
    Synchronizes the device first (torch.cuda.synchronize) when torch has
    CUDA running. While asleep, allocating in a sleeping tag fails (with
    use()'s wrapper, a RuntimeError naming the tag; last_error() gives
    ("E_ASLEEP", message)), and a kernel touching a sleeping tensor faults.
    Raises galloc.InvalidArgumentError for an unknown tag,
    galloc.UnsupportedError for offloading on a backend that cannot,
    galloc.HostMemoryError / galloc.DeviceError (each tag is then fully
    awake or fully asleep)."""
    d = _device(device)
    tag_arg, offload_arg = _native.tag_list(tags), _native.offload_list(offload)
    _synchronize(d)
    _check(_lib().galloc_torch_sleep(d, tag_arg, offload_arg), d)


def sleep_prepare(tags=None, offload=None, device: int | None = None) -> None:
    """Pin now the host memory that sleep(tags, offload) on device will copy
    into, so that the sleep pins nothing and is left with its copies (the
    first sleep of a 1 GiB offloaded tag spent most of its 0.46 s pinning on
    an H200). Same
    arguments as sleep(); call it after the tagged tensors exist (e.g. once
    the weights are loaded), while the GPU is busy: it touches no device
    memory and does not synchronize. A discarded or sleeping tag gets
    nothing. Raises galloc.InvalidArgumentError for an unknown tag,
    galloc.UnsupportedError when the backend cannot offload,
    galloc.HostMemoryError when pinning is refused (nothing is kept then).
    torch.cuda.empty_cache() gives the reserve back (use() wires it to
    galloc_empty_cache); sleep_stats()["galloc.sleep.bytes_host_cached"]
    counts it."""
    d = _device(device)
    _check(_lib().galloc_torch_sleep_prepare(d, _native.tag_list(tags), _native.offload_list(offload)), d)


def wake(tags=None, device: int | None = None) -> None:
    """Wake galloc tags on device (as sleep(); None: every tag): GPU memory is
    mapped again at the same addresses and offloaded bytes copied back.
    Raises galloc.OutOfMemoryError when the GPU has not the memory (the
    tags stay asleep, nothing lost)."""
    d = _device(device)
    _check(_lib().galloc_torch_wake(d, _native.tag_list(tags)), d)


def tag_asleep(tag: str, device: int | None = None) -> bool:
    """Whether galloc tag `tag` on device is asleep (InvalidArgumentError if
    there is no such tag)."""
    if not isinstance(tag, str):
        raise TypeError(f"tag_asleep: the tag is a str, not {type(tag).__name__}")
    d, asleep = _device(device), ctypes.c_int(0)
    _check(_lib().galloc_torch_tag_asleep(d, tag.encode(), ctypes.byref(asleep)), d)
    return bool(asleep.value)


def sleep_stats(device: int | None = None) -> dict:
    """galloc's sleep counters for device as {"galloc.sleep.<member>": int}
    (galloc.Allocator.sleep_stats); the keys never collide with
    memory_stats()'s."""
    d, s = _device(device), _native.SleepStats()
    _check(_lib().galloc_torch_sleep_stats(d, ctypes.byref(s)), d)
    return _native.sleep_stats_dict(s)


def estimate(step, *inputs, **options):
    """Before the job runs, without a GPU: record step(*inputs) on the CPU and
    say whether it fits, under which settings, on which device
    (galloc.estimate.estimate, whose options these are; docs/estimate.md)."""
    from .estimate import estimate as run
    return run(step, *inputs, **options)


def _shutdown():
    """Destroy every device allocator and forget the configuration (tests only:
    no pointer PyTorch holds may be used afterwards)."""
    _lib().galloc_torch_shutdown()

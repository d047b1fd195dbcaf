"""galloc as PyTorch's CUDA (or ROCm) allocator, and its statistics.

    import galloc.torch
    galloc.torch.use("expandable_segments:True")   # before anything touches GPU memory
    ...                                             # train
    galloc.torch.memory_stats()["reserved_bytes.all.peak"]
    galloc.torch.snapshot("mem.pickle")             # https://pytorch.org/memory_viz

use() loads the package's libgalloc_torch.so through
torch.cuda.memory.CUDAPluggableAllocator and makes it PyTorch's allocator.
PyTorch's own torch.cuda.memory_stats() raises for a pluggable allocator, so
the figures come from this module (the same 122 keys). Importing this module
does not import torch; use() does.
"""
import ctypes
import hashlib
import json
import os
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
    the torch.cuda.memory.CUDAPluggableAllocator.
    """
    import torch

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
    """torch.cuda.memory_stats(device) for galloc: the 122 keys, PyTorch's order, int values."""
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


def _shutdown():
    """Destroy every device allocator and forget the configuration (tests only:
    no pointer PyTorch holds may be used afterwards)."""
    _lib().galloc_torch_shutdown()

"""ctypes bindings of libgalloc_tools.so (tools/lib/galloc_tools.h): the
galloc command's replay and fit run in this process, their --json captured,
and the whole command on this process's stdout and stderr (galloc.__main__).

Loaded on first use, so `import galloc` stays as cheap as before.
"""
import ctypes
import os

from ._native import LIB_DIR

PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_double, ctypes.c_uint64)
_lib = None


def _load():
    global _lib
    if _lib is None:
        lib = ctypes.CDLL(os.path.join(LIB_DIR, "libgalloc_tools.so"))
        out = ctypes.POINTER(ctypes.c_void_p)
        lib.galloc_tools_run.restype = ctypes.c_int
        lib.galloc_tools_run.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), PROGRESS, ctypes.c_void_p,
                                         out, out]
        lib.galloc_tools_main.restype = ctypes.c_int
        lib.galloc_tools_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.galloc_tools_trace_info.restype = ctypes.c_int
        lib.galloc_tools_trace_info.argtypes = [ctypes.c_char_p, ctypes.c_char_p, out, out]
        lib.galloc_tools_free.restype = None
        lib.galloc_tools_free.argtypes = [ctypes.c_void_p]
        _lib = lib
    return _lib


def _take(p):
    """The C string at p as str, released."""
    if not p.value:
        return ""
    try:
        return ctypes.string_at(p.value).decode("utf-8", "replace")
    finally:
        _lib.galloc_tools_free(p.value)


def run(argv, progress=None):
    """`galloc ARGV...` in this process: (exit status, stdout, stderr)."""
    lib = _load()
    args = (ctypes.c_char_p * len(argv))(*[os.fsencode(a) for a in argv])
    cb = PROGRESS(lambda _ctx, fraction, events: progress(fraction, events)) if progress else PROGRESS()
    out, msg = ctypes.c_void_p(), ctypes.c_void_p()
    rc = lib.galloc_tools_run(len(argv), args, cb, None, ctypes.byref(out), ctypes.byref(msg))
    if rc < 0:
        raise MemoryError("galloc: out of host memory running galloc " + " ".join(map(str, argv[:1])))
    return rc, _take(out), _take(msg)


def main(argv):
    """`galloc ARGV[1:]` in this process on its own stdout and stderr; the exit status."""
    lib = _load()
    args = (ctypes.c_char_p * len(argv))(*[os.fsencode(a) for a in argv])
    return lib.galloc_tools_main(len(argv), args)


def trace_info(path, fmt):
    """(status, JSON text, message) of galloc_tools_trace_info."""
    lib = _load()
    out, msg = ctypes.c_void_p(), ctypes.c_void_p()
    rc = lib.galloc_tools_trace_info(os.fsencode(path), fmt.encode(), ctypes.byref(out), ctypes.byref(msg))
    if rc < 0:
        raise MemoryError("galloc: out of host memory reading " + os.fsdecode(path))
    return rc, _take(out), _take(msg)

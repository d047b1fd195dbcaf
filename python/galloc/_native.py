"""ctypes bindings of libgalloc.so (the public C API, api/galloc_*.h).

The library is the one the package carries (galloc/_lib/libgalloc.so). Status
codes are not written down here: STATUS_NAMES is read from the library's own
galloc_status_name, so a code added in C appears here by itself.
"""
import ctypes
import os

LIB_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_lib")

# galloc's messages fit in GALLOC_ERROR_MAX (1024) bytes; a larger buffer
# never cuts one.
MESSAGE_BUFFER = 4096

# galloc_snapshot_format_t (api/galloc_trace.h); the values are ABI. The
# package's tests check them against the header.
SNAPSHOT_PICKLE, SNAPSHOT_JSON = 0, 1

# galloc_stats_t is a uint32 struct_size and then one int64 per key;
# galloc_memory_stats copies min(struct_size, its own size), so a buffer this
# large holds the whole struct today and after stats are appended.
STATS_BUFFER = 8192

_c_int, _sz, _vp, _cp = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p
STATS_VISIT = ctypes.CFUNCTYPE(ctypes.c_int, _vp, _cp, ctypes.c_int64)

# galloc_host_stats_t (api/galloc_host.h) is a uint32 struct_size and then
# one int64 per key (28 today); a buffer this large holds it after keys are
# appended too.
HOST_STATS_BUFFER = 1024

# galloc_sleep_stats_t's members (api/galloc_sleep.h), in order: all uint64.
# The package's tests check the list against the header.
SLEEP_STATS_FIELDS = ("tags", "tags_asleep", "bytes_asleep", "bytes_offloaded", "peak_bytes_offloaded", "num_sleep",
                      "num_wake", "bytes_slept", "bytes_woken", "num_failed", "bytes_host_cached")
# The prefix of their keys where they sit beside PyTorch's flattened stats
# (none of PyTorch's keys has a dot-free "galloc" head).
SLEEP_STATS_PREFIX = "galloc.sleep."


class SleepStats(ctypes.Structure):
    """galloc_sleep_stats_t."""

    _fields_ = [(name, ctypes.c_uint64) for name in SLEEP_STATS_FIELDS]


# galloc_mempool.h's flags and routes; the values are ABI, checked against
# the header by the package's tests.
MEMPOOL_USE_ON_OOM, MEMPOOL_NO_SPLIT = 1, 2
ROUTE_THREAD = 1


class MempoolId(ctypes.Structure):
    """galloc_mempool_id_t, PyTorch's MempoolId_t pair."""

    _fields_ = [("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]


# galloc_ipc.h: the handle's size and kinds; ABI, checked against the header
# by the package's tests.
IPC_HANDLE_BYTES = 160
IPC_KINDS = {1: "plain", 2: "pages"}


class IpcHandle(ctypes.Structure):
    """galloc_ipc_handle_t: plain bytes."""

    _fields_ = [("bytes", ctypes.c_ubyte * IPC_HANDLE_BYTES)]


class IpcInfo(ctypes.Structure):
    """galloc_ipc_info_t."""

    _fields_ = [("kind", ctypes.c_int), ("device", ctypes.c_int), ("pid", ctypes.c_int), ("size", ctypes.c_size_t),
                ("offset", ctypes.c_size_t), ("range", ctypes.c_size_t), ("pages", ctypes.c_size_t)]


class IpcStats(ctypes.Structure):
    """galloc_ipc_stats_t."""

    _fields_ = [("exports", ctypes.c_size_t), ("limbo_blocks", ctypes.c_size_t), ("limbo_bytes", ctypes.c_size_t),
                ("opened", ctypes.c_size_t)]


# galloc_inspect.h: the block and segment views of galloc_segments_visit and
# the block states, in order (PyTorch's snapshot strings for them). ABI,
# checked against the header by the package's tests.
BLOCK_STATES = ("inactive", "active_allocated", "active_pending_free")


class BlockView(ctypes.Structure):
    """galloc_block_view_t."""

    _fields_ = [("address", ctypes.c_size_t), ("size", ctypes.c_size_t), ("requested", ctypes.c_size_t),
                ("state", ctypes.c_int)]


class SegmentView(ctypes.Structure):
    """galloc_segment_view_t (uintptr_t is size_t's width on every target galloc builds for)."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("address", ctypes.c_size_t), ("size", ctypes.c_size_t),
                ("stream", ctypes.c_size_t), ("small", ctypes.c_bool), ("expandable", ctypes.c_bool),
                ("pool", MempoolId), ("blocks", ctypes.POINTER(BlockView)), ("n_blocks", ctypes.c_size_t)]


SEGMENT_VISIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(SegmentView))

# galloc_hooks.h: the event a hook is told, the hook, its counters; the
# kinds in value order and the flag bits. ABI, checked against the header by
# the package's tests.
HOOK_KINDS = ("segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom")
HOOK_FLAGS = ((1, "replay"), (2, "undo"), (4, "restored"), (8, "destroy"))
HOOK_ADD_REPLAY = 1


class HookEvent(ctypes.Structure):
    """galloc_hook_event_t."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("device", ctypes.c_int), ("seq", ctypes.c_uint64), ("addr", ctypes.c_size_t),
                ("size", ctypes.c_size_t), ("stream", ctypes.c_size_t), ("pool", MempoolId),
                ("oom_alloc_size", ctypes.c_size_t), ("oom_device_total", ctypes.c_size_t),
                ("oom_device_free", ctypes.c_size_t), ("oom_allowed", ctypes.c_size_t),
                ("oom_allocated_bytes", ctypes.c_int64), ("oom_reserved_bytes", ctypes.c_int64)]


HOOK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(HookEvent))


class Hook(ctypes.Structure):
    """galloc_hook_t."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("kinds", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("fn", HOOK_FN), ("ctx", ctypes.c_void_p)]


class HookStats(ctypes.Structure):
    """galloc_hook_stats_t."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("events", ctypes.c_uint64), ("refused", ctypes.c_uint64),
                ("ignored", ctypes.c_uint64)]


# galloc_oom_rejection_fn (api/galloc_allocator.h): ctx, device, alloc_size,
# total_allocated, device_total.
OOM_REJECTION = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_size_t,
                                 ctypes.c_size_t)

_HP = ctypes.POINTER(IpcHandle)

_SIGNATURES = {
    "galloc_ipc_export": (_c_int, [_vp, _vp, _HP]),
    "galloc_ipc_info": (_c_int, [_HP, ctypes.POINTER(IpcInfo)]),
    "galloc_ipc_send": (_c_int, [_vp, _c_int, _HP]),
    "galloc_ipc_recv": (_c_int, [_vp, _c_int, _HP, ctypes.POINTER(_vp)]),
    "galloc_ipc_open": (_c_int, [_vp, _HP, ctypes.POINTER(_vp)]),
    "galloc_ipc_close": (_c_int, [_vp, _vp]),
    "galloc_ipc_revoke": (_c_int, [_vp, _HP]),
    "galloc_ipc_collect": (_c_int, [_vp, ctypes.POINTER(_sz)]),
    "galloc_ipc_stats": (_c_int, [_vp, ctypes.POINTER(IpcStats)]),
    "galloc_status_name": (_cp, [_c_int]),
    "galloc_strerror": (_cp, [_c_int]),
    "galloc_allocator_create": (_c_int, [_cp, _c_int, _cp, ctypes.POINTER(_vp), _cp, _sz]),
    "galloc_allocator_destroy": (None, [_vp]),
    "galloc_malloc": (_c_int, [_vp, _sz, ctypes.c_uint64, ctypes.POINTER(_vp)]),
    "galloc_free": (_c_int, [_vp, _vp]),
    "galloc_record_stream": (_c_int, [_vp, _vp, ctypes.c_uint64]),
    "galloc_empty_cache": (_c_int, [_vp]),
    "galloc_set_memory_fraction": (_c_int, [_vp, ctypes.c_double]),
    "galloc_set_expandable_reserve_class": (_c_int, [_vp, ctypes.c_uint64, _cp]),
    "galloc_set_oom_rejection_observer": (_c_int, [_vp, OOM_REJECTION, _vp]),
    "galloc_enable_peer_access": (_c_int, [_vp, _c_int]),
    "galloc_memory_stats": (_c_int, [_vp, _vp]),
    "galloc_stats_foreach": (_sz, [_vp, STATS_VISIT, _vp]),
    "galloc_usable_size": (_c_int, [_vp, _vp, ctypes.POINTER(_sz)]),
    "galloc_segments_visit": (_c_int, [_vp, SEGMENT_VISIT, _vp]),
    "galloc_memory_summary": (_c_int, [_vp, ctypes.c_bool, _cp, _sz, ctypes.POINTER(_sz)]),
    "galloc_snapshot_write": (_c_int, [_vp, _cp, _c_int]),
    "galloc_last_error": (_c_int, [_vp, _cp, _sz]),
    "galloc_allocator_backend": (_cp, [_vp]),
    "galloc_mempool_create": (_c_int, [_vp, ctypes.POINTER(MempoolId)]),
    "galloc_mempool_set_flags": (_c_int, [_vp, MempoolId, ctypes.c_uint]),
    "galloc_mempool_begin_allocate": (_c_int, [_vp, MempoolId, _c_int, ctypes.c_uint64]),
    "galloc_mempool_end_allocate": (_c_int, [_vp, MempoolId]),
    "galloc_mempool_release": (_c_int, [_vp, MempoolId]),
    "galloc_tag_begin": (_c_int, [_vp, _cp]),
    "galloc_tag_end": (_c_int, [_vp, _cp]),
    "galloc_sleep": (_c_int, [_vp, _cp, _cp]),
    "galloc_sleep_prepare": (_c_int, [_vp, _cp, _cp]),
    "galloc_wake": (_c_int, [_vp, _cp]),
    "galloc_sleep_stats": (_c_int, [_vp, ctypes.POINTER(SleepStats)]),
    "galloc_tag_asleep": (_c_int, [_vp, _cp, ctypes.POINTER(_c_int)]),
    "galloc_hook_add": (_c_int, [_vp, ctypes.POINTER(Hook), ctypes.POINTER(ctypes.c_uint64)]),
    "galloc_hook_remove": (_c_int, [_vp, ctypes.c_uint64]),
    "galloc_hook_stats": (_c_int, [_vp, ctypes.c_uint64, ctypes.POINTER(HookStats)]),
    "galloc_host_malloc": (_c_int, [_vp, _sz, ctypes.POINTER(_vp)]),
    "galloc_host_free": (_c_int, [_vp, _vp]),
    "galloc_host_record_stream": (_c_int, [_vp, _vp, ctypes.c_uint64]),
    "galloc_host_empty_cache": (_c_int, [_vp]),
    "galloc_host_memory_stats": (_c_int, [_vp, _vp]),
    "galloc_host_reset_peak_stats": (_c_int, [_vp]),
    "galloc_host_reset_accumulated_stats": (_c_int, [_vp]),
    "galloc_host_stats_foreach": (_sz, [_vp, STATS_VISIT, _vp]),
}


def _load():
    lib = ctypes.CDLL(os.path.join(LIB_DIR, "libgalloc.so"))
    for name, (res, args) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


lib = _load()


def _status_names():
    names = []
    while True:
        name = lib.galloc_status_name(len(names)).decode()
        if name == "UNKNOWN":
            return tuple(names)
        names.append(name)


STATUS_NAMES = _status_names()  # index = the galloc_status_t value
OK = STATUS_NAMES.index("OK")
E_OOM = STATUS_NAMES.index("E_OOM")
E_HOOK = STATUS_NAMES.index("E_HOOK")


def tag_list(tags, what="tags"):
    """A sleep/wake tag argument as the C API's comma-separated list (bytes).

    tags: None, a str (one name, or names joined by commas) or an iterable of
    str. None stays None; the caller decides what it means to C. An empty
    list is refused: C reads "" as every tag, the opposite of what an empty
    Python list says. Names are not checked here: galloc_sleep and its kin
    refuse a bad one with E_INVAL and a message naming it.
    """
    if tags is None:
        return None
    if isinstance(tags, str):
        names = [tags]
    elif isinstance(tags, (bytes, bytearray)):
        raise TypeError(f"{what}: a str or an iterable of str, not {type(tags).__name__}")
    else:
        names = list(tags)
        bad = [n for n in names if not isinstance(n, str)]
        if bad:
            raise TypeError(f"{what}: tag names are str, not {type(bad[0]).__name__} ({bad[0]!r})")
    if not names or names == [""]:
        raise ValueError(f"{what}: no tag named (None means every tag)")
    return ",".join(names).encode()


def offload_list(offload):
    """sleep()'s offload argument for C: None or an empty iterable offloads
    nothing (NULL); otherwise as tag_list."""
    if offload is None:
        return None
    if not isinstance(offload, (str, bytes, bytearray)):
        offload = list(offload)
        if not offload:
            return None
    return tag_list(offload, "offload")


def sleep_stats_dict(s):
    """galloc_sleep_stats_t as {"galloc.sleep.<member>": int}, in the struct's order."""
    return {SLEEP_STATS_PREFIX + name: int(getattr(s, name)) for name in SLEEP_STATS_FIELDS}

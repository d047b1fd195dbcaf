"""galloc.Allocator: one caching allocator on one device, over the C API
(api/galloc_allocator.h, galloc_stats.h, galloc_trace.h, galloc_sleep.h,
galloc_mempool.h, galloc_inspect.h, galloc_hooks.h)."""
import contextlib
import ctypes
import re
import sys
import threading
from dataclasses import dataclass
from typing import Tuple

from . import _native
from .errors import error
from .hooks import HooksMixin
from .ipc import IpcMixin

_lib = _native.lib

# The bytes conf/value.c's tokenizer drops wherever they are, even inside a word.
_CONF_SPACE = re.compile(r"[ \t\n\v\f\r]")
_BACKEND_NAME = re.compile(r"[A-Za-z0-9_]{1,31}")


def _named_backend(conf):
    """The device backend a configuration string names (its last
    device_backend item, as the C parser keeps the last), or None when it
    names none or not as a name: the C library then says what is wrong.
    Items split as conf/conf.c splits them: at ',' outside brackets."""
    s, depth, start, named = _CONF_SPACE.sub("", conf or ""), 0, 0, None
    for i, ch in enumerate(s + ","):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(depth - 1, 0)
        elif ch == "," and depth == 0:
            key, colon, value = s[start:i].partition(":")
            if key == "device_backend" and colon:
                named = value if _BACKEND_NAME.fullmatch(value) else None
            start = i + 1
    return named


@dataclass(frozen=True)
class Block:
    """One block of a segment (galloc_block_view_t). state is PyTorch's
    snapshot string: "inactive" (free, cached), "active_allocated" (live)
    or "active_pending_free" (freed, waiting on other streams' work)."""
    address: int
    size: int
    requested: int                # bytes asked for; 0 for a free block
    state: str


@dataclass(frozen=True)
class Segment:
    """One segment as torch.cuda.memory_snapshot() lists it
    (galloc_segment_view_t): a device allocation, or one contiguous mapped
    range of an expandable segment. Its blocks tile it in address order."""
    address: int
    size: int                     # the sum of its blocks' sizes
    stream: int
    small: bool                   # the small pool's (blocks of at most 1 MiB)
    expandable: bool
    pool: Tuple[int, int]         # its MemPool's id, (0, 0) for the default pools
    blocks: Tuple[Block, ...]


class Allocator(IpcMixin, HooksMixin):
    """A galloc caching allocator: PyTorch's CUDA caching allocator policy
    and its 123 statistics, on one device.

    conf: a PYTORCH_CUDA_ALLOC_CONF-style string plus galloc's keys
    ("max_split_size_mb:512,sim_capacity:8GiB"), applied over the
    environment (PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF, then
    GALLOC_CONF). device: the device index. backend: "sim" (a simulated
    device: addresses only, nothing to read or write), "cuda", "hip", or None
    (the default) to let the configuration decide: conf's device_backend,
    else the environment's, else "sim". A backend given both here and in
    conf must be the same one (InvalidArgumentError names both otherwise):
    an explicit setting is never silently replaced.

    Every method raises a galloc.GallocError subclass on failure (see
    galloc.errors); the allocator is unchanged then, as in C. Thread-safe:
    the C library serializes calls on one allocator. close() (or leaving a
    `with` block) destroys it: its addresses become invalid.
    """

    def __init__(self, conf: str = "", device: int = 0, backend: str | None = None):
        named = _named_backend(conf)
        if backend is not None and named is not None and named != backend:
            raise error(_native.STATUS_NAMES.index("E_INVAL"),
                        f'galloc.Allocator: backend="{backend}" and the configuration\'s device_backend:{named} '
                        "name different backends: give one of them, or the same in both")
        handle = ctypes.c_void_p()
        msg = ctypes.create_string_buffer(_native.MESSAGE_BUFFER)
        st = _lib.galloc_allocator_create(None if backend is None else backend.encode(), device,
                                          conf.encode(), ctypes.byref(handle), msg, len(msg))
        if st != _native.OK:
            raise error(st, msg.value.decode(errors="replace"))
        self._handle = handle
        self._close_lock = threading.Lock()
        self.device = device
        self._hooks_init()

    # ---- helpers ----

    def _a(self):
        h = self._handle
        if h is None:
            raise ValueError("galloc.Allocator is closed")
        self._hook_guard(h)
        return h

    def _check(self, st):
        if st != _native.OK:
            msg = ctypes.create_string_buffer(_native.MESSAGE_BUFFER)
            _lib.galloc_last_error(self._a(), msg, len(msg))
            cause = self._hook_cause() if st == _native.E_HOOK else None
            raise error(st, msg.value.decode(errors="replace")) from cause

    # ---- allocation ----

    def malloc(self, size: int, stream: int = 0) -> int:
        """size bytes usable on stream; returns the device address (0 for size 0)."""
        if size < 0:
            raise ValueError(f"size must be >= 0, not {size}")
        p = ctypes.c_void_p()
        self._check(_lib.galloc_malloc(self._a(), size, stream, ctypes.byref(p)))
        return p.value or 0

    def free(self, ptr: int) -> None:
        """Give back an address from malloc (0 is a no-op)."""
        self._check(_lib.galloc_free(self._a(), ptr or None))

    def record_stream(self, ptr: int, stream: int) -> None:
        """ptr is also used on stream (Tensor.record_stream)."""
        self._check(_lib.galloc_record_stream(self._a(), ptr, stream))

    def empty_cache(self) -> None:
        """Release every cached segment that holds no live block (torch.cuda.empty_cache)."""
        self._check(_lib.galloc_empty_cache(self._a()))

    def set_memory_fraction(self, fraction: float) -> None:
        """Cap reserved memory at fraction x the device's total
        (torch.cuda.set_per_process_memory_fraction); 0 <= fraction <= 1."""
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
            raise TypeError(f"fraction: a float, not {type(fraction).__name__}")
        self._check(_lib.galloc_set_memory_fraction(self._a(), float(fraction)))

    def set_expandable_reserve_class(self, stream: int, name) -> None:
        """The reserve class of stream (PyTorch's
        setExpandableSegmentReserveClassForStream): each new expandable segment
        of the stream reserves the class's entry of
        expandable_segments_reserve_by_class, else expandable_segments_reserve,
        else 9/8 of the device's memory (capped at that, in whole pages). A
        request larger than the stream's reserve raises OutOfMemoryError naming
        the reserve. name None or "" clears the class. InvalidArgumentError for
        a name the config list could not write (1 to 31 printable bytes without
        ',', ':', '[', ']', quotes or backslashes); UnsupportedError without
        expandable segments (cudaMallocAsync)."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name: a str or None, not {type(name).__name__}")
        self._check(_lib.galloc_set_expandable_reserve_class(self._a(), stream,
                                                              None if name is None else name.encode()))

    def set_oom_rejection_observer(self, fn) -> None:
        """Call fn(device, alloc_size, total_allocated, device_total) for every
        malloc that throw_on_cudamalloc_oom refuses (PyTorch's
        OomRejectionObserver; the malloc raises OutOfMemoryError "... Allocation
        was preemptively rejected ..." and counts num_oom_rejections). fn runs
        on the thread that called malloc, before malloc raises, without the
        allocator's lock: it may use the allocator. An exception fn raises is
        printed and dropped (PyTorch logs it). One observer: a call replaces the
        last; None removes it. UnsupportedError for cudaMallocAsync."""
        if fn is not None and not callable(fn):
            raise TypeError(f"fn: a callable or None, not {type(fn).__name__}")
        cb = None
        if fn is not None:
            def cb(_ctx, device, alloc_size, total_allocated, device_total):
                fn(device, alloc_size, total_allocated, device_total)
            cb = _native.OOM_REJECTION(cb)
        self._check(_lib.galloc_set_oom_rejection_observer(self._a(), cb or _native.OOM_REJECTION(), None))
        self._rejection_cb = cb  # the C side holds a pointer to it: keep it alive

    def enable_peer_access(self, peer: int) -> None:
        """Let device `peer` read and write this allocator's memory, held now
        and mapped later (torch.cuda's peer access: cudaDeviceEnablePeerAccess
        for plain segments, cuMemSetAccess on every page of expandable and
        tagged segments, wakes included). Idempotent. InvalidArgumentError for
        this allocator's own device or no such device; UnsupportedError when
        the devices cannot reach each other or the backend has no peer access
        (sim, cudaMallocAsync, a user allocator)."""
        if isinstance(peer, bool) or not isinstance(peer, int):
            raise TypeError(f"peer: a device index (int), not {type(peer).__name__}")
        if not -2**31 <= peer < 2**31:
            raise ValueError(f"peer: {peer} is not a device index")
        self._check(_lib.galloc_enable_peer_access(self._a(), peer))

    # ---- private pools (api/galloc_mempool.h) ----

    def mempool(self, use_on_oom: bool = False, no_split: bool = False) -> tuple:
        """A new private pool, torch.cuda.MemPool(use_on_oom=, no_split=):
        its blocks serve only allocations made inside use_mempool(pool).
        use_on_oom: when an allocation outside any pool finds no cached block
        and the device has no room for a new segment, a free cached block of
        this pool may serve it (before any cache is freed; never growing the
        pool). no_split: the pool's blocks are handed out whole, never split.
        Returns the pool's id, a pair (0, n). Raises UnsupportedError for an
        allocator without pools (backend:cudaMallocAsync, user)."""
        pid = _native.MempoolId()
        self._check(_lib.galloc_mempool_create(self._a(), ctypes.byref(pid)))
        flags = (_native.MEMPOOL_USE_ON_OOM if use_on_oom else 0) | (_native.MEMPOOL_NO_SPLIT if no_split else 0)
        if flags:
            st = _lib.galloc_mempool_set_flags(self._a(), pid, flags)
            if st != 0:
                _lib.galloc_mempool_release(self._a(), pid)
                self._check(st)
        return (pid.a, pid.b)

    @contextlib.contextmanager
    def use_mempool(self, pool: tuple):
        """Within the `with` block, allocations this thread makes come from
        pool (torch.cuda.use_mem_pool). InvalidArgumentError for an unknown
        or released pool, or one already in use."""
        pid = _native.MempoolId(*pool)
        self._check(_lib.galloc_mempool_begin_allocate(self._a(), pid, _native.ROUTE_THREAD, 0))
        try:
            yield self
        finally:
            if self._handle is not None:
                st = _lib.galloc_mempool_end_allocate(self._handle, pid)
                if st != 0 and sys.exc_info()[0] is None:
                    self._check(st)

    def release_mempool(self, pool: tuple) -> None:
        """Drop the pool (MemPool's destructor): its cached segments go back
        at the next empty_cache(); blocks still allocated from it stay valid
        until freed."""
        self._check(_lib.galloc_mempool_release(self._a(), _native.MempoolId(*pool)))

    # ---- sleep and wake (api/galloc_sleep.h) ----

    @contextlib.contextmanager
    def tag(self, name: str):
        """Within the `with` block, allocations this thread makes come from
        tag `name`, a sleepable pool created (awake) at its first use:

            with a.tag("weights"):
                w = a.malloc(1 << 30)

        The tag ends when the block does, exception or not. Tag names: 1 to
        31 bytes of [A-Za-z0-9_.-]. Raises InvalidArgumentError for a bad
        name or a tag this thread has already begun; a backend without
        virtual-memory ops fails the first allocation in the tag
        (UnsupportedError)."""
        if not isinstance(name, str):
            raise TypeError(f"tag: the name is a str, not {type(name).__name__}")
        self._check(_lib.galloc_tag_begin(self._a(), name.encode()))
        try:
            yield self
        except BaseException:
            if self._handle is not None:  # the block's exception wins over a failed end
                _lib.galloc_tag_end(self._handle, name.encode())
            raise
        self._check(_lib.galloc_tag_end(self._a(), name.encode()))

    def sleep(self, tags=None, offload=None) -> None:
        """Put tags to sleep: their physical memory goes back to the device,
        their addresses stay reserved, every pointer stays valid.

        tags: a tag name, names joined by commas, or an iterable of names;
        None: every tag. offload: the tags (same forms) whose contents are
        copied to pinned host memory and restored byte for byte by wake();
        None: none. The contents of the other tags are discarded: undefined
        after wake, though their pointers stay valid. While asleep,
        allocating from a tag raises AsleepError; freeing is allowed. A tag
        already asleep is left so. Raises InvalidArgumentError for an
        unknown tag (nothing done), UnsupportedError when the backend cannot
        offload, HostMemoryError / DeviceError (galloc_sleep.h: each tag is
        then either fully awake or fully asleep)."""
        self._check(_lib.galloc_sleep(self._a(), _native.tag_list(tags), _native.offload_list(offload)))

    def sleep_prepare(self, tags=None, offload=None) -> None:
        """Pin now the host memory that sleep(tags, offload) will copy into,
        so that the sleep itself pins nothing and is left with its copies
        (pinning was most of a first sleep's time on a GPU). Same arguments
        as the sleep it prepares: for each allocated block of every awake
        tag in both tags and offload, a pinned block of its size waits for
        the sleep, unless one waits already (kept by a wake, or pinned by an
        earlier sleep_prepare). A discarded or sleeping tag gets nothing;
        device memory is not touched. empty_cache() gives the reserve back;
        sleep_stats()["galloc.sleep.bytes_host_cached"] counts it. Raises
        InvalidArgumentError for an unknown tag, UnsupportedError when the
        backend cannot offload, HostMemoryError when pinning is refused
        (what the call pinned is given back); nothing is done then."""
        self._check(_lib.galloc_sleep_prepare(self._a(), _native.tag_list(tags), _native.offload_list(offload)))

    def wake(self, tags=None) -> None:
        """Wake tags (same forms as sleep(); None: every tag): new physical
        memory at the same addresses, offloaded contents copied back. A tag
        already awake is left so. Raises OutOfMemoryError when the device
        has not the memory (the tag stays asleep, nothing lost),
        InvalidArgumentError for an unknown tag."""
        self._check(_lib.galloc_wake(self._a(), _native.tag_list(tags)))

    def tag_asleep(self, tag: str) -> bool:
        """Whether tag is asleep. InvalidArgumentError for an unknown tag."""
        if not isinstance(tag, str):
            raise TypeError(f"tag_asleep: the tag is a str, not {type(tag).__name__}")
        asleep = ctypes.c_int(0)
        self._check(_lib.galloc_tag_asleep(self._a(), tag.encode(), ctypes.byref(asleep)))
        return bool(asleep.value)

    def sleep_stats(self) -> dict:
        """galloc's sleep counters (galloc_sleep_stats_t) as
        {"galloc.sleep.<member>": int}: tags, tags_asleep, bytes_asleep,
        bytes_offloaded, peak_bytes_offloaded, num_sleep, num_wake,
        bytes_slept, bytes_woken, num_failed, bytes_host_cached. The prefix keeps them apart
        from memory_stats()'s PyTorch keys when the two are merged. Sleep
        also moves PyTorch's reserved_bytes and num_device_alloc/free there;
        allocated and active bytes do not change."""
        s = _native.SleepStats()
        self._check(_lib.galloc_sleep_stats(self._a(), ctypes.byref(s)))
        return _native.sleep_stats_dict(s)

    # ---- introspection ----

    @property
    def backend(self) -> str:
        """The device backend's name ("sim", "cuda", ...)."""
        return _lib.galloc_allocator_backend(self._a()).decode()

    # ---- the pinned host cache (api/galloc_host.h) ----

    def host_malloc(self, size: int) -> int:
        """size bytes of pinned host memory from the allocator's host cache
        (PyTorch's CachingHostAllocator: pin_memory()); returns the address
        (0 for size 0). Rounded up to a power of two unless
        pinned_max_round_threshold_mb or pinned_max_cached_size_mb says
        otherwise; a cached block is reused only after the events of every
        stream it was recorded on completed."""
        if size < 0:
            raise ValueError(f"size must be >= 0, not {size}")
        p = ctypes.c_void_p()
        self._check(_lib.galloc_host_malloc(self._a(), size, ctypes.byref(p)))
        return p.value or 0

    def host_free(self, ptr: int) -> None:
        """Give back a block from host_malloc (0 is a no-op): cached once the
        events of its recorded streams complete."""
        self._check(_lib.galloc_host_free(self._a(), ptr or None))

    def host_record_stream(self, ptr: int, stream: int) -> None:
        """The host block at ptr is used by work queued on stream (what a
        non_blocking copy records): its free waits for that work."""
        self._check(_lib.galloc_host_record_stream(self._a(), ptr, stream))

    def host_empty_cache(self) -> None:
        """Give every cached pinned block back to the driver
        (torch.accelerator.empty_host_cache); blocks in use or waiting on
        events stay."""
        self._check(_lib.galloc_host_empty_cache(self._a()))

    def host_memory_stats(self) -> dict:
        """torch.cuda.host_memory_stats(): its 28 flattened keys, in its order, int values."""
        buf = (ctypes.c_int64 * (_native.HOST_STATS_BUFFER // 8))()
        ctypes.c_uint32.from_buffer(buf).value = _native.HOST_STATS_BUFFER
        self._check(_lib.galloc_host_memory_stats(self._a(), buf))
        out = {}

        def visit(_ctx, key, value):
            out[key.decode()] = value
            return 0

        _lib.galloc_host_stats_foreach(buf, _native.STATS_VISIT(visit), None)
        return out

    def reset_peak_host_memory_stats(self) -> None:
        """torch.cuda.reset_peak_host_memory_stats(): every peak = current."""
        self._check(_lib.galloc_host_reset_peak_stats(self._a()))

    def reset_accumulated_host_memory_stats(self) -> None:
        """torch.cuda.reset_accumulated_host_memory_stats(): allocated and freed to 0."""
        self._check(_lib.galloc_host_reset_accumulated_stats(self._a()))

    def memory_stats(self) -> dict:
        """torch.cuda.memory_stats(): the 123 flattened keys, in PyTorch's order, int values."""
        buf = (ctypes.c_int64 * (_native.STATS_BUFFER // 8))()
        ctypes.c_uint32.from_buffer(buf).value = _native.STATS_BUFFER
        self._check(_lib.galloc_memory_stats(self._a(), buf))
        out = {}

        def visit(_ctx, key, value):
            out[key.decode()] = value
            return 0

        _lib.galloc_stats_foreach(buf, _native.STATS_VISIT(visit), None)
        return out

    def usable_size(self, ptr: int) -> int:
        """The bytes of the live block at ptr, as malloc handed it out: what
        allocated_bytes counts for it (the request rounded as PyTorch
        rounds it, more where the rest of the block was too small to split
        off; the request itself for a user or cudaMallocAsync allocator).
        Cheap: it takes no lock but the one a free of ptr would. Raises
        NotOwnedError for a freed pointer, one inside a block or another
        allocator's, InvalidArgumentError for 0."""
        if isinstance(ptr, bool) or not isinstance(ptr, int):
            raise TypeError(f"usable_size: ptr is an address (int), not {type(ptr).__name__}")
        n = ctypes.c_size_t(0)
        self._check(_lib.galloc_usable_size(self._a(), ptr or None, ctypes.byref(n)))
        return n.value

    def segments(self) -> list:
        """Every segment and its blocks, as torch.cuda.memory_snapshot()
        lists them (galloc_segments_visit): a list of galloc.Segment, by
        address. An expandable segment is one Segment per contiguous mapped
        range; a sleeping tag's segments are left out (they hold no device
        memory). The segments' sizes sum to
        memory_stats()["reserved_bytes.all.current"], and the blocks in state
        "active_allocated" to "allocated_bytes.all.current" less the sleeping
        tags' blocks. Raises UnsupportedError for a user or cudaMallocAsync
        allocator (no segments of its own)."""
        out = []

        def visit(_ctx, view):
            v = view.contents
            blocks = tuple(Block(b.address, b.size, b.requested, _native.BLOCK_STATES[b.state])
                           for b in v.blocks[:v.n_blocks])
            out.append(Segment(v.address, v.size, v.stream, bool(v.small), bool(v.expandable),
                               (v.pool.a, v.pool.b), blocks))
            return 0

        self._check(_lib.galloc_segments_visit(self._a(), _native.SEGMENT_VISIT(visit), None))
        return sorted(out, key=lambda s: s.address)

    def memory_summary(self, abbreviated: bool = False) -> str:
        """torch.cuda.memory_summary()'s table."""
        needed = ctypes.c_size_t(0)
        self._check(_lib.galloc_memory_summary(self._a(), abbreviated, None, 0, ctypes.byref(needed)))
        buf = ctypes.create_string_buffer(needed.value + 1)
        self._check(_lib.galloc_memory_summary(self._a(), abbreviated, buf, len(buf), ctypes.byref(needed)))
        return buf.value.decode()

    def snapshot(self, path: str) -> None:
        """Write torch.cuda.memory._dump_snapshot's dictionary to path: JSON if
        it ends in ".json", else pickle (https://pytorch.org/memory_viz)."""
        fmt = _native.SNAPSHOT_JSON if str(path).endswith(".json") else _native.SNAPSHOT_PICKLE
        self._check(_lib.galloc_snapshot_write(self._a(), str(path).encode(), fmt))

    # ---- lifetime ----

    def close(self) -> None:
        """Destroy the allocator: every segment goes back to the device (its
        hooks are told, flagged "destroy"). Idempotent."""
        if self._handle is not None:
            self._hook_guard(self._handle)
        with self._close_lock:
            h, self._handle = self._handle, None
        if h is not None:
            _lib.galloc_allocator_destroy(h)  # hooks are told of every range still present
            self._hooks.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_handle", None) is not None:
            self.close()

    def __repr__(self):
        state = "closed" if self._handle is None else self.backend
        return f"<galloc.Allocator device={self.device} {state}>"

"""Device-memory hooks: galloc.Allocator's add_hook, remove_hook and
hook_stats (api/galloc_hooks.h).

A hook is a Python callable that receives a galloc.HookEvent for every
segment the allocator allocates or frees, every page of an expandable
segment it maps or unmaps (sleep and wake included), and every
out-of-memory failure, in order, on the thread whose call caused it, while
the allocator's lock is held:

    def register(ev):
        if ev.kind in ("segment_alloc", "segment_map"):
            my_library.register(ev.addr, ev.size)
        elif ev.kind in ("segment_free", "segment_unmap"):
            my_library.deregister(ev.addr)

    hook = a.add_hook(register, kinds=["segment_alloc", "segment_free", "segment_map", "segment_unmap"])

Raising refuses memory being added: the galloc call that needed it fails
with galloc.HookError, whose __cause__ is the hook's exception, and the
memory goes back to the device. For any other event the exception cannot
stop anything: it is reported through sys.unraisablehook (as Python reports
an exception in __del__) and counted in hook_stats()["ignored"]. Exceptions
never cross into C.

A hook must not call its own allocator (HookError at once: the call would
deadlock on the lock the hook runs under), nor wait for another thread that
is calling it. Taking the GIL under the allocator's lock is safe here:
galloc.Allocator reaches C through ctypes, which releases the GIL for every
call, so no thread holds the GIL while it waits for the allocator's lock.
Hooks are not offered through galloc.torch: PyTorch calls its allocator with
the GIL held, and a Python hook there would deadlock (docs/hooks.md).
"""
import ctypes
import sys
import threading
import traceback
import types
from dataclasses import dataclass
from typing import FrozenSet, Tuple

from . import _native
from ._native import lib as _lib
from .errors import HookError

# What a hook on this thread is running for: the allocator handles, innermost last.
_running = threading.local()


def _active():
    stack = getattr(_running, "stack", None)
    if stack is None:
        stack = _running.stack = []
    return stack


@dataclass(frozen=True)
class HookEvent:
    """One event (galloc_hook_event_t). kind: "segment_alloc",
    "segment_free", "segment_map", "segment_unmap" or "oom". The range
    [addr, addr + size) was added (alloc, map) or is about to go (free,
    unmap); every removal names exactly one earlier addition. flags: a
    subset of {"replay", "undo", "restored", "destroy"}. seq numbers the
    allocator's events, the same for every hook told of one. For "oom": size
    is the request rounded as PyTorch rounds it, and the figures of PyTorch's
    OutOfMemoryObserver and message are set (0 otherwise)."""
    kind: str
    addr: int
    size: int
    device: int
    stream: int
    pool: Tuple[int, int]          # the segment's MemPool id, (0, 0) for the default pools
    seq: int
    flags: FrozenSet[str]
    alloc_size: int = 0            # oom: the segment size the device was asked for
    device_total: int = 0          # oom: the device's total memory
    device_free: int = 0           # oom: the device's free memory
    allowed: int = 0               # oom: the memory fraction's cap in bytes, 0 without one
    allocated_bytes: int = 0       # oom: allocated_bytes.all.current
    reserved_bytes: int = 0        # oom: reserved_bytes.all.current

    @property
    def refusable(self) -> bool:
        """Whether raising refuses it: memory being added (not replayed or restored)."""
        return self.kind in ("segment_alloc", "segment_map") and not self.flags & {"replay", "restored"}


def _event(c) -> HookEvent:
    return HookEvent(_native.HOOK_KINDS[c.kind] if c.kind < len(_native.HOOK_KINDS) else str(c.kind), c.addr,
                     c.size, c.device, c.stream, (c.pool.a, c.pool.b), c.seq,
                     frozenset(name for bit, name in _native.HOOK_FLAGS if c.flags & bit), c.oom_alloc_size,
                     c.oom_device_total, c.oom_device_free, c.oom_allowed, c.oom_allocated_bytes,
                     c.oom_reserved_bytes)


class HooksMixin:
    """The hook methods of galloc.Allocator (self._a(), self._check,
    self._hooks: id -> the ctypes function C holds, self._refusals: the
    exception behind this thread's last refusal)."""

    def add_hook(self, fn, kinds=None, replay: bool = False) -> int:
        """Call fn(galloc.HookEvent) for every event of the kinds named
        (an iterable of "segment_alloc", "segment_free", "segment_map",
        "segment_unmap", "oom"; None: every kind), after the hooks added
        before it. replay: first tell fn of every range present now
        (flagged "replay"), so that it misses nothing and sees nothing twice.
        Returns the hook's id. Raises UnsupportedError for a cudaMallocAsync
        or user allocator, HookError when fn raised during the replay (it is
        then not added), InvalidArgumentError for an unknown kind."""
        if not callable(fn):
            raise TypeError(f"add_hook: fn must be callable, not {type(fn).__name__}")
        mask = 0
        for name in (kinds if kinds is not None else ()):
            if name not in _native.HOOK_KINDS:
                raise _invalid(f"add_hook: unknown kind {name!r} (kinds: {', '.join(_native.HOOK_KINDS)})")
            mask |= 1 << _native.HOOK_KINDS.index(name)
        if kinds is not None and mask == 0:
            raise _invalid("add_hook: no kind named (None means every kind)")
        handle = self._a()
        refusals = self._refusals

        def call(_ctx, ev):
            event = _event(ev.contents)
            stack = _active()
            stack.append(handle.value)
            try:
                fn(event)
                return 0
            except BaseException as e:  # never into C: a refusal, or reported
                if event.refusable:
                    refusals.error = e
                else:
                    _unraisable(e, fn, f"Exception ignored in galloc hook for a {event.kind} event")
                return 1
            finally:
                stack.pop()

        cfn = _native.HOOK_FN(call)
        spec = _native.Hook(ctypes.sizeof(_native.Hook), mask, _native.HOOK_ADD_REPLAY if replay else 0, cfn, None)
        hid = ctypes.c_uint64(0)
        # Registered before the call: a replay calls fn during it.
        self._hooks[("pending", id(cfn))] = cfn
        try:
            self._check(_lib.galloc_hook_add(handle, ctypes.byref(spec), ctypes.byref(hid)))
        finally:
            del self._hooks[("pending", id(cfn))]
        self._hooks[hid.value] = cfn
        return hid.value

    def remove_hook(self, hook_id: int) -> None:
        """Stop calling hook hook_id; once this returns it is not called
        again. InvalidArgumentError for an id not registered here."""
        self._check(_lib.galloc_hook_remove(self._a(), hook_id))
        self._hooks.pop(hook_id, None)

    def hook_stats(self, hook_id: int) -> dict:
        """Hook hook_id's counters: events (calls), refused (additions it
        refused), ignored (exceptions for events that cannot be refused)."""
        st = _native.HookStats()
        st.struct_size = ctypes.sizeof(st)
        self._check(_lib.galloc_hook_stats(self._a(), hook_id, ctypes.byref(st)))
        return {"events": st.events, "refused": st.refused, "ignored": st.ignored}

    # ---- for Allocator ----

    def _hooks_init(self):
        self._hooks = {}
        self._refusals = threading.local()

    def _hook_guard(self, handle):
        """Refuse a call made from one of this allocator's hooks."""
        if self._hooks and handle.value in _active():
            raise HookError("E_HOOK", _native.E_HOOK,
                            "a device-memory hook called its own allocator: hooks run under the allocator's lock, "
                            "so the call would deadlock (galloc_hooks.h)")

    def _hook_cause(self):
        """The exception behind this thread's last refusal (taken), or None."""
        e = getattr(self._refusals, "error", None)
        self._refusals.error = None
        return e


def _unraisable(e, obj, msg):
    """Report e as Python reports an exception it cannot raise: through
    sys.unraisablehook when one is installed, else as its default hook
    prints (which accepts only the interpreter's own argument type)."""
    if sys.unraisablehook is not sys.__unraisablehook__:
        sys.unraisablehook(types.SimpleNamespace(exc_type=type(e), exc_value=e, exc_traceback=e.__traceback__,
                                                 err_msg=msg, object=obj))
        return
    print(f"{msg}: {obj!r}", file=sys.stderr)
    traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)


def _invalid(msg):
    from .errors import error
    return error(_native.STATUS_NAMES.index("E_INVAL"), msg)

"""Sharing blocks between processes: galloc.Allocator's ipc_* methods
(api/galloc_ipc.h).

A handle is 160 bytes. A block of a plain segment opens from the bytes alone
(ipc_open), sent any way; a block of an expandable segment or a sleep tag
needs its pages' file descriptors, which only a Unix socket carries: send it
with ipc_send and open it with ipc_recv. The producer's free of a shared
block keeps it until the reader closes it or dies.
"""
import ctypes
import socket as _socket

from . import _native
from ._native import lib as _lib


def _fd(sock) -> int:
    fd = sock.fileno() if isinstance(sock, _socket.socket) else sock
    if isinstance(fd, bool) or not isinstance(fd, int) or fd < 0:
        raise TypeError(f"sock: a connected AF_UNIX socket or its descriptor, not {sock!r}")
    return fd


def _handle(handle) -> _native.IpcHandle:
    if not isinstance(handle, (bytes, bytearray)) or len(handle) != _native.IPC_HANDLE_BYTES:
        raise TypeError(f"handle: the {_native.IPC_HANDLE_BYTES} bytes ipc_export returned")
    h = _native.IpcHandle()
    ctypes.memmove(h.bytes, bytes(handle), _native.IPC_HANDLE_BYTES)
    return h


def ipc_info(handle: bytes) -> dict:
    """What a handle says: kind ("plain" or "pages"), device, pid (the
    producer's), size (the block's requested bytes), offset and range (its
    place in what the reader maps), pages (descriptors that travel with it)."""
    info = _native.IpcInfo()
    st = _lib.galloc_ipc_info(ctypes.byref(_handle(handle)), ctypes.byref(info))
    if st != _native.OK:
        from .errors import error
        raise error(st, "not a galloc IPC handle")
    return {"kind": _native.IPC_KINDS[info.kind], "device": info.device, "pid": info.pid, "size": info.size,
            "offset": info.offset, "range": info.range, "pages": info.pages}


class IpcMixin:
    """The ipc_* methods of galloc.Allocator (self._a(), self._check)."""

    def ipc_export(self, ptr: int) -> bytes:
        """A handle (bytes) for the block malloc returned at ptr; one reader each."""
        h = _native.IpcHandle()
        self._check(_lib.galloc_ipc_export(self._a(), ptr, ctypes.byref(h)))
        return bytes(h.bytes)

    def ipc_send(self, sock, handle: bytes) -> None:
        """Send an export of this allocator, with its descriptors, on a
        connected AF_UNIX stream socket (a socket.socket or its fd)."""
        self._check(_lib.galloc_ipc_send(self._a(), _fd(sock), ctypes.byref(_handle(handle))))

    def ipc_recv(self, sock) -> tuple:
        """Receive a handle that ipc_send sent and open it: (ptr, handle)."""
        h, p = _native.IpcHandle(), ctypes.c_void_p()
        self._check(_lib.galloc_ipc_recv(self._a(), _fd(sock), ctypes.byref(h), ctypes.byref(p)))
        return p.value, bytes(h.bytes)

    def ipc_open(self, handle: bytes) -> int:
        """Open a plain-segment handle from another process: the block's address here."""
        p = ctypes.c_void_p()
        self._check(_lib.galloc_ipc_open(self._a(), ctypes.byref(_handle(handle)), ctypes.byref(p)))
        return p.value

    def ipc_close(self, ptr: int) -> None:
        """Close a block that ipc_open or ipc_recv opened."""
        self._check(_lib.galloc_ipc_close(self._a(), ptr))

    def ipc_revoke(self, handle: bytes) -> None:
        """End an export of this allocator that no reader opened."""
        self._check(_lib.galloc_ipc_revoke(self._a(), ctypes.byref(_handle(handle))))

    def ipc_collect(self) -> int:
        """End exports whose readers closed or died (torch.cuda.ipc_collect):
        the number of freed blocks given back."""
        n = ctypes.c_size_t(0)
        self._check(_lib.galloc_ipc_collect(self._a(), ctypes.byref(n)))
        return n.value

    def ipc_stats(self) -> dict:
        """{"exports", "limbo_blocks", "limbo_bytes", "opened"}: exports not
        ended, freed blocks kept for readers and their bytes, blocks of other
        processes open here."""
        s = _native.IpcStats()
        self._check(_lib.galloc_ipc_stats(self._a(), ctypes.byref(s)))
        return {name: getattr(s, name) for name, _ in _native.IpcStats._fields_}

"""galloc's errors as Python exceptions.

Every failed call raises a GallocError subclass chosen by the status's name
(read from the C library), carrying that name, the numeric status, galloc's
static text for it, and the allocator's message. str(error) is the message
itself: for an out-of-memory, PyTorch's own "CUDA out of memory. Tried to
allocate ..." text.
"""
from . import _native


class GallocError(Exception):
    """A galloc call failed. status: the status name ("E_OOM"); code: its
    galloc_status_t value; strerror: galloc's text for the status; message:
    what the allocator said (may be empty)."""

    def __init__(self, status, code, message):
        self.status, self.code, self.message = status, code, message
        self.strerror = _native.lib.galloc_strerror(code).decode()
        super().__init__(message or f"{status}: {self.strerror}")


class InvalidArgumentError(GallocError, ValueError):
    """E_INVAL: a bad argument (NULL, a device index out of range, ...)."""


class OutOfMemoryError(GallocError, MemoryError):
    """E_OOM: the device is out of memory; the message is PyTorch's."""


class NotOwnedError(GallocError, ValueError):
    """E_NOT_OWNED: a pointer this allocator did not hand out, or already freed."""


class ConfigError(GallocError, ValueError):
    """E_CONFIG: the configuration string does not parse (key, value, offset)."""


class UnsupportedError(GallocError):
    """E_UNSUPPORTED: the backend cannot do this."""


class UnavailableError(GallocError):
    """E_UNAVAILABLE: the backend's library or device is not there."""


class DeviceError(GallocError):
    """E_DEVICE: a device call failed."""


class HostMemoryError(GallocError, MemoryError):
    """E_NOMEM: out of host memory."""


class CorruptError(GallocError):
    """E_CORRUPT: an allocator invariant is broken (a bug: report it)."""


class FileError(GallocError, OSError):
    """E_IO: a file could not be read or written (the message names it)."""


class DestroyedError(GallocError):
    """E_DESTROYED: the allocator was closed."""


class AsleepError(GallocError):
    """E_ASLEEP: an allocation from a tag (a sleepable pool) that is asleep;
    the message names the tag. Wake it first (Allocator.wake,
    galloc.torch.wake)."""


class HookError(GallocError):
    """E_HOOK: a device-memory hook (Allocator.add_hook) refused memory the
    call needed; nothing was handed out or changed. The message names the
    hook and the event; when the hook is a Python function, the exception it
    raised is this error's __cause__. Also raised, without a galloc status,
    when a hook calls its own allocator (that would deadlock)."""


_BY_NAME = {
    "E_INVAL": InvalidArgumentError,
    "E_OOM": OutOfMemoryError,
    "E_NOT_OWNED": NotOwnedError,
    "E_CONFIG": ConfigError,
    "E_UNSUPPORTED": UnsupportedError,
    "E_UNAVAILABLE": UnavailableError,
    "E_DEVICE": DeviceError,
    "E_NOMEM": HostMemoryError,
    "E_CORRUPT": CorruptError,
    "E_IO": FileError,
    "E_DESTROYED": DestroyedError,
    "E_ASLEEP": AsleepError,
    "E_HOOK": HookError,
}


def error(code, message):
    """The exception for galloc_status_t `code` with galloc's message."""
    name = _native.STATUS_NAMES[code] if 0 <= code < len(_native.STATUS_NAMES) else f"status {code}"
    return _BY_NAME.get(name, GallocError)(name, code, message)

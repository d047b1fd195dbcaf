"""galloc from Python: PyTorch's CUDA caching allocator as a library.

    import galloc
    with galloc.Allocator("sim_capacity:1GiB") as a:     # a simulated device
        p = a.malloc(1)
        a.memory_stats()["allocated_bytes.all.current"]   # 512, as PyTorch
        a.free(p)

Trace analysis runs the galloc command's engine in this process:

    r = galloc.replay("job.trace", confs=["", "expandable_segments:True"])
    r["defaults"].owners.peak_reserved.top(5)           # who holds the memory at the peak
    f = galloc.fit("job.trace")                         # f.winner, f.configurations
    galloc.load_trace("job.pickle")                     # format, devices, events

Sleep and wake (api/galloc_sleep.h): tagged memory gives its physical
memory back and keeps its addresses:

    with a.tag("weights"):
        w = a.malloc(1 << 30)
    a.sleep(offload="weights")                          # galloc.torch.sleep for PyTorch
    a.wake()                                            # w's bytes are back at w

galloc.Allocator runs galloc's C library (carried in the package) through
ctypes. galloc.torch makes galloc PyTorch's CUDA allocator (galloc.torch.use())
and reads its statistics; importing galloc imports neither torch nor
galloc.torch.
"""
from ._native import STATUS_NAMES
from .allocator import Allocator, Block, Segment
from .hooks import HookEvent
from .ipc import ipc_info
from .analysis import fit, fit_fleet, fleet_files, load_trace, replay
from .results import (OOM, Cap, CapPart, ConfigResult, FitAnswer, FitConfig, FitResult, FitUnit, ReplayResult,
                      TraceInfo, TraceResult, TraceUnit, UnitInfo)
from .owners import (FitOwners, FitRunOwners, Frame, Moment, Owners, PhaseShare, Pin, PoolShare, Request,
                     SegmentState, Shortfall, Site, SiteShare, StreamShare)
from .errors import (AsleepError, ConfigError, CorruptError, DestroyedError, DeviceError, FileError,
                     GallocError, HookError, HostMemoryError, InvalidArgumentError, NotOwnedError, OutOfMemoryError,
                     UnavailableError, UnsupportedError)

__all__ = [
    "Allocator", "Block", "Segment", "HookEvent", "HookError", "ipc_info", "STATUS_NAMES", "GallocError", "InvalidArgumentError",
    "OutOfMemoryError", "NotOwnedError", "ConfigError", "UnsupportedError", "UnavailableError", "DeviceError",
    "HostMemoryError", "CorruptError", "FileError", "DestroyedError", "AsleepError", "replay", "fit", "fit_fleet",
    "fleet_files", "load_trace", "ReplayResult", "TraceResult", "ConfigResult", "OOM", "FitResult", "FitConfig",
    "TraceInfo", "TraceUnit", "UnitInfo", "Cap", "CapPart", "FitAnswer", "FitUnit", "Owners", "Moment", "Site",
    "SiteShare", "Frame", "PhaseShare", "StreamShare", "PoolShare", "SegmentState", "Pin", "Request",
    "FitOwners", "FitRunOwners", "Shortfall",
]


def _version():
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("galloc")
    except PackageNotFoundError:
        return "0+unknown"


__version__ = _version()

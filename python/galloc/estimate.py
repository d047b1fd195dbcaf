"""Does a PyTorch job fit, under which settings, on which device: before it runs.

    import galloc.estimate
    print(galloc.estimate.estimate(step, batch, steps=3, device_memory="80GiB"))

or, for a script train.py whose function galloc_step() returns the step
(a callable, or (callable, inputs)):

    python -m galloc estimate train.py --device-memory 80GiB

estimate() records the step on the CPU (galloc.record: no GPU), adds the
CUDA-only allocations of galloc.cuda_table (estimated, and said so), writes
the recording as a PyTorch snapshot and runs galloc's own replay and fit on
it: peak requested, allocated and reserved under the job's settings and
under the best ones fit finds, the smallest device it fits (the allocator's
bisected minimum plus the memory outside the allocator, the CUDA context)
and fit's advice. docs/estimate.md says what is recorded, what is
estimated, the measured errors and the limits.
"""
import argparse
import json
import os
import runpy
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional, Sequence

from . import cuda_table
from .record import Event, Recording, _label, record


@dataclass(frozen=True)
class Added:
    """One CUDA-only entry as an estimate applied it."""
    name: str
    kind: str             # "allocation" (replayed) or "outside" (added to the smallest device)
    bytes: int            # each (a stand-in: the mean of its allocations)
    count: int            # how many the estimate placed
    what: str
    source: str
    versions: str


@dataclass(frozen=True)
class Peaks:
    """One configuration's figures from the replay of the recording."""
    conf: str
    fits: bool
    verdict: str
    peak_requested_bytes: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int


@dataclass(frozen=True)
class Estimate:
    """The answer of estimate(): the figures of galloc replay and galloc fit
    on the recording, and what of it is estimated rather than recorded."""
    torch_version: str
    steps: int
    device_memory: int                  # the device the question names (bytes)
    capability: tuple                   # the compute capability the CUDA-only sizes are for
    recorded: Peaks                     # under the job's settings (conf)
    best: Optional[Peaks]               # under fit's pick; None when nothing fits
    pytorch_cuda_alloc_conf: Optional[str]  # fit's winner: what to export (None: nothing fits)
    min_device_memory: Optional[int]    # the smallest device: the pick's bisected minimum + outside bytes
    min_allocator_memory: Optional[int]  # ... the allocator's part alone
    outside_bytes: int                  # device memory outside the allocator (estimated: cuda_table)
    advice: tuple                       # fit's answer and caveats, as sentences
    recorded_allocations: int           # allocations recorded (prologue included)
    recorded_bytes: int                 # their bytes
    estimated: tuple                    # Added entries: what is estimated, not recorded
    trace: str                          # the snapshot written (kept only when asked for)
    fit: object = field(repr=False, default=None)      # galloc.FitResult
    replay: object = field(repr=False, default=None)   # galloc.ReplayResult

    def to_json(self):
        """The estimate as a JSON-ready dict (the command's --json)."""
        d = {k: v for k, v in asdict(self).items() if k not in ("fit", "replay")}
        d["capability"] = list(self.capability)
        d["estimated_note"] = ("figures include the CUDA-only allocations in 'estimated', which come from "
                               "galloc's table (galloc/cuda_table.py), not from the recording")
        return d

    def __str__(self):
        return report(self)


def _gib(n):
    if n is None:
        return "n/a"
    return f"{n / (1 << 30):.2f} GiB" if n >= 1 << 30 else f"{n / (1 << 20):.2f} MiB"


def report(e):
    """The estimate in words, as the command prints it."""
    lines = [f"galloc estimate: {e.steps} step(s) recorded on the CPU with torch {e.torch_version}; "
             f"device of {_gib(e.device_memory)}, CUDA-only sizes for compute capability "
             f"{e.capability[0]}.{e.capability[1]}",
             f"recorded: {e.recorded_allocations} allocations, {_gib(e.recorded_bytes)} in all"]
    for a in e.estimated:
        lines.append(f"estimated, not recorded: {a.name}: {a.count} x {a.bytes} bytes ({a.kind}); source: {a.source}")
    lines.append("")
    lines.append(f"{'':28s}{'requested':>14s}{'allocated':>14s}{'reserved':>14s}  verdict")
    for label, p in (("recorded settings", e.recorded), ("best settings", e.best)):
        if p is None:
            lines.append(f"{label:28s}  nothing fits")
            continue
        lines.append(f"{label:28s}{_gib(p.peak_requested_bytes):>14s}{_gib(p.peak_allocated_bytes):>14s}"
                     f"{_gib(p.peak_reserved_bytes):>14s}  {p.verdict}  ({p.conf or 'defaults'})")
    lines.append("")
    if e.pytorch_cuda_alloc_conf is None:
        lines.append(f"does not fit {_gib(e.device_memory)} under any setting fit tried")
    else:
        lines.append(f"PYTORCH_CUDA_ALLOC_CONF={e.pytorch_cuda_alloc_conf}" +
                     ("   (empty: PyTorch's defaults)" if not e.pytorch_cuda_alloc_conf else ""))
        lines.append(f"smallest device: {_gib(e.min_device_memory)} (the allocator's {_gib(e.min_allocator_memory)}"
                     f" + {_gib(e.outside_bytes)} outside it, estimated)")
    for s in e.advice:
        lines.append(s)
    return "\n".join(lines)


def add_estimated(rec: Recording, capability=(9, 0)):
    """Add the CUDA-only allocations of cuda_table to rec (in place) where the
    job would make them; return the Added entries (the outside ones too)."""
    added = []
    events = rec.events
    names = {e.name for e in cuda_table.TABLE if cuda_table.applies(e, rec.torch_version)}

    def place(name, pick):
        en = cuda_table.entry(name)
        n = en.bytes_for(capability)
        spots = pick()
        # inserted from the last, so earlier indexes stay right
        for i in sorted(spots, reverse=True):
            events.insert(i, Event("alloc", addr=_estimate_addr(name, i), size=n, estimated=name))
        added.append(Added(name, en.kind, n, len(spots), en.what, en.source, en.versions))

    def first(ops, phase):
        def pick():
            for i, e in enumerate(events):
                if e.action == "alloc" and e.op in ops and (_label(e).split()[0] == "backward") == (phase == "b"):
                    return [i]
            return []
        return pick

    if "cublaslt_workspace" in names:
        place("cublaslt_workspace", first(cuda_table.LT_OPS, "f"))
    if "cublas_workspace" in names:
        fwd, bwd = first(cuda_table.GEMM_OPS, "f")(), first(cuda_table.GEMM_OPS, "b")()
        place("cublas_workspace", lambda: fwd + bwd)
    n_stand = sum(1 for e in events if e.estimated == "efficient_attention" and e.action == "alloc")
    if n_stand:
        en = cuda_table.entry("efficient_attention")
        sizes = [e.size for e in events if e.estimated == "efficient_attention" and e.action == "alloc"]
        added.append(Added(en.name, en.kind, sum(sizes) // n_stand, n_stand, en.what, en.source, en.versions))
    if "cuda_context" in names:
        en = cuda_table.entry("cuda_context")
        added.append(Added(en.name, en.kind, en.bytes_for(capability), 1, en.what, en.source, en.versions))
    return tuple(added)


def _estimate_addr(name, i):
    """A synthetic address for an estimated block, apart from the recorder's."""
    return 0x7E0000000000 + (hash(name) & 0xFF) * (1 << 32) + i * (1 << 21)


def _size(device_memory):
    """Bytes of an int or a size string ("80GiB", "141GB": powers of 1024, as galloc reads them)."""
    if isinstance(device_memory, int):
        return device_memory
    s = str(device_memory).strip()
    units = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
             "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30, "T": 1 << 40, "TB": 1 << 40,
             "TIB": 1 << 40}
    num = s.rstrip("KMGTiBkmgtib")
    unit = s[len(num):].upper()
    if unit not in units:
        raise ValueError(f"galloc.estimate: bad device_memory {device_memory!r} (bytes, or a size such as \"80GiB\")")
    return int(float(num) * units[unit])


def _peaks(c):
    return Peaks(c.conf, c.fits, c.verdict, c.peak_requested_bytes, c.peak_allocated_bytes, c.peak_reserved_bytes)


def estimate(step: Callable, *inputs, steps: int = 1, device_memory="80GiB", capability=(9, 0), conf: str = "",
             host: Sequence = (), foreach: Optional[bool] = None, attention: str = "recorded",
             trace: Optional[str] = None,
             cuda_only: bool = True, **kw_inputs) -> Estimate:
    """Record step(*inputs, **kw_inputs) `steps` times on the CPU (galloc.record.record;
    host, foreach and attention are its), add the CUDA-only allocations for a GPU of
    compute capability `capability` (cuda_only=False adds none), and answer
    for a device of device_memory bytes (int or "80GiB") with the job's
    settings conf (PYTORCH_CUDA_ALLOC_CONF syntax, "" PyTorch's defaults).
    trace: where to keep the recording (Recording.write: a snapshot, or a
    text trace when the step calls torch.cuda.empty_cache; else a
    temporary file)."""
    from . import analysis
    total = _size(device_memory)
    capability = tuple(int(x) for x in capability)
    rec = record(step, *inputs, steps=steps, host=host, foreach=foreach, attention=attention, **kw_inputs)
    mine = [e for e in rec.events if e.action == "alloc" and not e.estimated] + rec.prologue
    recorded_n, recorded_b = len(mine), sum(e.size for e in mine)
    added = add_estimated(rec, capability) if cuda_only else ()
    outside = sum(a.bytes * a.count for a in added if a.kind == "outside")
    keep = trace is not None
    if not keep:
        fd, trace = tempfile.mkstemp(prefix="galloc-estimate-", suffix=".pickle")
        os.close(fd)
    try:
        rec.write(trace)
        confs = [conf] + (["expandable_segments:True"] if conf != "expandable_segments:True" else [])
        r = analysis.replay(trace, confs=confs, device_memory=total - outside)
        f = analysis.fit(trace, device_memory=total - outside)
    finally:
        if not keep:
            os.unlink(trace)
    col = r.traces[0].results[0]
    pick = f.picked
    best = None
    if pick is not None:
        best = Peaks(pick.conf, pick.fits, "fits", pick.peak_requested_bytes, pick.peak_allocated_bytes,
                     pick.peak_reserved_bytes)
    advice = tuple(_advice(f))
    min_alloc = f.min_device_memory
    return Estimate(torch_version=rec.torch_version, steps=steps, device_memory=total, capability=capability,
                    recorded=_peaks(col), best=best, pytorch_cuda_alloc_conf=f.winner,
                    min_device_memory=None if min_alloc is None else min_alloc + outside,
                    min_allocator_memory=min_alloc, outside_bytes=outside, advice=advice,
                    recorded_allocations=recorded_n, recorded_bytes=recorded_b, estimated=added,
                    trace=trace if keep else "", fit=f, replay=r)


def _advice(f):
    """fit's answer in sentences: its pick and why, then its caveats."""
    a = f.answer
    out = []
    if a.pick is None:
        out.append("fit: no setting fits this device" +
                   (f"; closest: {f.configurations[a.closest - 1].conf or 'defaults'}" if a.closest else ""))
    elif a.keep_recorded:
        out.append("fit: keep PyTorch's settings: they fit and no setting saves enough to change them")
    else:
        out.append(f"fit: use {f.winner or 'defaults'}: saves {a.saving:.1%} of the peak reserved")
    if a.cliff:
        out.append(f"fit: a neighbouring setting is much worse: {f.configurations[a.cliff - 1].conf}")
    out += [f"caveat: {c}" for c in f.caveats]
    return out


def _load_step(spec):
    """SCRIPT[:FUNCTION] -> (step, inputs): FUNCTION (default galloc_step) of
    the script returns the step callable, or (callable, inputs tuple)."""
    path, _, name = spec.partition(":")
    if not os.path.isfile(path):
        raise SystemExit(f"galloc estimate: no such script {path!r}")
    ns = runpy.run_path(path, run_name="galloc_estimate")
    fn = ns.get(name or "galloc_step")
    if not callable(fn):
        raise SystemExit(f"galloc estimate: {path} defines no function {name or 'galloc_step'}() "
                         f"(it returns the step, or (step, inputs))")
    got = fn()
    if callable(got):
        return got, ()
    if isinstance(got, tuple) and len(got) == 2 and callable(got[0]):
        return got[0], tuple(got[1])
    raise SystemExit(f"galloc estimate: {name or 'galloc_step'}() returned {type(got).__name__}, "
                     f"not a step callable or (step, inputs)")


def main(argv):
    """`python -m galloc estimate SCRIPT[:FUNCTION] [options]`: exit 0 when
    the job fits the device under some setting, 1 when not, 2 on bad usage."""
    ap = argparse.ArgumentParser(prog="galloc estimate", description=__doc__.split("\n\n")[0])
    ap.add_argument("script", help="SCRIPT[:FUNCTION]; FUNCTION (default galloc_step) returns the step")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--device-memory", default="80GiB")
    ap.add_argument("--capability", default="9.0", help="the GPU's compute capability (9.0: H100, H200)")
    ap.add_argument("--conf", default="", help="the job's PYTORCH_CUDA_ALLOC_CONF")
    ap.add_argument("--attention", default="recorded", choices=("recorded", "torch2-efficient"))
    ap.add_argument("--trace", default=None, help="keep the recording as this snapshot pickle")
    ap.add_argument("--json", action="store_true")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:
        return 2 if e.code else 0
    try:
        cap = tuple(int(x) for x in args.capability.split("."))
        step, inputs = _load_step(args.script)
        e = estimate(step, *inputs, steps=args.steps, device_memory=args.device_memory, capability=cap,
                     conf=args.conf, trace=args.trace, attention=args.attention)
    except (SystemExit, ValueError, RuntimeError) as err:
        print(str(err), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(e.to_json(), indent=1))
    else:
        print(report(e))
    return 0 if e.pytorch_cuda_alloc_conf is not None else 1

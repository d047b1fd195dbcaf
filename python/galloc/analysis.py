"""Trace analysis from Python: galloc.replay, galloc.fit, galloc.load_trace.

    import galloc
    r = galloc.replay("examples/fragmentation.trace", confs=["", "expandable_segments:True"])
    r["defaults"].ooms[0].event                 # 1601
    f = galloc.fit("examples/fit/load_order.trace")
    f.winner                                    # "expandable_segments:True"

These run the galloc command's own engine (libgalloc_tools.so, tools/lib:
the command's entry called in this process with --json), so every figure is
the one `galloc replay --json` / `galloc fit --json` prints; the results are
that document as dataclasses, the document itself in .raw: verdicts, fits,
the answer and the caveats are the command's, never recomputed here. Each
trace is described as every command describes it (UnitInfo: its device
size and where that comes from, its cap, its start), so galloc.load_trace,
galloc.replay and galloc.fit say the same about the same file. Bad usage or input
(the command's exit status 2) raises a galloc.GallocError subclass with the
command's message, in the words of the Python call: arguments are checked
here first, and an option the command's message names is written as the
keyword argument that sets it (_KEYWORDS). Calls are serialized inside the library; run them in
processes (galloc.fit in a process pool, or Dask: examples/dask/) for
parallelism across traces.
"""
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Tuple, Union

from . import _native, _tools
from .errors import error

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class OOM:
    """One out-of-memory point of a replay: event is the 0-based replay
    event index, line where the trace file has it, message PyTorch's."""
    event: int
    line: int
    size: int
    message: str
    oom_class: str                # "fragmentation" or "genuine"
    allocated_bytes: int
    reserved_bytes: int
    annotation: Optional[str]
    expected: bool                # the traced run hit it too


@dataclass(frozen=True)
class Cap:
    """A memory-fraction cap a unit's trace shows: capped_ooms of its traced
    OOMs came with room on the device, so a fraction refused them.
    Snapshots do not record the fraction, so the cap is known as a range
    [low_bytes, high_bytes) of what the allocator could reserve (inferred),
    or not at all (why says why; the unit is then replayed without one).
    Every configuration is replayed under the range from the first event."""
    capped_ooms: int
    inferred: bool
    low_bytes: Optional[int]      # None when not inferred
    high_bytes: Optional[int]
    why: Optional[str]            # not inferred: why the range is unknown

    @property
    def range(self):
        """(low_bytes, high_bytes): the cap lay in [low, high); None when not inferred."""
        return (self.low_bytes, self.high_bytes) if self.inferred else None


@dataclass(frozen=True)
class CapPart:
    """One outcome of a configuration over part of its unit's cap range:
    caps in [cap_from_bytes, cap_to_bytes) give it. figures marks the part
    (the widest) whose cap the configuration's figures were replayed at."""
    cap_from_bytes: int
    cap_to_bytes: int
    fits: bool
    ooms: int
    first_oom_event: Optional[int]
    peak_reserved_bytes: int
    figures: bool


@dataclass(frozen=True)
class UnitInfo:
    """What every command says about one loaded unit (a trace file, or one
    device of a snapshot or profiler trace) before replaying it: the same
    members in galloc.load_trace, galloc.replay and galloc.fit (the JSON of
    tools/report/unit.c). TraceUnit, TraceResult and FitUnit carry them."""
    file: str                     # the file, as given
    unit: str                     # "" or "device 1"
    format: str                   # "rmm", "torch", "galloc", "umpire", "kineto"
    device: int                   # the device index the trace recorded (0 without one)
    events: int
    device_memory: int            # bytes the allocator can use: the simulated device's size
    device_memory_source: str     # where that comes from: "default" (80 GiB), "option" (device_memory=),
                                  # "header", "device_properties" or "oom_entries" (a snapshot's lower bound)
    recorded_memory: int          # what the trace itself says, 0 if nothing
    reserve: int                  # memory outside the allocator taken off a total
    settings_from_snapshot: Optional[str]   # the settings of the unit's own run (a configuration string,
                                            # "" = PyTorch's defaults); None for a trace that is not a snapshot
    settings_recorded: bool       # the snapshot recorded them (an older one: PyTorch's defaults assumed)
    recorded_pytorch_cuda_alloc_conf: Optional[str]  # their PYTORCH_CUDA_ALLOC_CONF text, when recorded
    start: str                    # the state before the first event: "events" (the events say all),
                                  # "seeded" (from the trace's totals) or "unknown" (may start mid-run)
    start_info: dict = field(repr=False)    # the JSON's whole "start" object (figures, free matching)
    seeded: Optional[dict]        # a mid-run snapshot whose state at its first entry was rebuilt:
                                  # {"segments", "live_blocks"}; None otherwise
    seed_error: Optional[str]     # a mid-run snapshot whose state could not be rebuilt: why
    cap: Optional[Cap]            # the memory-fraction cap its trace shows; None when it shows none
    skipped_entries: int          # entries not replayed (segment records, other events)
    prologue_allocs: int          # blocks live before the first entry, allocated first
    tag_events: int
    sleep_events: int


def _cap(c):
    """The JSON's "cap" object as a Cap, or None when the trace shows none."""
    if not c or not c.get("capped_ooms"):
        return None
    return Cap(capped_ooms=c["capped_ooms"], inferred=c["inferred"], low_bytes=c["low_bytes"],
               high_bytes=c["high_bytes"], why=c["why"])


def _unit_info(u):
    """The UnitInfo members of one unit's JSON (a trace of galloc replay or
    galloc fit, a unit of galloc.load_trace) as keyword arguments. A trace
    that failed to load has only file, unit and format: the rest are empty."""
    start = u.get("start") or {}
    return dict(file=u.get("file", ""), unit=u.get("unit", ""), format=u.get("format", ""),
                device=u.get("device", 0), events=u.get("events", 0), device_memory=u.get("device_memory", 0),
                device_memory_source=u.get("device_memory_source", ""), recorded_memory=u.get("recorded_memory", 0),
                reserve=u.get("reserve", 0), settings_from_snapshot=u.get("settings_from_snapshot"),
                settings_recorded=u.get("settings_recorded", False),
                recorded_pytorch_cuda_alloc_conf=u.get("recorded_pytorch_cuda_alloc_conf"),
                start=start.get("kind", ""), start_info=start, seeded=u.get("seeded"),
                seed_error=u.get("seed_error"), cap=_cap(u.get("cap")),
                skipped_entries=u.get("skipped_entries", 0), prologue_allocs=u.get("prologue_allocs", 0),
                tag_events=u.get("tag_events", 0), sleep_events=u.get("sleep_events", 0))


@dataclass(frozen=True)
class ConfigResult:
    """One configuration (one column of galloc replay) of one trace."""
    conf: str                     # the configuration string ("" = PyTorch's defaults); for the recorded
                                  # column, the settings the snapshot recorded
    label: str                    # "recorded" (a snapshot's own run), "defaults" or the conf
    recorded: bool                # the run as recorded: its settings, segments at the recorded addresses
    verdict: str                  # "fits", "OOM (fragmentation)", "OOM (genuine)", "error", ...
    fits: bool                    # no OOM (for a capped unit: under every cap in its range)
    depends_on_cap: bool          # fits under part of the unit's cap range only
    cap_bytes: Optional[int]      # the cap the figures were replayed under, None without one
    cap_parts: Tuple[CapPart, ...]  # the outcomes over the unit's cap range, () without one
    peak_requested_bytes: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    ooms_total: int
    expected_ooms: int            # the traced run's OOM points met ...
    expected_ooms_avoided: int    # ... of which this configuration could allocate
    ooms: Tuple[OOM, ...]         # the first ones, as the command lists them
    events: int
    create_error: Optional[str]   # the configuration could not be made
    memory_stats: Optional[dict] = field(repr=False)  # torch.cuda.memory_stats() keys


@dataclass(frozen=True)
class TraceResult(UnitInfo, Mapping):
    """One replayed trace (one device of a snapshot): the unit as every
    command describes it (UnitInfo: device_memory, device_memory_source,
    cap, ...), and a mapping of its configurations' results (ConfigResult)
    by label, in the command's order; a conf string ("" for "defaults") is a
    key too."""
    error: Optional[str]
    results: Tuple[ConfigResult, ...]

    def __getitem__(self, key):
        """The result of a configuration by label or conf string ("defaults"
        or ""); a KeyError lists the labels there are."""
        for r in self.results:
            if key in (r.label, r.conf):
                return r
        raise KeyError(f"{key!r}: no such configuration; the labels are: {', '.join(map(repr, self)) or 'none'}")

    def __iter__(self):
        """The labels, in the command's order."""
        return (r.label for r in self.results)

    def __len__(self):
        """The number of configurations replayed."""
        return len(self.results)


@dataclass(frozen=True)
class ReplayResult(Mapping):
    """galloc replay: every trace, every configuration. exit_status is the
    command's (0 every configuration fits, 1 one does not). Of one trace, it is that
    trace's mapping of results by label (r["defaults"], r.keys(), r.items(),
    `in`, len); of several, those raise ValueError: pick a trace in .traces."""
    exit_status: int
    backend: str
    traces: Tuple[TraceResult, ...]
    messages: str = field(repr=False)
    raw: dict = field(repr=False)

    def _only(self):
        """The only trace, or a ValueError saying how to pick one."""
        if len(self.traces) != 1:
            names = ", ".join(" ".join(p for p in (t.file, t.unit) if p) for t in self.traces)
            raise ValueError(f"{len(self.traces)} traces replayed ({names}): pick one with .traces[i], a mapping "
                             "of that trace's results by label (.traces[0][\"defaults\"], .traces[0].keys())")
        return self.traces[0]

    @property
    def results(self):
        """The configurations of the only trace (a one-trace replay)."""
        return self._only().results

    def __getitem__(self, key):
        """A configuration of the only trace, by label or conf string; a
        KeyError lists the labels there are."""
        return self._only()[key]

    def __iter__(self):
        """The only trace's labels, in the command's order."""
        return iter(self._only())

    def __len__(self):
        """The number of configurations the only trace was replayed under."""
        return len(self._only())

    def keys(self):
        """The only trace's labels (a view), in the command's order."""
        return self._only().keys()

    def values(self):
        """The only trace's results (a view), in the command's order."""
        return self._only().values()

    def items(self):
        """The only trace's (label, result) pairs (a view), in the command's order."""
        return self._only().items()

    def __bool__(self):
        """True: a replay is a result whatever it holds (truth never raises, even for several traces)."""
        return True


@dataclass(frozen=True)
class FitConfig:
    """One ranked configuration of galloc fit: its figures over every unit
    (peaks the max over units, counts their sum), as galloc replay gives
    them for the same configuration."""
    rank: int
    conf: str
    stage: str                        # "recorded" (the job's own run), "grid" or "refine"
    recorded: bool                    # the job's own run: its recorded settings at the recorded addresses
    fits: bool
    depends_on_cap: bool              # fits under part of a capped unit's range only
    error: Optional[str]
    peak_reserved_bytes: int
    peak_allocated_bytes: int
    peak_requested_bytes: int
    ooms_total: int
    num_device_alloc: int
    num_device_free: int
    num_alloc_retries: int
    expected_ooms: int
    expected_ooms_avoided: int
    fragmentation_at_peak: float
    min_device_memory: Optional[int]  # the smallest memory it fits (a device, or under a cap the cap), when searched
    first_oom: Optional[dict]         # {"trace", "event", "size", "class", ...} when it does not fit


@dataclass(frozen=True)
class FitAnswer:
    """The answer galloc fit gives, as its JSON has it: each configuration
    by its rank in FitResult.configurations (1-based), None when there is
    none."""
    pick: Optional[int]               # the configuration to use (None: none fits)
    keep_recorded: bool               # the recorded settings fit and nothing saves enough to change them
    saving: float                     # the best's saving over the recorded run, a fraction of its peak reserved
    best: Optional[int]               # the top-ranked fitting configuration
    recorded: Optional[int]           # the job's own run (a snapshot's recorded settings)
    closest: Optional[int]            # nothing fits: the one that gets furthest
    cliff: Optional[int]              # a neighbour of pick that is much worse
    smaller: Optional[int]            # another that fits a smaller memory than pick
    min_device_memory_is: str         # what min_device_memory measures: "device", or "cap" for a capped job


@dataclass(frozen=True)
class FitUnit(UnitInfo):
    """One trace of a galloc fit job (UnitInfo), with the label the report
    names it by."""
    label: str


@dataclass(frozen=True)
class FitResult:
    """galloc fit: the configurations ranked best first. winner is the
    PYTORCH_CUDA_ALLOC_CONF to export (None when none fits); answer says
    which configuration is picked and why; caveats are the sentences every
    answer of this job carries (the report's "Caveats:")."""
    exit_status: int
    traces: Tuple[str, ...]           # the job's traces (labels)
    units: Tuple[FitUnit, ...]        # ... as every command describes them (device, cap, start)
    device_memory: int                # the first unit's
    events: int
    fits: bool
    winner: Optional[str]
    answer: FitAnswer
    caveats: Tuple[str, ...]
    configurations: Tuple[FitConfig, ...]
    seconds: float
    messages: str = field(repr=False)
    raw: dict = field(repr=False)

    @property
    def picked(self):
        """The FitConfig of the answer (answer.pick), None when none fits."""
        return None if self.answer.pick is None else self.configurations[self.answer.pick - 1]

    @property
    def min_device_memory(self):
        """The smallest memory the picked configuration fits (a device's size,
        or for a capped job the cap: answer.min_device_memory_is); None when
        none fits or it was not searched."""
        if self.answer.pick is None:
            return None
        return self.configurations[self.answer.pick - 1].min_device_memory


@dataclass(frozen=True)
class TraceUnit(UnitInfo):
    """One trace of a file (a snapshot or Chrome trace has one per device):
    the unit as every command describes it (UnitInfo) and its events by
    kind."""
    label: str                        # "" or "device 1" (unit)
    allocs: int
    frees: int
    ooms: int
    annotations: int
    other: int


@dataclass(frozen=True)
class TraceInfo:
    """galloc.load_trace: what the command's readers see in a file."""
    file: str
    format: str                   # "rmm", "torch", "galloc", "umpire", "kineto"
    device_memory: int            # the first unit's device: what the allocator can use (its
                                  # units[0].device_memory_source says where the size comes from)
    units: Tuple[TraceUnit, ...]

    @property
    def events(self):
        """The events of every unit."""
        return sum(u.events for u in self.units)

    @property
    def devices(self):
        """The units' labels ("" for a file of one unit, else "device N")."""
        return tuple(u.label for u in self.units)


# The command's options as the keyword arguments that set them: a message of
# the command raised here names what the caller wrote, not a flag it never
# typed. One row per option the Python calls pass.
_KEYWORDS = {
    "--device-memory": "device_memory",
    "--conf": "confs",
    "--format": "format",
    "--backend": "backend",
    "--no-recorded": "recorded=False",
    "--no-seed": "seed=False",
    "--jobs": "jobs",
    "--bisect": "bisect",
    "--max-configs": "max_configs",
}
_FLAG = re.compile(r'(--[a-z][a-z-]*)(?: "([^"]*)")?')


def _python_words(command, text):
    """The command's message as galloc.<command>'s: its name, help(), and
    each option in _KEYWORDS as its keyword (bad --format "x" becomes
    bad format="x", bad --jobs "0" bad jobs=0)."""
    text = text.replace(f"(galloc {command} --help for usage)", f"(help(galloc.{command}) for the arguments)")
    text = text.replace(f"galloc {command}:", f"galloc.{command}:")

    def keyword(m):
        k, value = _KEYWORDS.get(m.group(1)), m.group(2)
        if k is None:
            return m.group(0)
        if value is None:
            return k
        return f"{k}={value}" if value.isdigit() else f'{k}="{value}"'
    return _FLAG.sub(keyword, text)


def _raise(command, paths, messages, doc):
    """The GallocError for exit status 2: the command's message; a
    configuration that could not be made keeps its status (E_CONFIG)."""
    text = "\n".join(line for line in messages.splitlines() if line.strip()) or f"galloc {command}: bad input"
    text = _python_words(command, text)
    names = _native.STATUS_NAMES
    for t in (doc or {}).get("traces", []):
        for r in t.get("results", []) if isinstance(t, dict) else []:
            if r.get("create_status") in names:
                raise error(names.index(r["create_status"]), text)
    missing = [p for p in paths if not os.path.exists(p)]
    raise error(names.index("E_IO" if missing else "E_INVAL"), text)


def _invalid(command, what):
    """The InvalidArgumentError of galloc.<command> for a bad argument value."""
    return error(_native.STATUS_NAMES.index("E_INVAL"), f"galloc.{command}: {what}")


def _count(command, name, value, least):
    """A whole-number argument (an int >= least) as the command's option value."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"galloc.{command}: {name} is an int, not {type(value).__name__}")
    if value < least:
        raise _invalid(command, f"bad {name}={value} (an int >= {least})")
    return str(value)


def _confs(command, confs):
    """confs as a list of configuration strings; one string is refused
    (iterating it would replay one configuration per character)."""
    if isinstance(confs, (str, bytes)):
        raise TypeError(f"galloc.{command}: confs is a list of configuration strings, not one string: "
                        f"confs=[{confs!r}]")
    confs = list(confs or ())
    for c in confs:
        if not isinstance(c, str):
            raise TypeError(f"galloc.{command}: confs holds configuration strings (str), not {type(c).__name__}")
    return confs


def _argv(command, paths, device_memory, fmt, recorded, extra):
    """The command line for galloc <command> with the options every analysis
    takes, each checked first under its Python name; (argv, paths)."""
    if device_memory is not None:
        if isinstance(device_memory, bool) or not isinstance(device_memory, (int, str)):
            raise TypeError(f'galloc.{command}: device_memory is bytes (an int) or a size string such as "80GiB", '
                            f"not {type(device_memory).__name__}")
        if isinstance(device_memory, int) and device_memory <= 0:
            raise _invalid(command, f'bad device_memory={device_memory} (bytes > 0, or a size string such as '
                                    f'"80GiB")')
    if not isinstance(fmt, str):
        raise TypeError(f'galloc.{command}: format is a str ("auto" or a format name), not {type(fmt).__name__}')
    paths = [os.fspath(paths)] if isinstance(paths, (str, os.PathLike)) else [os.fspath(p) for p in paths]
    if not paths:
        raise _invalid(command, "no trace file given")
    argv = [command, "--json"] + extra
    if device_memory is not None:
        argv += ["--device-memory", str(device_memory)]
    if fmt and fmt != "auto":
        argv += ["--format", fmt]
    if not recorded:
        argv.append("--no-recorded")
    # "--" ends the options: a trace named "-x" is still a file.
    return argv + ["--"] + paths, paths


def _document(command, rc, out, messages, paths):
    """The command's JSON document, or the GallocError of its exit status 2."""
    try:
        doc = json.loads(out) if out.strip() else None
    except ValueError:
        doc = None
    if rc == 2 or doc is None:
        _raise(command, paths, messages, doc)
    return doc


def _oom(o):
    """One entry of a column's "ooms" as an OOM."""
    return OOM(event=o["event"], line=o["line"], size=o["size"], message=o["message"], oom_class=o["class"],
               allocated_bytes=o["allocated_bytes"], reserved_bytes=o["reserved_bytes"],
               annotation=o["annotation"], expected=o["expected"])


def _part(p):
    """One entry of a column's "cap_parts" as a CapPart."""
    return CapPart(cap_from_bytes=p["cap_from_bytes"], cap_to_bytes=p["cap_to_bytes"], fits=p["fits"],
                   ooms=p["ooms"], first_oom_event=p["first_oom_event"], peak_reserved_bytes=p["peak_reserved_bytes"],
                   figures=p["figures"])


def _config(r):
    """One column of galloc replay's JSON as a ConfigResult: every verdict
    and figure is the JSON's, none recomputed here."""
    return ConfigResult(conf=r["conf"], label=r["label"], recorded=r["recorded"], verdict=r["verdict"],
                        fits=r["fits"], depends_on_cap=r["depends_on_cap"], cap_bytes=r["cap_bytes"],
                        cap_parts=tuple(_part(p) for p in r["cap_parts"]),
                        peak_requested_bytes=r["peak_requested_bytes"],
                        peak_allocated_bytes=r["peak_allocated_bytes"], peak_reserved_bytes=r["peak_reserved_bytes"],
                        ooms_total=r["ooms_total"], expected_ooms=r["expected_ooms"],
                        expected_ooms_avoided=r["expected_ooms_avoided"], ooms=tuple(_oom(o) for o in r["ooms"]),
                        events=r["events"], create_error=r["create_error"], memory_stats=r["memory_stats"])


def replay(paths: Union[PathLike, Sequence[PathLike]], confs: Sequence[str] = (), device_memory=None,
           backend: Optional[str] = None, format: str = "auto", recorded: bool = True, seed: bool = True,
           progress: Optional[Callable[[float, int], None]] = None) -> ReplayResult:
    """galloc replay: replay one trace or several under each configuration
    string of confs (PYTORCH_CUDA_ALLOC_CONF syntax; none: PyTorch's
    defaults, or a snapshot's recorded settings unless recorded=False) on a
    simulated device of device_memory bytes (int or "80GiB"; default: the
    trace's recorded size, else 80 GiB). progress(fraction, events) is called
    during long replays (fraction -1 when unknown). An OOM is a result, not an
    exception; bad input raises a GallocError subclass, a bad argument
    TypeError or InvalidArgumentError naming its keyword."""
    extra = []
    for c in _confs("replay", confs):
        extra += ["--conf", c]
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"galloc.replay: backend is a str (\"sim\"), not {type(backend).__name__}")
    if backend:
        extra += ["--backend", backend]
    if not seed:
        extra.append("--no-seed")
    argv, paths = _argv("replay", paths, device_memory, format, recorded, extra)
    rc, out, messages = _tools.run(argv, progress)
    doc = _document("replay", rc, out, messages, paths)
    traces = tuple(TraceResult(**_unit_info(t), error=t["error"], results=tuple(_config(r) for r in t["results"]))
                   for t in doc["traces"])
    return ReplayResult(exit_status=rc, backend=doc["backend"], traces=traces, messages=messages, raw=doc)


def fit(paths: Union[PathLike, Sequence[PathLike]], device_memory=None, jobs: Optional[int] = None,
        bisect: Union[int, str] = 10, max_configs: Optional[int] = None, format: str = "auto",
        recorded: bool = True, confs: Sequence[str] = ()) -> FitResult:
    """galloc fit: search the PYTORCH_CUDA_ALLOC_CONF settings under which the
    job fits (several traces are one job: a setting must fit them all), with
    jobs worker threads (default: every CPU), the smallest fitting device
    bisected for the bisect best ("all" for every one). confs: check these
    settings instead of searching, each bisected (`galloc fit --conf`; stage
    "given"). No fitting setting is a result (fits False, winner None); bad
    input raises a GallocError, a bad argument TypeError or
    InvalidArgumentError naming its keyword."""
    if bisect != "all":
        if isinstance(bisect, str):
            raise _invalid("fit", f'bad bisect={bisect!r} (an int >= 0, or "all")')
        bisect = _count("fit", "bisect", bisect, 0)
    extra = ["--bisect", bisect]
    if jobs is not None:
        extra += ["--jobs", _count("fit", "jobs", jobs, 1)]
    if max_configs is not None:
        extra += ["--max-configs", _count("fit", "max_configs", max_configs, 1)]
    for c in _confs("fit", confs):
        extra += ["--conf", c]
    argv, paths = _argv("fit", paths, device_memory, format, recorded, extra)
    if any(os.path.isdir(p) for p in paths):
        raise error(_native.STATUS_NAMES.index("E_INVAL"),
                    "galloc.fit: a folder is a fleet of jobs: use galloc.fit_fleet (one result per trace)")
    rc, out, messages = _tools.run(argv)
    return _fit_result(rc, _document("fit", rc, out, messages, paths), messages)


_FIT_FIGURES = ("peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes", "ooms_total",
                "num_device_alloc", "num_device_free", "num_alloc_retries", "expected_ooms", "expected_ooms_avoided",
                "fragmentation_at_peak", "min_device_memory", "first_oom")


def _fit_result(rc, doc, messages):
    """galloc fit's JSON as a FitResult: fits, the winner, the answer and
    the caveats are the JSON's, none recomputed here."""
    configs = tuple(FitConfig(rank=r["rank"], conf=r["conf"], stage=r["stage"], recorded=r["recorded"],
                              fits=r["fits"], depends_on_cap=r["depends_on_cap"], error=r["error"],
                              **{k: r[k] for k in _FIT_FIGURES})
                    for r in doc["results"])
    a = doc["answer"]
    answer = FitAnswer(pick=a["pick"], keep_recorded=a["keep_recorded"], saving=a["saving"], best=a["best"],
                       recorded=a["recorded"], closest=a["closest"], cliff=a["cliff"], smaller=a["smaller"],
                       min_device_memory_is=a["min_device_memory_is"])
    return FitResult(exit_status=rc, traces=tuple(t["label"] for t in doc["traces"]),
                     units=tuple(FitUnit(**_unit_info(t), label=t["label"]) for t in doc["traces"]),
                     device_memory=doc["device_memory"], events=doc["events"], fits=doc["fits"],
                     winner=doc["pytorch_cuda_alloc_conf"], answer=answer, caveats=tuple(doc["caveats"]),
                     configurations=configs, seconds=doc["seconds"], messages=messages, raw=doc)


def fleet_files(paths: Union[PathLike, Sequence[PathLike]]):
    """The traces of a fleet as `galloc fit FOLDER` takes them: a folder's
    regular files, hidden ones left out, in name order; other paths as given."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    files = []
    for p in map(os.fspath, paths):
        if os.path.isdir(p):
            names = sorted(n for n in os.listdir(p) if not n.startswith(".") and
                           os.path.isfile(os.path.join(p, n)))
            files += [os.path.join(p, n) for n in names]
        else:
            files.append(p)
    return files


def fit_fleet(paths: Union[PathLike, Sequence[PathLike]], client=None, **options):
    """galloc fit over a fleet: each trace (folders expanded by fleet_files)
    fitted on its own; {path: FitResult} in the fleet's order. options are
    galloc.fit's. Without client, galloc.fit on each trace in turn, in this
    process, as `galloc fit FOLDER` does (each search over the worker pool);
    with a Dask
    client (dask.distributed.Client), one galloc.fit task per trace on the
    cluster's workers (examples/dask/fit_fleet.py). A trace with bad input
    raises its GallocError either way."""
    files = fleet_files(paths)
    if not files:
        raise _invalid("fit_fleet", "no trace files in the fleet")
    if client is not None:
        futures = client.map(fit, files, key=[f"galloc-fit-{i}-{os.path.basename(f)}" for i, f in
                                              enumerate(files)], **options)
        return dict(zip(files, client.gather(futures)))
    results = {}
    for f in files:
        results[f] = fit(f, **options)
    return results


def load_trace(path: PathLike, format: str = "auto") -> TraceInfo:
    """Read a trace through the command's readers (every format galloc replay
    reads, detected from the first bytes unless format names one) and count
    its events per unit. Bad input raises a GallocError subclass."""
    path = os.fspath(path)
    if format is not None and not isinstance(format, str):
        raise TypeError(f'galloc.load_trace: format is a str ("auto" or a format name), not {type(format).__name__}')
    rc, out, message = _tools.trace_info(path, format or "auto")
    if rc != 0:
        name = "E_IO" if not os.path.exists(path) else "E_INVAL"
        raise error(_native.STATUS_NAMES.index(name), _python_words("load_trace", message))
    doc = json.loads(out)
    units = tuple(TraceUnit(**_unit_info(u), label=u["label"], allocs=u["allocs"], frees=u["frees"], ooms=u["ooms"],
                            annotations=u["annotations"], other=u["other"]) for u in doc["units"])
    return TraceInfo(file=doc["file"], format=doc["format"], device_memory=doc["device_memory"], units=units)

"""The results of galloc.replay, galloc.fit and galloc.load_trace: the
command's JSON documents (`galloc replay --json`, `galloc fit --json`,
`galloc trace --json`) as frozen dataclasses, every figure as the command
printed it (analysis.py runs the command and builds these)."""
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional, Tuple

from .owners import Owners, _owners


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
    before_first_event: bool = False  # the state the trace starts in does not fit the device: its seeding
                                      # ran out (event 0, nothing replayed; genuine, as every
                                      # configuration starts from it)


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
    device_memory_assumed: bool   # nothing says the size: device_memory is the 80 GiB default
    trace_events: int             # the trace's own events (events less the prologue's blocks)
    device_shown: dict = field(repr=False)  # what the trace shows the device held:
                                  # {"reserved_peak_bytes", "reserved_first_bytes", "reserved_last_bytes",
                                  # "largest_request_bytes"}, each None where it does not say


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
                tag_events=u.get("tag_events", 0), sleep_events=u.get("sleep_events", 0),
                device_memory_assumed=u.get("device_memory_assumed", False),
                trace_events=u.get("trace_events", 0), device_shown=u.get("device_shown") or {})


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
    owners: Optional[Owners] = field(default=None, repr=False)  # who holds the memory (owners.py); None with
                                                                # owners=False


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
    owners: Optional["FitOwners"] = field(default=None, repr=False)  # who holds the memory in the job's own
                                                                      # run and the answer (owners.FitOwners)

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


def _oom(o):
    """One entry of a column's "ooms" as an OOM."""
    return OOM(event=o["event"], line=o["line"], size=o["size"], message=o["message"], oom_class=o["class"],
               allocated_bytes=o["allocated_bytes"], reserved_bytes=o["reserved_bytes"],
               annotation=o["annotation"], expected=o["expected"],
               before_first_event=o.get("before_first_event", False))


def _part(p):
    """One entry of a column's "cap_parts" as a CapPart."""
    return CapPart(cap_from_bytes=p["cap_from_bytes"], cap_to_bytes=p["cap_to_bytes"], fits=p["fits"],
                   ooms=p["ooms"], first_oom_event=p["first_oom_event"], peak_reserved_bytes=p["peak_reserved_bytes"],
                   figures=p["figures"])


def _config(r, owner_sites=None):
    """One column of galloc replay's JSON as a ConfigResult: every verdict
    and figure is the JSON's, none recomputed here. owner_sites: its trace's
    owner sites (owners._owner_sites), which the column's owners refer to."""
    return ConfigResult(conf=r["conf"], label=r["label"], recorded=r["recorded"], verdict=r["verdict"],
                        fits=r["fits"], depends_on_cap=r["depends_on_cap"], cap_bytes=r["cap_bytes"],
                        cap_parts=tuple(_part(p) for p in r["cap_parts"]),
                        peak_requested_bytes=r["peak_requested_bytes"],
                        peak_allocated_bytes=r["peak_allocated_bytes"], peak_reserved_bytes=r["peak_reserved_bytes"],
                        ooms_total=r["ooms_total"], expected_ooms=r["expected_ooms"],
                        expected_ooms_avoided=r["expected_ooms_avoided"], ooms=tuple(_oom(o) for o in r["ooms"]),
                        events=r["events"], create_error=r["create_error"], memory_stats=r["memory_stats"],
                        owners=_owners(r.get("owners"), owner_sites))

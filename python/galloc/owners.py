"""Who holds the memory: the owners of `galloc replay --json` as frozen
dataclasses (ConfigResult.owners; docs/owners.md says how a stack becomes a
site and a phase).

    r = galloc.replay("job.pickle")
    o = r["recorded"].owners                      # None with owners=False
    for s in o.peak_reserved.top(5):              # the five sites holding most
        print(s.bytes, s.phase, s.site)           # str(site) is its name
    o.first_oom.request.site                      # what the failed allocation was for
    o.peak_reserved.phases["forward"].bytes

At each moment of a replay that decides whether a job fits (the allocated
peak, the reserved peak, each of the first 16 OOMs) every live block is
counted to the site that allocated it (the code, an autograd node, an op, a
profiler range, an annotation, ...), its phase (forward, backward,
optimizer, other), its stream and pool. Every figure is the command's
(tools/report/owners_json.c, tools/engine/owners.h): nothing is recomputed
here but sums and orderings of those figures. A moment's sites add up to
its allocated_bytes (owners.h's invariant) when Owners.untracked_blocks is
0; otherwise the uncounted blocks' bytes are their requests.

The trace's sites are listed once (Owners.sites, indexed by Site.id) and
shared: every SiteShare, Request and Pin refers to the same Site object.
"""
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple, Union

# The phases, in the command's order (the JSON's, and the order ties go by).
PHASES = ("other", "forward", "backward", "optimizer")


@dataclass(frozen=True)
class Frame:
    """One frame of a site's stack: a Python frame (file, line > 0,
    function), a C++ frame (line 0, file "??" or a source file, name with
    its arguments) or a label (file "", line 0: a record_function range)."""
    file: str
    line: int
    name: str


@dataclass(frozen=True)
class Site:
    """A name a person can act on: the code that allocated
    ("train.py:35 step"), an autograd node ("MulBackward0"), an op
    ("at::_ops::mm"), ...; kind says which ("code", "autograd node", "op",
    "torch", "range", "annotation", "allocator", "thread", "unknown", "none",
    "before the trace", "overflow"). stack is the whole stack of the first
    allocation that named it, innermost first (empty without one)."""
    id: int                       # its index in Owners.sites
    name: str
    kind: str
    stack: Tuple[Frame, ...] = field(repr=False)

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class SiteShare:
    """What one site holds at a moment: its live blocks, over every phase,
    stream and pool they were allocated in."""
    site: Site
    bytes: int                    # the blocks' sizes: its share of the moment's allocated_bytes
    requested_bytes: int          # what they asked for
    blocks: int
    kept_bytes: int               # of them, blocks the trace never frees (weights, optimizer state)
    kept_blocks: int
    before_trace_blocks: int      # of them, blocks live before the trace's first event (age unknown)
    mean_age_events: Optional[float]  # the others' mean age in events, to 0.1; None when all were before the trace
    mean_age_us: Optional[float]  # ... in microseconds, over those with a recorded time; None when none has one
    phases: Dict[str, int] = field(repr=False)  # bytes per phase, every phase of PHASES (0 when none)

    @property
    def phase(self):
        """The phase holding most of its bytes (ties: the first of PHASES),
        as the text report's phase column names it (less its "+" when the
        bytes are in several phases: see .phases)."""
        return max(PHASES, key=lambda p: self.phases.get(p, 0))


@dataclass(frozen=True)
class PhaseShare:
    """The live blocks of one phase at a moment, over every site."""
    phase: str                    # "forward", "backward", "optimizer" or "other"
    bytes: int
    blocks: int


@dataclass(frozen=True)
class StreamShare:
    """The live blocks allocated on one stream at a moment."""
    stream: int                   # the stream as the trace recorded it
    bytes: int
    blocks: int


@dataclass(frozen=True)
class PoolShare:
    """The live blocks of one memory pool at a moment: (0, 0) is the default
    pools, another a graph's or user pool's segment_pool_id."""
    pool: Tuple[int, int]
    bytes: int
    blocks: int


@dataclass(frozen=True)
class Pin:
    """Who keeps a segment with holes from being released: the live bytes
    one (site, phase) has in it."""
    site: Site
    phase: str
    bytes: int


@dataclass(frozen=True)
class SegmentState:
    """One segment at a walked moment (the reserved peak, an OOM), with its
    cached free bytes and the largest holders of its live bytes."""
    address: int
    size: int
    free_bytes: int               # cached free (reusable) bytes
    largest_free_block: int
    pending_free_bytes: int       # freed, waiting on other streams
    allocated_bytes: int          # live blocks' bytes
    blocks: int
    free_blocks: int
    stream: int
    pool: Tuple[int, int]         # segment_pool_id
    expandable: bool
    small: bool                   # a small-pool segment
    pinned_by: Tuple[Pin, ...]    # the (site, phase) pairs holding most of its live bytes (at most 3)


@dataclass(frozen=True)
class Request:
    """An OOM moment's failed allocation: its size and who asked for it
    (site and phase None when its class is unknown)."""
    bytes: int
    site: Optional[Site]
    phase: Optional[str]


@dataclass(frozen=True)
class Moment:
    """The live memory at one moment of a replay, by owner. kind is
    "peak_allocated" (the first event at which the live blocks' bytes reach
    their maximum), "peak_reserved" (the first at which reserved bytes do)
    or "oom" (right after a failed allocation: request says what it was).
    sites hold every site with live blocks, most bytes first."""
    kind: str
    event: Optional[int]          # the 0-based replay event it follows; None: before the first event (seeded)
    line: Optional[int]           # that event's place in the file (a snapshot's device_traces entry, a
                                  # text trace's line), as OOM.line; None with event
    time_us: Optional[int]        # that event's recorded time; None when the trace records none
    allocated_bytes: int          # allocated_bytes.all.current then
    reserved_bytes: int           # reserved_bytes.all.current then
    active_bytes: Optional[int]   # active_bytes.all.current; None at the allocated peak (not read then)
    requested_bytes: Optional[int]  # requested_bytes.all.current; None at the allocated peak
    request: Optional[Request]    # an OOM's failed allocation; None for a peak
    sites: Tuple[SiteShare, ...] = field(repr=False)  # .top(n) for the largest
    phases: Dict[str, PhaseShare] = field(repr=False)  # every phase of PHASES, in that order
    streams: Tuple[StreamShare, ...] = field(repr=False)
    pools: Tuple[PoolShare, ...] = field(repr=False)
    segments: Optional[Tuple[SegmentState, ...]] = field(repr=False)  # most free bytes first; None when not walked
                                                                 # (the allocated peak, or the allocator cannot)
    error: Optional[str] = field(default=None, repr=False)      # the sites could not be listed (host memory)

    TABLE_COLUMNS = ("bytes", "share", "blocks", "kept_bytes", "mean_age_events", "mean_age_us", "phase", "site")

    def top(self, n=10):
        """The n sites holding most bytes (ties: the lower site id), as the
        text report lists them (replay --top N)."""
        return self.sites[:max(n, 0)]

    def share(self, site: Union[Site, str]):
        """The SiteShare of a Site, or of the site with that exact name;
        None when it holds nothing at this moment."""
        for s in self.sites:
            if s.site == site or s.site.name == site:
                return s
        return None

    def by_phase(self):
        """{phase: bytes}, the phase holding most first (ties: PHASES order)."""
        order = sorted(self.phases.values(), key=lambda p: (-p.bytes, PHASES.index(p.phase)))
        return {p.phase: p.bytes for p in order}

    def table(self):
        """The sites as rows of plain values, one tuple per site in the
        order of .sites, columns Moment.TABLE_COLUMNS: share is the
        fraction of allocated_bytes, phase the text report's (with "+" when
        the site's bytes are in several phases), site its name.
        pandas.DataFrame(m.table(), columns=m.TABLE_COLUMNS) makes a frame."""
        rows = []
        for s in self.sites:
            several = sum(1 for b in s.phases.values() if b) > 1
            rows.append((s.bytes, s.bytes / self.allocated_bytes if self.allocated_bytes > 0 else 0.0, s.blocks,
                         s.kept_bytes, s.mean_age_events, s.mean_age_us, s.phase + ("+" if several else ""),
                         s.site.name))
        return tuple(rows)


@dataclass(frozen=True)
class Owners:
    """Who holds the memory in one configuration's replay (ConfigResult.owners):
    the moments that decide whether the job fits, and the trace's sites."""
    keyed_by: str                 # what the sites come from: "recorded stacks", "profiler ranges",
                                  # "annotations", ... or "nothing: the record carries no stacks"
    overflow: bool                # more distinct owners than the index holds: some merged into one site
    sites: Tuple[Site, ...] = field(repr=False)  # the trace's sites, sites[i].id == i
    error: Optional[str] = None   # why the owners are incomplete; None when they are not
    untracked_blocks: int = 0     # allocations whose block size the allocator could not tell (their bytes are
                                  # then their requests); 0 for galloc's own allocator
    t0_us: Optional[int] = None   # the trace's first recorded time (mean ages in us count from it)
    peak_allocated: Optional[Moment] = None   # None when nothing was allocated
    peak_reserved: Optional[Moment] = None
    ooms: Tuple[Moment, ...] = ()  # the first 16 OOMs (ConfigResult.ooms_total counts them all)

    @property
    def first_oom(self):
        """The first OOM's Moment, None when the replay had none."""
        return self.ooms[0] if self.ooms else None

    @property
    def moments(self):
        """Every moment there is: the allocated peak, the reserved peak, the OOMs."""
        return tuple(m for m in (self.peak_allocated, self.peak_reserved) if m is not None) + self.ooms


def _owner_sites(doc):
    """A trace's "owner_sites" object (its sites table) as (keyed_by, overflow,
    sites); None when the trace has none (--no-owners, or nothing replayed)."""
    if not doc:
        return None
    sites = tuple(Site(id=s["id"], name=s["name"], kind=s["kind"],
                       stack=tuple(Frame(file=f["file"], line=f["line"], name=f["name"]) for f in s["stack"]))
                  for s in doc["sites"])
    if any(s.id != i for i, s in enumerate(sites)):
        raise ValueError("galloc: the owners' sites are not listed by id")
    return doc["keyed_by"], doc["overflow"], sites


def _site_share(s, sites):
    return SiteShare(site=sites[s["site"]], bytes=s["bytes"], requested_bytes=s["requested_bytes"],
                     blocks=s["blocks"], kept_bytes=s["kept_bytes"], kept_blocks=s["kept_blocks"],
                     before_trace_blocks=s["before_trace_blocks"], mean_age_events=s["mean_age_events"],
                     mean_age_us=s["mean_age_us"], phases=dict(s["phases"]))


def _segment(s, sites):
    return SegmentState(address=s["address"], size=s["size"], free_bytes=s["free_bytes"],
                   largest_free_block=s["largest_free_block"], pending_free_bytes=s["pending_free_bytes"],
                   allocated_bytes=s["allocated_bytes"], blocks=s["blocks"], free_blocks=s["free_blocks"],
                   stream=s["stream"], pool=tuple(s["pool"]), expandable=s["expandable"], small=s["small"],
                   pinned_by=tuple(Pin(site=sites[p["site"]], phase=p["phase"], bytes=p["bytes"])
                                   for p in s["pinned_by"]))


def _moment(kind, m, sites):
    """One moment of the JSON as a Moment (None stays None: it did not
    happen); kind is where it sits, which its own "kind" must say too."""
    if m is None:
        return None
    if m["kind"] != kind:
        raise ValueError(f"galloc: an owners moment of kind {m['kind']!r} where {kind!r} belongs")
    q = m["request"]
    request = None if q is None else Request(bytes=q["bytes"], site=None if q["site"] is None else sites[q["site"]],
                                             phase=q["phase"])
    segments = m["segments"]
    return Moment(kind=kind, event=m["event"], line=m["line"], time_us=m["time_us"],
                  allocated_bytes=m["allocated_bytes"], reserved_bytes=m["reserved_bytes"],
                  active_bytes=m["active_bytes"], requested_bytes=m["requested_bytes"], request=request,
                  sites=tuple(_site_share(s, sites) for s in m["sites"]),
                  phases={p: PhaseShare(phase=p, bytes=v["bytes"], blocks=v["blocks"])
                          for p, v in m["phases"].items()},
                  streams=tuple(StreamShare(stream=s["stream"], bytes=s["bytes"], blocks=s["blocks"])
                                for s in m["streams"]),
                  pools=tuple(PoolShare(pool=tuple(p["pool"]), bytes=p["bytes"], blocks=p["blocks"])
                              for p in m["pools"]),
                  segments=None if segments is None else tuple(_segment(s, sites) for s in segments),
                  error=m["error"])


def _owners(doc, table):
    """A column's "owners" object as Owners, its sites resolved in table
    (_owner_sites of its trace); None when the column has none."""
    if doc is None or table is None:
        return None
    keyed_by, overflow, sites = table
    return Owners(keyed_by=keyed_by, overflow=overflow, sites=sites, error=doc["error"],
                  untracked_blocks=doc["untracked_blocks"], t0_us=doc["t0_us"],
                  peak_allocated=_moment("peak_allocated", doc["peak_allocated"], sites),
                  peak_reserved=_moment("peak_reserved", doc["peak_reserved"], sites),
                  ooms=tuple(_moment("oom", m, sites) for m in doc["ooms"]))


@dataclass(frozen=True)
class Shortfall:
    """A genuine OOM's shortfall in galloc fit: at event (0-based, of the
    unit-th trace of the job) the live bytes must shrink by deficit_bytes
    (or the request by as much) for the request to fit at that moment."""
    unit: int
    event: int
    deficit_bytes: int


@dataclass(frozen=True)
class FitRunOwners:
    """Who holds the memory in one of galloc fit's two runs replayed again
    with owners: its configuration, each trace's Owners by label, and the
    shortfall where the run dies of a genuine OOM."""
    conf: str
    recorded: bool
    units: Tuple[Tuple[str, Owners], ...]   # (trace label, its owners), in the job's order
    shortfall: Optional[Shortfall]

    def __getitem__(self, label):
        """The Owners of the trace with that label; KeyError lists the labels."""
        for name, owners in self.units:
            if name == label:
                return owners
        raise KeyError(f"{label!r}: the traces are {', '.join(repr(n) for n, _ in self.units)}")


@dataclass(frozen=True)
class FitOwners:
    """galloc fit's owners (FitResult.owners): the job's own run (its
    recorded settings, else PyTorch's defaults) and the answer (the pick,
    else the closest; None when it is the own run)."""
    own: Optional[FitRunOwners]
    answer: Optional[FitRunOwners]


def _fit_owners(doc):
    """galloc fit's "owners" object as FitOwners (None: --no-owners)."""
    if doc is None:
        return None
    tables = [_owner_sites(t) for t in doc["sites"]]

    def run(r):
        if r is None:
            return None
        q = r["shrink"]
        return FitRunOwners(conf=r["conf"], recorded=r["recorded"],
                            units=tuple((u["label"], _owners(u["owners"], tables[i]))
                                        for i, u in enumerate(r["units"])),
                            shortfall=None if q is None else Shortfall(unit=q["unit"], event=q["event"],
                                                                       deficit_bytes=q["deficit_bytes"]))
    return FitOwners(own=run(doc["own"]), answer=run(doc["answer"]))

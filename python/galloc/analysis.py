"""Trace analysis from Python: galloc.replay, galloc.fit, galloc.load_trace.

    import galloc
    r = galloc.replay("examples/fragmentation.trace", confs=["", "expandable_segments:True"])
    r["defaults"].ooms[0].event                 # 1601
    f = galloc.fit("examples/fit/load_order.trace")
    f.winner                                    # "expandable_segments:True"

These run the galloc command's own engine (libgalloc_tools.so, tools/lib:
the command's entry called in this process with --json), so every figure is
the one `galloc replay --json` / `galloc fit --json` prints; the results are
that document as dataclasses (results.py), the document itself in .raw: verdicts, fits,
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
from typing import Callable, Optional, Sequence, Union

from . import _native, _tools
from .errors import error
from .owners import _fit_owners, _owner_sites
from .results import (FitAnswer, FitConfig, FitResult, FitUnit, ReplayResult, TraceInfo, TraceResult, TraceUnit,
                      _config, _unit_info)

PathLike = Union[str, "os.PathLike[str]"]


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
    "--no-owners": "owners=False",
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
    doc = doc or {}
    results = [r for t in doc.get("traces", []) if isinstance(t, dict) for r in t.get("results", [])]
    for r in results + list(doc.get("results", [])):  # replay's columns, fit's rows
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


def replay(paths: Union[PathLike, Sequence[PathLike]], confs: Sequence[str] = (), device_memory=None,
           backend: Optional[str] = None, format: str = "auto", recorded: bool = True, seed: bool = True,
           progress: Optional[Callable[[float, int], None]] = None, owners: bool = True) -> ReplayResult:
    """galloc replay: replay one trace or several under each configuration
    string of confs (PYTORCH_CUDA_ALLOC_CONF syntax; none: PyTorch's
    defaults, or a snapshot's recorded settings unless recorded=False) on a
    simulated device of device_memory bytes (int or "80GiB"; default: the
    trace's recorded size, else 80 GiB). progress(fraction, events) is called
    during long replays (fraction -1 when unknown). Each result's owners say
    who holds the memory at its peaks and OOMs (galloc.Owners);
    owners=False replays faster without them (owners None). An OOM is a
    result, not an exception; bad input raises a GallocError subclass, a bad
    argument TypeError or InvalidArgumentError naming its keyword."""
    extra = []
    for c in _confs("replay", confs):
        extra += ["--conf", c]
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"galloc.replay: backend is a str (\"sim\"), not {type(backend).__name__}")
    if backend:
        extra += ["--backend", backend]
    if not seed:
        extra.append("--no-seed")
    if not owners:
        extra.append("--no-owners")
    argv, paths = _argv("replay", paths, device_memory, format, recorded, extra)
    rc, out, messages = _tools.run(argv, progress)
    doc = _document("replay", rc, out, messages, paths)
    traces = tuple(_trace(t) for t in doc["traces"])
    return ReplayResult(exit_status=rc, backend=doc["backend"], traces=traces, messages=messages, raw=doc)


def _trace(t):
    """One trace of galloc replay's JSON as a TraceResult, its columns'
    owners resolved in the trace's sites (listed once, shared by them)."""
    owner_sites = _owner_sites(t.get("owner_sites"))
    return TraceResult(**_unit_info(t), error=t["error"],
                       results=tuple(_config(r, owner_sites) for r in t["results"]))


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
                     configurations=configs, seconds=doc["seconds"], messages=messages, raw=doc,
                     owners=_fit_owners(doc.get("owners")))


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

"""Record a PyTorch job's device allocations on the CPU, without a GPU.

    import galloc.record
    rec = galloc.record.record(step, batch, steps=3)   # runs step(batch) three times on the CPU
    rec.write_snapshot("job.pickle")                   # a PyTorch snapshot galloc replays like any other
    rec.write_text("job.trace")                        # or galloc's own text trace

What is recorded (docs/estimate.md): every tensor storage an operator
creates while the step runs, with its size in bytes (the storage's nbytes:
what PyTorch asks of its CUDA caching allocator for the same tensor; the
replay rounds it as that allocator does), the stream (0: the recorder sees
no streams), the Python frames that made it, and the moment the storage dies.
Storages, not tensor objects: a view shares its base's storage and is no
allocation; a tensor autograd saved for backward keeps its storage until
backward releases it, because the recorder watches the storage itself
through a weak reference to PyTorch's StorageImpl (StorageWeakRef), never a
Python tensor object.

How: a TorchDispatchMode (torch.utils._python_dispatch) sees every operator
below autograd, forward, backward and optimizer alike, on torch 1.13 and 2.x.
Before and after each operator the recorder asks which storages it watches
have expired; those are freed at that point, in the order they were made.
A storage that existed before the recording and that an operator reads
(weights, gradients, optimizer state) was on the device before the step: it
is allocated before the first event (a frame "live before the recording")
and freed if it dies during the recording. The step's inputs (the tensors
passed to record(), at any depth of lists, tuples and dicts) and the tensors
named in host= are left out: they are the host's, as a data loader's batch is.

Not recorded (the CPU does not show them): an operator's temporaries that
it frees before it returns (on a GPU, CUDA kernels have their own), and
the CUDA-only allocations of galloc/cuda_table.py, which estimate() adds
and reports as estimated.
"""
import contextlib
import itertools
import os
import pickle
import re
import sys
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

# Frames of the recorder itself and of the dispatch machinery are not the
# job's: they are cut from every stack.
_OWN_FILES = (os.path.abspath(__file__), os.path.join("torch", "utils", "_python_dispatch.py"),
              os.path.join("torch", "_ops.py"))
BEFORE = "live before the recording"
# Synthetic addresses: one 2 MiB-aligned slot per storage, so that ids never
# collide and read as pointers in a snapshot viewer.
_ADDR_BASE = 0x7F0000000000
_ADDR_STEP = 1 << 21


@dataclass
class Event:
    """One event of the recording: an allocation, a free or a marker."""
    action: str                      # "alloc", "free", "annotate" or "empty_cache"
    addr: int = 0                    # the storage's synthetic address (alloc, free)
    size: int = 0                    # bytes (alloc, free)
    op: str = ""                     # the operator that made the storage ("aten::mm")
    frames: tuple = ()               # ((file, line, function), ...), innermost first
    text: str = ""                   # annotate: the marker's text
    estimated: str = ""              # the cuda_table entry that added it; "" when recorded


@dataclass
class Recording:
    """What record() saw: the events in order, the allocations live before
    the first event (prologue) and the figures of the recording itself."""
    events: list = field(default_factory=list)
    prologue: list = field(default_factory=list)
    torch_version: str = ""
    steps: int = 0
    ops: int = 0                     # operators dispatched
    op_log: list = field(default_factory=list)  # (operator, net before, after, host_net before, after): _Recorder

    def live_bytes(self):
        """(after-event live bytes, peak live bytes) over prologue + events,
        from the recorded sizes (not rounded)."""
        live = sum(e.size for e in self.prologue)
        peak = live
        series = []
        for e in self.events:
            if e.action == "alloc":
                live += e.size
            elif e.action == "free":
                live -= e.size
            else:
                continue
            peak = max(peak, live)
            series.append(live)
        return series, peak

    def snapshot(self):
        """The recording as a PyTorch memory snapshot (the dict that
        torch.cuda.memory._snapshot() returns): one device trace of alloc,
        free_requested + free_completed and annotate entries, each
        allocation with its frames; no segments (the replay recomputes
        them) and no allocator_settings (the settings are the replay's)."""
        trace = []
        t = 0
        for e in itertools.chain(self.prologue, self.events):
            t += 1
            if e.action == "alloc":
                trace.append({"action": "alloc", "addr": e.addr, "size": e.size, "stream": 0, "time_us": t,
                              "frames": _frames(e)})
            elif e.action == "empty_cache":
                raise ValueError("galloc.record: a snapshot cannot hold empty_cache (PyTorch's snapshots "
                                 "record none): write_text keeps it, write() picks it")
            elif e.action == "free":
                for action in ("free_requested", "free_completed"):
                    trace.append({"action": action, "addr": e.addr, "size": e.size, "stream": 0, "time_us": t,
                                  "frames": []})
            else:
                trace.append({"action": "annotate", "addr": 0, "size": 0, "stream": 0, "time_us": t,
                              "user_metadata": e.text, "frames": []})
        return {"segments": [], "device_traces": [trace]}

    def write_snapshot(self, path):
        """Write snapshot() as a pickle (protocol 4, plain data only)."""
        with open(path, "wb") as f:
            pickle.dump(self.snapshot(), f, protocol=4)

    def has_empty_cache(self):
        return any(e.action == "empty_cache" for e in self.events)

    def write(self, path):
        """Write the recording in the format that holds all of it: a snapshot
        (the frames of each allocation: galloc's owners name the line), or
        the text trace where the step called torch.cuda.empty_cache(), which
        a snapshot cannot hold. Returns "snapshot" or "text"."""
        if self.has_empty_cache():
            self.write_text(path)
            return "text"
        self.write_snapshot(path)
        return "snapshot"

    def write_text(self, path, device_memory=None):
        """Write galloc's text trace (docs/trace-format.md). Its only stack is
        the last annotation, so each allocation is preceded by one naming its
        phase and site when they change ("forward train.py:35 step")."""
        with open(path, "w") as f:
            f.write("galloc-trace 1" + (f" device_memory {device_memory}" if device_memory else "") + "\n")
            last = None
            for e in itertools.chain(self.prologue, self.events):
                if e.action == "alloc":
                    label = _label(e)
                    if label != last:
                        f.write(f"annotate {label}\n")
                        last = label
                    f.write(f"alloc {e.addr:#x} {e.size}\n")
                elif e.action == "free":
                    f.write(f"free {e.addr:#x}\n")
                elif e.action == "empty_cache":
                    f.write("empty_cache\n")
                else:
                    f.write(f"annotate {e.text}\n")
                    last = e.text


def _frames(e):
    """An event's frames as a snapshot's: innermost first, the operator as
    a label after the Python frames' innermost (a range "aten::mm"), and the
    estimate's table entry as a label where the event is estimated."""
    out = [{"filename": f, "line": n, "name": fn} for f, n, fn in e.frames]
    if e.op:
        out.insert(0, {"filename": "", "line": 0, "name": e.op})
    if e.estimated:
        out.append({"filename": "", "line": 0, "name": "galloc estimate: " + e.estimated})
    return out


def _phase(frames):
    """The phase of a stack as galloc's owners read Python frames
    (docs/owners.md, "The phase"): backward, optimizer, forward or other."""
    phases = set()
    for f, _, fn in frames:
        p = f.replace("\\", "/")
        if (p.endswith("autograd/__init__.py") and fn in ("backward", "grad")) or \
                (p.endswith("torch/_tensor.py") and fn == "backward") or \
                (p.endswith("utils/checkpoint.py") and fn in ("backward", "unpack_hook", "recompute_fn")):
            phases.add("backward")
        elif "/optim/" in p or (p.endswith("nn/modules/module.py") and fn == "zero_grad"):
            phases.add("optimizer")
        elif p.endswith("nn/modules/module.py") and fn in ("_call_impl", "_wrapped_call_impl"):
            phases.add("forward")
    for p in ("backward", "optimizer", "forward"):
        if p in phases:
            return p
    return "other"


def _label(e):
    """The text trace's annotation for an allocation: phase, then the
    innermost frame outside torch, else the operator."""
    if e.estimated:
        return "other estimated " + e.estimated
    if not e.frames:
        return "other " + (e.op or BEFORE)
    user = next((f for f in e.frames if "/torch/" not in f[0].replace("\\", "/")), None)
    where = f"{user[0]}:{user[1]} {user[2]}" if user else e.op
    return f"{_phase(e.frames)} {where}"


def _storage(torch, t):
    """The tensor's storage (untyped on torch >= 2), or None where it has
    none (sparse, a tensor subclass without one). Meta tensors have
    storages with sizes and no data: a step on the meta device is recorded
    as on the CPU, without the arithmetic."""
    try:
        if t.is_sparse:
            return None
        return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()._storage
    except (RuntimeError, NotImplementedError, AttributeError):
        return None


def _check_torch(torch):
    """The recorder's needs: TorchDispatchMode and StorageWeakRef (torch >= 1.13)."""
    version = tuple(int(x) for x in re.findall(r"\d+", torch.__version__)[:2])
    if version < (1, 13):
        raise RuntimeError(f"galloc.record needs torch >= 1.13 (TorchDispatchMode and StorageWeakRef); "
                           f"torch {torch.__version__} is older")
    try:
        from torch.utils._python_dispatch import TorchDispatchMode  # noqa: F401
        from torch.multiprocessing.reductions import StorageWeakRef  # noqa: F401
    except ImportError as e:
        raise RuntimeError(f"galloc.record needs torch >= 1.13 (TorchDispatchMode and StorageWeakRef); "
                           f"torch {torch.__version__} has not: {e}") from None


class _Recorder:
    """The dispatch mode's state: the storages watched and the events.

    Every storage the recorder meets is watched through a StorageWeakRef
    (which also keeps its StorageImpl address from being reused while
    watched, so the address is its key) in one of two maps: live (recorded:
    on the device) or host (left out). net and host_net count the bytes
    allocated minus freed since the recording began in each, the storages
    live before it counting only their frees, as the CPU allocator's
    profiler counts them; the tests compare net + host_net with it."""

    def __init__(self, torch, rec, skip, before, stacks, on_op=None):
        from torch.multiprocessing.reductions import StorageWeakRef
        self.torch = torch
        self.weak = StorageWeakRef
        self.rec = rec
        self.skip = skip             # StorageImpl addresses left out: the inputs and host=
        self.before = before         # address -> StorageWeakRef of each storage live when the recording began
                                     # (the reference keeps the address from reuse by a new storage)
        self.stacks = stacks
        self.live = {}               # address -> (StorageWeakRef, Event): recorded, not yet freed
        self.host = {}               # address -> (StorageWeakRef, bytes, made during the recording)
        self.addr = itertools.count()
        self.net = 0                 # recorded bytes allocated minus freed (the prologue's only freed)
        self.host_net = 0            # the same for the storages left out
        self.on_op = on_op           # on_op(i, "before" | "after"): the tests' probe at op_log's two points
        self.paused = 0              # > 0 inside unrecorded(): operators run unseen
        self.label = ""              # inside estimated(name): the name the allocations carry

    def new_addr(self):
        return _ADDR_BASE + next(self.addr) * _ADDR_STEP

    def reap(self):
        """Free the watched storages that have died, oldest first."""
        dead = [k for k, (w, _) in self.live.items() if w.expired()]
        for k in dead:
            _, a = self.live.pop(k)
            self.net -= a.size
            self.rec.events.append(Event("free", addr=a.addr, size=a.size))
        for k in [k for k, v in self.host.items() if v[0].expired()]:
            self.host_net -= self.host.pop(k)[1]

    def stack(self):
        if not self.stacks:
            return ()
        out = []
        for fs in reversed(traceback.extract_stack()):
            if fs.filename.endswith(_OWN_FILES) or fs.filename == __file__:
                continue
            out.append((fs.filename, fs.lineno or 0, fs.name))
        return tuple(out)

    def watch(self, t, op):
        """Meet tensor t's storage: as an operator's output (op given) or
        as an input (op None)."""
        s = _storage(self.torch, t)
        if s is None:
            return
        key = s._cdata
        if key in self.live or key in self.host:
            return
        n = s.nbytes()
        old = key in self.before
        if op is None and (key in self.skip or t.dim() == 0):
            # left out: an input, host=, or a 0-dim tensor no operator made
            # (a Python number PyTorch wrapped, a CPU scalar such as Adam's
            # step): the host's memory, not the device's
            self.host[key] = (self.weak(s), n, not old)
            if not old:
                self.host_net += n
            return
        if n == 0:
            return  # PyTorch's CUDA allocator hands out no memory for 0 bytes
        if op is None and old:
            e = Event("alloc", addr=self.new_addr(), size=n, op=BEFORE)
            self.rec.prologue.append(e)
        else:
            # an operator's output, or a storage made during the recording
            # outside any operator (torch.tensor(data), from_numpy)
            e = Event("alloc", addr=self.new_addr(), size=n, op=op or "made outside an operator",
                      frames=self.stack(), estimated=self.label)
            self.rec.events.append(e)
            self.net += n
        self.live[key] = (self.weak(s), e)

    def dispatch(self, func, args, kwargs):
        from torch.utils._pytree import tree_flatten
        Tensor = self.torch.Tensor
        if self.paused:
            return func(*args, **kwargs)
        self.reap()
        for t in tree_flatten((args, kwargs))[0]:
            if isinstance(t, Tensor):
                self.watch(t, None)
        # A Python number passed where the schema takes a Tensor is a 0-dim
        # CPU tensor PyTorch made for the call (a wrapped number) and hands
        # the mode as the number: host memory, live across the call
        wrapped = _wrapped_bytes(func, args, kwargs)
        before, host_before = self.net, self.host_net + wrapped
        if self.on_op is not None:
            self.on_op(len(self.rec.op_log), "before")
        op = _op_name(func)
        try:
            out = func(*args, **kwargs)
        except NotImplementedError as err:
            out = _foreach_on_meta(self.torch, op, args, kwargs, err)
        self.rec.ops += 1
        # record_function's handle (profiler::_record_function_enter, torch
        # 1.13) is a tensor whose data is the profiler's object, no memory
        # of the allocator: the host's, never the device's
        for t in tree_flatten(out)[0] if not op.startswith("profiler::") else ():
            if isinstance(t, Tensor):
                self.watch(t, op)
        self.reap()
        if self.on_op is not None:
            self.on_op(len(self.rec.op_log), "after")
        self.rec.op_log.append((op, before, self.net, host_before, self.host_net + wrapped))
        return out


# Bytes of the 0-dim tensor PyTorch wraps a Python number in: double, int64, bool, complex128.
_WRAPPED = ((bool, 1), (int, 8), (float, 8), (complex, 16))


def _wrapped_bytes(func, args, kwargs):
    """The bytes of the wrapped numbers of a call (_Recorder.dispatch)."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return 0
    n = 0
    for i, a in enumerate(schema.arguments):
        v = args[i] if i < len(args) else kwargs.get(a.name)
        if str(a.type).rstrip("?") != "Tensor":
            continue
        for kind, size in _WRAPPED:
            if isinstance(v, kind):
                n += size
                break
    return n


def _foreach_on_meta(torch, op, args, kwargs, err):
    """A foreach operator (aten::_foreach_mul_ and the like) on meta tensors,
    which torch 1.13 has no meta kernels for: the operator on each element,
    so the outputs (one per element, all live at once) are those the foreach
    kernel makes. Anything else raises err, the operator's own error."""
    base = op[len("aten::_foreach_"):]
    first = args[0] if args else None
    if not op.startswith("aten::_foreach_") or not isinstance(first, (list, tuple)) or \
            not all(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in first):
        raise err
    packet = getattr(torch.ops.aten, base)
    outs = [_call_any_overload(packet, [a[i] if isinstance(a, (list, tuple)) else a for a in args], kwargs)
            for i in range(len(first))]
    return None if base.endswith("_") else outs


def _call_any_overload(packet, args, kwargs):
    """packet (torch.ops.aten.mul_) on args under the first overload whose
    schema takes them, each argument by position or, where the schema makes
    it keyword-only (addcmul_'s value), by name."""
    err = None
    for name in packet.overloads():
        fn = getattr(packet, name)
        params = fn._schema.arguments
        if len(args) > len(params):
            continue
        pos = [a for a, p in zip(args, params) if not p.kwarg_only]
        kw = dict(kwargs, **{p.name: a for a, p in zip(args, params) if p.kwarg_only})
        try:
            return fn(*pos, **kw)
        except (RuntimeError, TypeError) as e:
            err = e
    raise err or TypeError(f"no overload of {packet} takes these arguments")


def _op_name(func):
    """aten::mm for the OpOverload aten.mm.default."""
    schema = getattr(func, "_schema", None)
    if schema is not None:
        return schema.name
    return str(func)


_ACTIVE = []  # the _Recorder of the record() running, innermost last


@contextlib.contextmanager
def unrecorded():
    """Operators run inside are not recorded (a stand-in's arithmetic:
    kernels.py); nothing when no recording runs."""
    r = _ACTIVE[-1] if _ACTIVE else None
    if r is not None:
        r.paused += 1
    try:
        yield
    finally:
        if r is not None:
            r.paused -= 1


@contextlib.contextmanager
def estimated(name):
    """The allocations made inside carry name (Event.estimated): what a
    stand-in for a CUDA kernel allocates is estimated, not recorded."""
    r = _ACTIVE[-1] if _ACTIVE else None
    old = r.label if r is not None else ""
    if r is not None:
        r.label = name
    try:
        yield
    finally:
        if r is not None:
            r.label = old


def _live_storages(torch):
    """The StorageImpl addresses of every tensor Python holds now: what
    was live before the recording (weights, gradients, optimizer state)."""
    import gc
    from torch.multiprocessing.reductions import StorageWeakRef
    out = {}
    for o in gc.get_objects():
        if isinstance(o, torch.Tensor):
            s = _storage(torch, o)
            if s is not None and s._cdata not in out:
                out[s._cdata] = StorageWeakRef(s)
    return out


def _cuda_dropout(torch, original):
    """torch.nn.functional.dropout as on CUDA: at::dropout runs the fused
    native_dropout for a CUDA input (ATen's Dropout.cpp,
    is_fused_kernel_acceptable: CUDA, 0 < p < 1), which keeps a bool mask,
    where the CPU runs bernoulli_ into a mask of the input's dtype (four
    times the bytes in float32). In place or in evaluation: torch's own."""
    def dropout(input, p=0.5, training=True, inplace=False):
        if training and not inplace and 0.0 < p < 1.0 and input.numel() > 0:
            return torch.native_dropout(input, p, True)[0]
        return original(input, p, training, inplace)
    return dropout


def _optimizers(torch):
    """Every torch.optim.Optimizer Python holds now."""
    import gc
    return [o for o in gc.get_objects() if isinstance(o, torch.optim.Optimizer)]


def _cuda_foreach(torch):
    """Whether PyTorch's optimizers default to their foreach kernels on CUDA:
    torch >= 2 (optim/optimizer.py, _default_to_fused_or_foreach, when every
    parameter is on CUDA); torch 1.13 used the single-tensor loop."""
    return int(torch.__version__.split(".")[0]) >= 2


def record(step: Callable, *inputs, steps: int = 1, host: Sequence = (), stacks: bool = True,
           annotate: bool = True, foreach: Optional[bool] = None, attention: str = "recorded",
           cuda_kernels: bool = True, _on_op=None, **kw_inputs) -> Recording:
    """Run step(*inputs, **kw_inputs) `steps` times on the CPU under the
    recorder and return the Recording (module docstring). host: tensors
    the job keeps on the host (left out, as the inputs are). stacks=False
    records no frames (faster). annotate: a marker "step N" before each
    step. foreach: the optimizers' choice where their param groups leave it
    open (foreach None): None records what PyTorch would run on CUDA
    (foreach from torch 2 on, where the CPU runs the single-tensor loop),
    True or False forces it; a group that names it keeps its own.
    cuda_kernels: run the kernel PyTorch picks for CUDA tensors where it
    picks another on the CPU (_cuda_dropout); False records the CPU's.
    attention: "recorded" records the attention the torch that runs the
    step computes; "torch2-efficient" records multi-head attention as torch
    2 runs it on CUDA (kernels.py: its operators around a stand-in for the
    memory-efficient kernel, whose allocations are estimated).
    _on_op(i, "before" | "after") is called at the two points of
    op_log[i] (tests compare them with the CPU allocator's own figures).
    The step must run on the CPU or the meta device: build the model there
    (a model written for .cuda() needs its device made a parameter)."""
    import torch
    _check_torch(torch)
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"galloc.record: steps is an int >= 1, not {steps!r}")
    rec = Recording(torch_version=torch.__version__, steps=steps)
    skip = set()
    for t in tree_flatten((inputs, kw_inputs, list(host)))[0]:
        if isinstance(t, torch.Tensor):
            s = _storage(torch, t)
            if s is not None:
                skip.add(s._cdata)
    recorder = _Recorder(torch, rec, skip, _live_storages(torch), stacks, _on_op)

    class Mode(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return recorder.dispatch(func, args, kwargs or {})

    if foreach is None:
        foreach = True if _cuda_foreach(torch) else None
    opened = []
    if foreach is not None:
        for opt in _optimizers(torch):
            for g in opt.param_groups:
                if "foreach" in g and g["foreach"] is None:
                    g["foreach"] = foreach
                    opened.append(g)
    if attention not in ("recorded", "torch2-efficient"):
        raise ValueError(f'galloc.record: attention is "recorded" or "torch2-efficient", not {attention!r}')
    real_mha = torch.nn.functional.multi_head_attention_forward
    real_dropout = torch.nn.functional.dropout
    if cuda_kernels:
        torch.nn.functional.dropout = _cuda_dropout(torch, real_dropout)
    if attention == "torch2-efficient":
        from . import kernels
        torch.nn.functional.multi_head_attention_forward = kernels.mha_forward(torch, real_mha)
    _ACTIVE.append(recorder)
    # torch.cuda.empty_cache() is a no-op without a GPU: the recording keeps it
    real_empty_cache = torch.cuda.empty_cache
    torch.cuda.empty_cache = lambda: rec.events.append(Event("empty_cache"))
    try:
        for i in range(steps):
            if annotate:
                rec.events.append(Event("annotate", text=f"step {i}"))
            with Mode():
                step(*inputs, **kw_inputs)
            recorder.reap()
    finally:
        _ACTIVE.pop()
        torch.nn.functional.multi_head_attention_forward = real_mha
        torch.nn.functional.dropout = real_dropout
        torch.cuda.empty_cache = real_empty_cache
        for g in opened:
            g["foreach"] = None
    return rec


if __name__ == "__main__":
    sys.exit("galloc.record is a module: python -m galloc estimate runs it (docs/estimate.md)")

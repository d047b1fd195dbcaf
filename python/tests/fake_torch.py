"""A stand-in for torch that makes exactly PyTorch 2.x's calls into a
pluggable allocator, in PyTorch's order, so that galloc.torch can be tested
without torch (torch >= 2 is not installable offline here).

What it reproduces, and from where (pytorch/pytorch, 2.x releases):
- torch/cuda/memory.py: CUDAPluggableAllocator(path, alloc_fn_name,
  free_fn_name) loads the library with ctypes.CDLL, takes both symbols'
  addresses (ctypes.cast to c_void_p) and calls
  torch._C._cuda_customAllocator(alloc, free); change_current_allocator(a)
  calls torch._C._cuda_changeCurrentAllocator(a.allocator()).
- torch/csrc/cuda/Module.cpp: the allocator object's set_init_fn,
  set_reset_fn, set_memory_fraction_fn, set_record_stream_fn take a uint64
  function address with the C types below.
- torch/csrc/cuda/CUDAPluggableAllocator.cpp: createCustomAllocator calls
  init(device_count) at once; changeCurrentAllocator refuses ("Can't swap an
  already initialized allocator") once the current one is initialized; CUDA's
  lazy init calls the current allocator's init(device_count), which calls
  init_fn; malloc calls alloc_fn(size_t size, int device, cudaStream_t) and
  records (size, device, stream) under the returned pointer WITHOUT checking
  it for NULL; allocate() wraps it in a DataPtr whose deleter runs only for a
  non-NULL pointer; raw_delete looks the pointer up ("Trying to free a pointer
  not allocated here") and calls free_fn(ptr, size, device, stream);
  emptyCache calls reset_fn, setMemoryFraction memory_fraction_fn(fraction,
  device), recordStream record_stream_fn(ptr, stream); getDeviceStats raises
  "CUDAPluggableAllocator does not yet support getDeviceStats...".
It has no torch.utils (so no cpp_extension): galloc.torch.use(oom="raise")
falls back to NULL there, as on a machine without a C++ compiler.
"""
import ctypes
import sys
import types

ALLOC_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
FREE_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p)
HOOK_TYPES = {
    "init": ctypes.CFUNCTYPE(None, ctypes.c_int),
    "reset": ctypes.CFUNCTYPE(None),
    "memory_fraction": ctypes.CFUNCTYPE(None, ctypes.c_double, ctypes.c_int),
    "record_stream": ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p),
}


class PluggableAllocator:
    """torch::cuda::CUDAPluggableAllocator::CUDAPluggableAllocator (and its
    Python binding, torch._C._cuda_CUDAAllocator)."""

    def __init__(self, state, alloc_addr, free_addr):
        self.state = state
        self.alloc_fn, self.free_fn = ALLOC_FN(alloc_addr), FREE_FN(free_addr)
        self.hooks = {}
        self.metadata = {}  # allocation_metadata_
        self.initialized = False

    # Module.cpp bindings: a function address each.
    def set_init_fn(self, addr):
        self.hooks["init"] = HOOK_TYPES["init"](addr)

    def set_reset_fn(self, addr):
        self.hooks["reset"] = HOOK_TYPES["reset"](addr)

    def set_memory_fraction_fn(self, addr):
        self.hooks["memory_fraction"] = HOOK_TYPES["memory_fraction"](addr)

    def set_record_stream_fn(self, addr):
        self.hooks["record_stream"] = HOOK_TYPES["record_stream"](addr)

    # The C++ side.
    def init(self, device_count):
        self.state.calls.append(("init", device_count))
        if "init" in self.hooks:
            self.hooks["init"](device_count)
        self.initialized = True

    def malloc(self, size, device, stream):
        r = self.alloc_fn(size, device, stream) or 0
        self.state.calls.append(("malloc", size, device, stream, r))
        self.metadata.setdefault(r, (size, device, stream))  # emplace: unchecked, NULL included
        return r

    def raw_delete(self, ptr):
        if ptr not in self.metadata:
            raise RuntimeError("Trying to free a pointer not allocated here")
        size, device, stream = self.metadata.pop(ptr)
        self.state.calls.append(("free", ptr, size, device, stream))
        self.free_fn(ptr, size, device, stream)

    def emptyCache(self):
        self.state.calls.append(("emptyCache",))
        if "reset" in self.hooks:
            self.hooks["reset"]()

    def setMemoryFraction(self, fraction, device):
        if "memory_fraction" in self.hooks:
            self.hooks["memory_fraction"](fraction, device)

    def recordStream(self, ptr, stream):
        if "record_stream" in self.hooks:
            self.hooks["record_stream"](ptr, stream)

    def getDeviceStats(self, device):
        raise RuntimeError("CUDAPluggableAllocator does not yet support getDeviceStats. "
                           "If you need it, please file an issue describing your use case.")


class NativeAllocator:
    """The caching allocator PyTorch starts with: only what swapping needs."""

    def __init__(self):
        self.initialized = False

    def init(self, device_count):
        self.initialized = True


class Tensor:
    """A CUDA storage: its DataPtr frees through the current allocator."""

    def __init__(self, state, nbytes, device):
        self.state, self.nbytes, self.device = state, nbytes, device
        self.allocator = state.current
        self._ptr = self.allocator.malloc(nbytes, device, state.stream)

    def data_ptr(self):
        return self._ptr

    def record_stream(self, stream):
        self.allocator.recordStream(self._ptr, stream.cuda_stream)

    def __del__(self):
        if self._ptr:  # UniqueVoidPtr calls no deleter for NULL
            self.allocator.raw_delete(self._ptr)


class State:
    def __init__(self, device_count):
        self.device_count = device_count
        self.current = NativeAllocator()
        self.cuda_initialized = False
        self.device = 0
        self.stream = 0  # the default stream
        self.calls = []


def install(device_count=2, version="2.4.0", hip=None):
    """Put a fresh fake torch in sys.modules; returns its State."""
    state = State(device_count)
    torch = types.ModuleType("torch")
    torch.__version__ = version
    torch.version = types.SimpleNamespace(cuda=None if hip else "12.1", hip=hip)
    C = types.ModuleType("torch._C")
    C._GLIBCXX_USE_CXX11_ABI = True

    def custom_allocator(alloc_addr, free_addr):  # createCustomAllocator
        a = PluggableAllocator(state, alloc_addr, free_addr)
        a.init(0)  # torch::cuda::CUDAPluggableAllocator::device_count, 0 before CUDA's init
        return a

    def change_current_allocator(a):  # changeCurrentAllocator
        if state.current.initialized:
            raise RuntimeError("Can't swap an already initialized allocator")
        state.current = a

    C._cuda_customAllocator = custom_allocator
    C._cuda_changeCurrentAllocator = change_current_allocator
    torch._C = C

    cuda = types.ModuleType("torch.cuda")

    def lazy_init():
        if not state.cuda_initialized:
            state.cuda_initialized = True
            state.current.init(state.device_count)  # THCPModule_initExtension

    def current_device():
        lazy_init()
        return state.device

    def empty_cache():
        if state.cuda_initialized:
            state.current.emptyCache()

    def set_per_process_memory_fraction(fraction, device=None):
        lazy_init()
        state.current.setMemoryFraction(fraction, state.device if device is None else device)

    def synchronize(device=None):  # recorded: galloc.torch.sleep must wait for the device's kernels
        lazy_init()
        state.calls.append(("synchronize", state.device if device is None else device))

    def memory_stats(device=None):
        lazy_init()
        return state.current.getDeviceStats(state.device if device is None else device)

    class Stream:
        _next = 0x5000

        def __init__(self):
            Stream._next += 0x100
            self.cuda_stream = Stream._next

    cuda._lazy_init = lazy_init
    cuda.is_initialized = lambda: state.cuda_initialized
    cuda.current_device = current_device
    cuda.empty_cache = empty_cache
    cuda.set_per_process_memory_fraction = set_per_process_memory_fraction
    cuda.memory_stats = memory_stats
    cuda.synchronize = synchronize
    cuda.Stream = Stream

    memory = types.ModuleType("torch.cuda.memory")

    class _CUDAAllocator:
        def __init__(self, allocator):
            self._allocator = allocator

        def allocator(self):
            return self._allocator

    class CUDAPluggableAllocator(_CUDAAllocator):
        def __init__(self, path_to_so_file, alloc_fn_name, free_fn_name):
            allocator = ctypes.CDLL(path_to_so_file)
            alloc_fn = ctypes.cast(getattr(allocator, alloc_fn_name), ctypes.c_void_p).value
            free_fn = ctypes.cast(getattr(allocator, free_fn_name), ctypes.c_void_p).value
            assert alloc_fn is not None
            assert free_fn is not None
            self._allocator = torch._C._cuda_customAllocator(alloc_fn, free_fn)

    def change_current_allocator_py(allocator):
        torch._C._cuda_changeCurrentAllocator(allocator.allocator())

    memory._CUDAAllocator = _CUDAAllocator
    memory.CUDAPluggableAllocator = CUDAPluggableAllocator
    memory.change_current_allocator = change_current_allocator_py
    cuda.memory = memory
    torch.cuda = cuda

    def empty(nbytes, device="cuda"):
        lazy_init()
        index = int(device.split(":")[1]) if ":" in device else state.device
        return Tensor(state, nbytes, index)

    torch.empty = empty
    sys.modules.update({"torch": torch, "torch._C": C, "torch.cuda": cuda, "torch.cuda.memory": memory})
    return state


def uninstall():
    for name in ("torch", "torch._C", "torch.cuda", "torch.cuda.memory"):
        sys.modules.pop(name, None)

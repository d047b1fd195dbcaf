// _torch_oom.cpp: galloc's alloc_fn for PyTorch, raising torch.OutOfMemoryError.
//
// PyTorch 2.x's CUDAPluggableAllocator::malloc stores and returns whatever
// alloc_fn gives, NULL included (torch/csrc/cuda/CUDAPluggableAllocator.cpp;
// docs/integration.md lists the releases read): a NULL becomes a tensor at
// address 0 and a crash later. C cannot throw, so libgalloc_torch.so returns
// NULL; this wrapper, compiled by galloc.torch.use() against the installed
// torch's own headers (and libc10), calls it and throws PyTorch's
// c10::OutOfMemoryError with galloc's message when it fails for lack of
// memory (any other failure: c10::Error). PyTorch lets an exception from
// alloc_fn propagate (pytorch/pytorch#94166 tests it); its Python bindings
// turn c10::OutOfMemoryError into torch.OutOfMemoryError.
//
// The entry points of libgalloc_torch.so come in through
// galloc_torch_oom_bind, from the same ctypes handle that PyTorch's loader
// and galloc.torch use, so there is one registry.
#include <sys/types.h>

#include <c10/util/Exception.h>

namespace {
using MallocFn = void *(*)(ssize_t, int, void *);
using FreeFn = void (*)(void *, ssize_t, int, void *);
using LastErrorFn = int (*)(int, char *, size_t);
MallocFn galloc_malloc;        // galloc_torch_malloc
FreeFn galloc_free;            // galloc_torch_free
LastErrorFn galloc_last_error; // galloc_torch_last_error
int oom_status = -1;           // GALLOC_E_OOM, as the library names it
} // namespace

extern "C" {

__attribute__((visibility("default"))) void galloc_torch_oom_bind(void *malloc_fn, void *free_fn,
                                                                  void *last_error_fn, int oom)
{
    galloc_malloc = reinterpret_cast<MallocFn>(malloc_fn);
    galloc_free = reinterpret_cast<FreeFn>(free_fn);
    galloc_last_error = reinterpret_cast<LastErrorFn>(last_error_fn);
    oom_status = oom;
}

__attribute__((visibility("default"))) void *galloc_torch_oom_malloc(ssize_t size, int device, void *stream)
{
    void *p = galloc_malloc(size, device, stream);
    if (p == nullptr && size > 0) {
        char msg[4096] = "";
        int st = galloc_last_error(device, msg, sizeof msg);
        TORCH_CHECK_WITH(OutOfMemoryError, st != oom_status, msg);
        TORCH_CHECK(false, "galloc: allocating ", size, " bytes on device ", device, " failed: ", msg);
    }
    return p;
}

__attribute__((visibility("default"))) void galloc_torch_oom_free(void *ptr, ssize_t size, int device, void *stream)
{
    galloc_free(ptr, size, device, stream);
}

} // extern "C"

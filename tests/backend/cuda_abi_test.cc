// cuda_abi_test: galloc's own CUDA declarations (backend/cuda_api.h) against
// the real cuda.h, where the build machine has one.
//
// Bazel refuses an include path outside the execution root, so the BUILD file
// copies /usr/local/cuda/include/cuda.h into the output tree (or writes an
// empty stand-in where it is absent); CUDA_VERSION tells which. With the real
// header every size, alignment, offset, enum value and function signature is
// checked at compile time; without it the test skips.
//
// Signatures are compared for ABI identity (tests/backend/abi_check.h);
// struct layouts are asserted member by member below.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tests/backend/abi_check.h"
#include "tests/backend/cuda_h/cuda.h"

extern "C" {
#include <galloc/galloc.h>
#include "backend/cuda_api.h"
#include "backend/gpu.h"
}

using ga_abi::same_abi;

#ifdef CUDA_VERSION
#define GA_HAVE_CUDA_H 1

// ---- Functions: every symbol galloc resolves, by its versioned name. ----
// The GRAPH group's names are declared by CUDA 13's cuda.h only for the
// driver's own build (__CUDA_API_VERSION_INTERNAL; the public names map to
// the edge-data versions): their prototypes there, written out in cuda.h's
// types, stand in for decltype. cuda.h's macro would rename the symbol in
// the list below (to _v2, the edge-data call): this test calls neither.
#undef cuGraphNodeGetDependencies
using cu_internal_cuStreamGetCaptureInfo_v2 = CUresult(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                                                       const CUgraphNode **, size_t *);
using cu_internal_cuGraphNodeGetDependencies = CUresult(CUgraphNode, CUgraphNode *, size_t *);
#define GA_ABI_SIG_PUBLIC_(sym)                                                                                        \
    static_assert(same_abi<ga_##sym##_fn, decltype(::sym)>(), #sym ": galloc's declaration differs from cuda.h");
#define GA_ABI_SIG_REQUIRED GA_ABI_SIG_PUBLIC_
#define GA_ABI_SIG_VMM GA_ABI_SIG_PUBLIC_
#define GA_ABI_SIG_ASYNC GA_ABI_SIG_PUBLIC_
#define GA_ABI_SIG_HOST GA_ABI_SIG_PUBLIC_
#define GA_ABI_SIG_PEER GA_ABI_SIG_PUBLIC_
#define GA_ABI_SIG_IPC GA_ABI_SIG_PUBLIC_
#define GA_ABI_SIG_HOSTREG GA_ABI_SIG_PUBLIC_
#define GA_ABI_SIG_GRAPH(sym)                                                                                          \
    static_assert(same_abi<ga_##sym##_fn, cu_internal_##sym>(), #sym ": galloc's declaration differs from cuda.h");
#define GA_ABI_SIG_(group, sym) GA_ABI_SIG_##group(sym)
GA_CUDA_SYMBOLS(GA_ABI_SIG_)
#undef GA_ABI_SIG_
#undef GA_ABI_SIG_PUBLIC_
#undef GA_ABI_SIG_REQUIRED
#undef GA_ABI_SIG_VMM
#undef GA_ABI_SIG_ASYNC
#undef GA_ABI_SIG_HOST
#undef GA_ABI_SIG_PEER
#undef GA_ABI_SIG_IPC
#undef GA_ABI_SIG_HOSTREG
#undef GA_ABI_SIG_GRAPH

// ---- Types. ----
static_assert(std::is_same_v<ga_cu_device_t, CUdevice>);
static_assert(std::is_same_v<ga_cu_deviceptr_t, CUdeviceptr>);
static_assert(std::is_same_v<ga_cu_mem_handle_t, CUmemGenericAllocationHandle>);
static_assert(sizeof(ga_cu_result_t) == sizeof(CUresult) && alignof(ga_cu_result_t) == alignof(CUresult));
static_assert(sizeof(ga_cu_context_t) == sizeof(CUcontext) && sizeof(ga_cu_stream_t) == sizeof(CUstream));
static_assert(sizeof(ga_cu_event_t) == sizeof(CUevent) && sizeof(ga_cu_mempool_t) == sizeof(CUmemoryPool));
static_assert(sizeof(ga_cu_graph_t) == sizeof(CUgraph) && sizeof(ga_cu_graph_node_t) == sizeof(CUgraphNode));
static_assert(std::is_same_v<uint64_t, cuuint64_t>);

// ---- Values. ----
GA_ABI_VALUE(GA_CUDA_SUCCESS, CUDA_SUCCESS)
GA_ABI_VALUE(GA_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE)
GA_ABI_VALUE(GA_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY)
GA_ABI_VALUE(GA_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED)
GA_ABI_VALUE(GA_CUDA_ERROR_DEINITIALIZED, CUDA_ERROR_DEINITIALIZED)
GA_ABI_VALUE(GA_CUDA_ERROR_STUB_LIBRARY, CUDA_ERROR_STUB_LIBRARY)
GA_ABI_VALUE(GA_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE)
GA_ABI_VALUE(GA_CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE)
GA_ABI_VALUE(GA_CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT)
GA_ABI_VALUE(GA_CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE)
GA_ABI_VALUE(GA_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND)
GA_ABI_VALUE(GA_CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY)
GA_ABI_VALUE(GA_CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED)
GA_ABI_VALUE(GA_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
GA_ABI_VALUE(GA_CUDA_ERROR_CAPTURED_EVENT, CUDA_ERROR_CAPTURED_EVENT)
GA_ABI_VALUE(GA_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
GA_ABI_VALUE(GA_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
GA_ABI_VALUE(GA_CU_MEMHOSTREGISTER_PORTABLE, CU_MEMHOSTREGISTER_PORTABLE)
GA_ABI_VALUE(GA_CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN)
GA_ABI_VALUE(GA_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
GA_ABI_VALUE(GA_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
GA_ABI_VALUE(GA_CU_EVENT_DEFAULT, CU_EVENT_DEFAULT)
GA_ABI_VALUE(GA_CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE)
GA_ABI_VALUE(GA_CU_STREAM_CAPTURE_STATUS_ACTIVE, CU_STREAM_CAPTURE_STATUS_ACTIVE)
GA_ABI_VALUE(GA_CU_STREAM_CAPTURE_STATUS_INVALIDATED, CU_STREAM_CAPTURE_STATUS_INVALIDATED)
GA_ABI_VALUE(GA_GPU_CAPTURE_ACTIVE, CU_STREAM_CAPTURE_STATUS_ACTIVE)
GA_ABI_VALUE(GA_GPU_CAPTURE_INVALIDATED, CU_STREAM_CAPTURE_STATUS_INVALIDATED)
GA_ABI_VALUE(GA_CU_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING)
GA_ABI_VALUE(GA_CU_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE)
// CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are casts of integers to
// pointers, which C++ does not allow in a constant expression: they are
// compared at run time in DeclarationsMatchCudaH.
GA_ABI_VALUE(GA_CU_MEM_ALLOCATION_TYPE_INVALID, CU_MEM_ALLOCATION_TYPE_INVALID)
GA_ABI_VALUE(GA_CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED)
GA_ABI_VALUE(GA_CU_MEM_HANDLE_TYPE_NONE, CU_MEM_HANDLE_TYPE_NONE)
GA_ABI_VALUE(GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
GA_ABI_VALUE(GA_CU_MEM_HANDLE_TYPE_FABRIC, CU_MEM_HANDLE_TYPE_FABRIC)
GA_ABI_VALUE(GA_CU_MEM_LOCATION_TYPE_INVALID, CU_MEM_LOCATION_TYPE_INVALID)
GA_ABI_VALUE(GA_CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE)
GA_ABI_VALUE(GA_CU_MEM_ACCESS_FLAGS_PROT_NONE, CU_MEM_ACCESS_FLAGS_PROT_NONE)
GA_ABI_VALUE(GA_CU_MEM_ACCESS_FLAGS_PROT_READ, CU_MEM_ACCESS_FLAGS_PROT_READ)
GA_ABI_VALUE(GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
GA_ABI_VALUE(GA_CU_MEM_ALLOC_GRANULARITY_MINIMUM, CU_MEM_ALLOC_GRANULARITY_MINIMUM)
GA_ABI_VALUE(GA_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES, CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT, CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
GA_ABI_VALUE(GA_CU_MEMPOOL_ATTR_USED_MEM_HIGH, CU_MEMPOOL_ATTR_USED_MEM_HIGH)

// ---- Struct layouts, member by member. ----
GA_ABI_LAYOUT(ga_cu_mem_location_t, CUmemLocation)
GA_ABI_MEMBER(ga_cu_mem_location_t, type, CUmemLocation, type)
GA_ABI_MEMBER(ga_cu_mem_location_t, id, CUmemLocation, id)
GA_ABI_LAYOUT(ga_cu_mem_allocation_prop_t, CUmemAllocationProp)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, type, CUmemAllocationProp, type)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, requested_handle_types, CUmemAllocationProp, requestedHandleTypes)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, location, CUmemAllocationProp, location)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, win32_handle_meta_data, CUmemAllocationProp, win32HandleMetaData)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, alloc_flags, CUmemAllocationProp, allocFlags)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, alloc_flags.compression_type, CUmemAllocationProp,
              allocFlags.compressionType)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, alloc_flags.gpu_direct_rdma_capable, CUmemAllocationProp,
              allocFlags.gpuDirectRDMACapable)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, alloc_flags.usage, CUmemAllocationProp, allocFlags.usage)
GA_ABI_MEMBER(ga_cu_mem_allocation_prop_t, alloc_flags.reserved, CUmemAllocationProp, allocFlags.reserved)
GA_ABI_LAYOUT(ga_cu_mem_access_desc_t, CUmemAccessDesc)
GA_ABI_LAYOUT(ga_cu_ipc_mem_handle_t, CUipcMemHandle)
GA_ABI_MEMBER(ga_cu_ipc_mem_handle_t, reserved, CUipcMemHandle, reserved)
GA_ABI_VALUE(GA_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
GA_ABI_VALUE(sizeof(ga_cu_ipc_mem_handle_t), CU_IPC_HANDLE_SIZE)
GA_ABI_MEMBER(ga_cu_mem_access_desc_t, location, CUmemAccessDesc, location)
GA_ABI_MEMBER(ga_cu_mem_access_desc_t, flags, CUmemAccessDesc, flags)

#else
#define GA_HAVE_CUDA_H 0
#endif

namespace {

TEST(CudaAbi, DeclarationsMatchCudaH)
{
    if (!GA_HAVE_CUDA_H)
        GTEST_SKIP() << "/usr/local/cuda/include/cuda.h is absent on the build machine";
#ifdef CUDA_VERSION
    EXPECT_GE(CUDA_VERSION, 11040) << "cuMemAllocAsync and the memory pool API need CUDA 11.4";
    RecordProperty("cuda_version", CUDA_VERSION);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(GA_CU_STREAM_LEGACY), reinterpret_cast<uintptr_t>(CU_STREAM_LEGACY));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(GA_CU_STREAM_PER_THREAD), reinterpret_cast<uintptr_t>(CU_STREAM_PER_THREAD));
#endif
    // Everything else was checked at compile time; a mismatch would not build.
}

TEST(CudaAbi, TheSymbolTableNamesEveryDeclaredFunctionOnce)
{
    ASSERT_EQ(ga_cuda_library.count, 48u); // 19 required, 8 VMM, 6 ASYNC, 4 HOST, 2 PEER, 5 IPC, 2 GRAPH, 2 HOSTREG
    for (size_t i = 0; i < ga_cuda_library.count; i++)
        for (size_t j = i + 1; j < ga_cuda_library.count; j++)
            EXPECT_STRNE(ga_cuda_library.syms[i].name, ga_cuda_library.syms[j].name);
}

// The toolkit's stub libcuda (linked by CUDA builds, answering every call with
// CUDA_ERROR_STUB_LIBRARY) exports the real driver's symbol names: every name
// in galloc's table must be among them.
const char *StubLibrary()
{
    for (const char *p : {"/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/lib/stubs/libcuda.so"})
        if (void *h = dlopen(p, RTLD_LAZY | RTLD_LOCAL)) {
            dlclose(h);
            return p;
        }
    return nullptr;
}

TEST(CudaAbi, EverySymbolExistsInTheToolkitsStubDriver)
{
    const char *path = StubLibrary();
    if (path == nullptr)
        GTEST_SKIP() << "no CUDA toolkit stub libcuda.so here";
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    ASSERT_NE(h, nullptr);
    for (size_t i = 0; i < ga_cuda_library.count; i++)
        EXPECT_NE(dlsym(h, ga_cuda_library.syms[i].name), nullptr) << ga_cuda_library.syms[i].name;
    dlclose(h);
}

TEST(CudaAbi, TheStubDriverIsUnavailableWithItsReason)
{
    const char *path = StubLibrary();
    if (path == nullptr)
        GTEST_SKIP() << "no CUDA toolkit stub libcuda.so here";
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    std::string conf = std::string("device_backend:cuda,driver_path:") + path;
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, conf.c_str(), &a, err, sizeof err), GALLOC_E_UNAVAILABLE);
    EXPECT_STREQ(err, "device backend \"cuda\" could not open device 0: initializing the driver: cuInit failed: "
                      "CUresult 34 (CUDA_ERROR_STUB_LIBRARY (a toolkit stub, not a driver))");
}

} // namespace

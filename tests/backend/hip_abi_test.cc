// hip_abi_test: galloc's own HIP declarations (backend/hip_api.h) against the
// real hip_runtime_api.h, and the loader's symbol table against the real
// libamdhip64.so, where the build machine has them (Debian: apt-get install
// libamdhip64-dev, ROCm 5.2; no AMD GPU needed).
//
// The header lives in /usr/include/hip, a system include directory, so it is
// included directly when __has_include finds it (a ROCm install only under
// /opt/rocm is not searched: those checks then skip). With the header every
// size, alignment, offset, enum value and function signature is checked at
// compile time (tests/backend/abi_check.h), hipMemAllocationProp in the layout
// of the header's major version.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "tests/backend/abi_check.h"

#if __has_include(<hip/hip_runtime_api.h>)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1 // the header refuses to guess the platform
#endif
#include <hip/hip_runtime_api.h>
#define GA_HAVE_HIP_H 1
#else
#define GA_HAVE_HIP_H 0
#endif

extern "C" {
#include <galloc/galloc.h>
#include "backend/hip_api.h"
#include "backend/gpu.h"
}

using ga_abi::same_abi;

#if GA_HAVE_HIP_H

// ---- Functions: every symbol galloc resolves. ----
// In C++ the header adds template overloads of hipMalloc, hipMallocAsync and
// hipHostMalloc (T ** for void **), so decltype cannot name those three: their C prototypes
// are written out (hip_c_<sym>), a static_cast proves the header declares
// exactly that overload, and a preprocessor probe (GA_OVERLOADED_<sym> is
// defined for them only) sends each name of the list to its check.
using hip_c_hipMalloc = hipError_t(void **, size_t);
using hip_c_hipMallocAsync = hipError_t(void **, size_t, hipStream_t);
using hip_c_hipHostMalloc = hipError_t(void **, size_t, unsigned int);
#define GA_OVERLOADED_hipMalloc ~, 1
#define GA_OVERLOADED_hipMallocAsync ~, 1
#define GA_OVERLOADED_hipHostMalloc ~, 1
#define GA_SECOND_(a, b, ...) b
#define GA_PROBE_(...) GA_SECOND_(__VA_ARGS__, 0, ~)
#define GA_CAT_(a, b) GA_CAT2_(a, b)
#define GA_CAT2_(a, b) a##b
#define GA_ABI_SIG_0(sym)                                                                                              \
    static_assert(same_abi<ga_##sym##_fn, decltype(::sym)>(), #sym ": galloc's declaration differs from HIP's");
#define GA_ABI_SIG_1(sym)                                                                                              \
    static_assert(sizeof(static_cast<hip_c_##sym *>(&::sym)) != 0, #sym ": no C overload of that type");               \
    static_assert(same_abi<ga_##sym##_fn, hip_c_##sym>(), #sym ": galloc's declaration differs from HIP's");
#define GA_ABI_SIG_(group, sym) GA_CAT_(GA_ABI_SIG_, GA_PROBE_(GA_OVERLOADED_##sym))(sym)
GA_HIP_SYMBOLS(GA_ABI_SIG_)
#undef GA_ABI_SIG_
#undef GA_ABI_SIG_0
#undef GA_ABI_SIG_1

// ---- Types. ----
static_assert(std::is_same_v<ga_hip_device_t, hipDevice_t>);
static_assert(sizeof(ga_hip_error_t) == sizeof(hipError_t) && alignof(ga_hip_error_t) == alignof(hipError_t));
static_assert(sizeof(ga_hip_stream_t) == sizeof(hipStream_t) && sizeof(ga_hip_event_t) == sizeof(hipEvent_t));
static_assert(sizeof(ga_hip_mempool_t) == sizeof(hipMemPool_t));
static_assert(sizeof(ga_hip_mem_handle_t) == sizeof(hipMemGenericAllocationHandle_t));

// ---- Values. ----
GA_ABI_VALUE(GA_HIP_SUCCESS, hipSuccess)
GA_ABI_VALUE(GA_HIP_ERROR_INVALID_VALUE, hipErrorInvalidValue)
GA_ABI_VALUE(GA_HIP_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory)
GA_ABI_VALUE(GA_HIP_ERROR_NOT_INITIALIZED, hipErrorNotInitialized)
GA_ABI_VALUE(GA_HIP_ERROR_DEINITIALIZED, hipErrorDeinitialized)
GA_ABI_VALUE(GA_HIP_ERROR_NO_DEVICE, hipErrorNoDevice)
GA_ABI_VALUE(GA_HIP_ERROR_INVALID_DEVICE, hipErrorInvalidDevice)
GA_ABI_VALUE(GA_HIP_ERROR_INVALID_CONTEXT, hipErrorInvalidContext)
GA_ABI_VALUE(GA_HIP_ERROR_INVALID_HANDLE, hipErrorInvalidHandle)
GA_ABI_VALUE(GA_HIP_ERROR_NOT_FOUND, hipErrorNotFound)
GA_ABI_VALUE(GA_HIP_ERROR_NOT_READY, hipErrorNotReady)
GA_ABI_VALUE(GA_HIP_ERROR_NOT_SUPPORTED, hipErrorNotSupported)
GA_ABI_VALUE(GA_HIP_ERROR_STREAM_CAPTURE_UNSUPPORTED, hipErrorStreamCaptureUnsupported)
GA_ABI_VALUE(GA_HIP_ERROR_CAPTURED_EVENT, hipErrorCapturedEvent)
GA_ABI_VALUE(GA_HIP_ERROR_UNKNOWN, hipErrorUnknown)
GA_ABI_VALUE(GA_HIP_ERROR_PEER_ACCESS_UNSUPPORTED, hipErrorPeerAccessUnsupported)
GA_ABI_VALUE(GA_HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED, hipErrorPeerAccessAlreadyEnabled)
GA_ABI_VALUE(GA_HIP_EVENT_DEFAULT, hipEventDefault)
GA_ABI_VALUE(GA_HIP_STREAM_CAPTURE_STATUS_NONE, hipStreamCaptureStatusNone)
GA_ABI_VALUE(GA_HIP_STREAM_CAPTURE_STATUS_ACTIVE, hipStreamCaptureStatusActive)
GA_ABI_VALUE(GA_HIP_STREAM_CAPTURE_STATUS_INVALIDATED, hipStreamCaptureStatusInvalidated)
GA_ABI_VALUE(GA_GPU_CAPTURE_ACTIVE, hipStreamCaptureStatusActive)
GA_ABI_VALUE(GA_GPU_CAPTURE_INVALIDATED, hipStreamCaptureStatusInvalidated)
GA_ABI_VALUE(GA_HIP_EVENT_DISABLE_TIMING, hipEventDisableTiming)
GA_ABI_VALUE(GA_HIP_HOST_MALLOC_DEFAULT, hipHostMallocDefault)
GA_ABI_VALUE(GA_HIP_HOST_REGISTER_DEFAULT, hipHostRegisterDefault)
GA_ABI_VALUE(GA_HIP_ERROR_HOST_MEMORY_ALREADY_REGISTERED, hipErrorHostMemoryAlreadyRegistered)
GA_ABI_VALUE(GA_HIP_ERROR_HOST_MEMORY_NOT_REGISTERED, hipErrorHostMemoryNotRegistered)
GA_ABI_VALUE(GA_HIP_MEM_ALLOCATION_TYPE_INVALID, hipMemAllocationTypeInvalid)
GA_ABI_VALUE(GA_HIP_MEM_ALLOCATION_TYPE_PINNED, hipMemAllocationTypePinned)
GA_ABI_VALUE(GA_HIP_MEM_HANDLE_TYPE_NONE, hipMemHandleTypeNone)
GA_ABI_VALUE(GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, hipMemHandleTypePosixFileDescriptor)
GA_ABI_VALUE(GA_HIP_MEM_LOCATION_TYPE_INVALID, hipMemLocationTypeInvalid)
GA_ABI_VALUE(GA_HIP_MEM_LOCATION_TYPE_DEVICE, hipMemLocationTypeDevice)
GA_ABI_VALUE(GA_HIP_MEM_ACCESS_FLAGS_PROT_NONE, hipMemAccessFlagsProtNone)
GA_ABI_VALUE(GA_HIP_MEM_ACCESS_FLAGS_PROT_READ, hipMemAccessFlagsProtRead)
GA_ABI_VALUE(GA_HIP_MEM_ACCESS_FLAGS_PROT_READWRITE, hipMemAccessFlagsProtReadWrite)
GA_ABI_VALUE(GA_HIP_MEM_ALLOC_GRANULARITY_MINIMUM, hipMemAllocationGranularityMinimum)
GA_ABI_VALUE(GA_HIP_MEM_ALLOC_GRANULARITY_RECOMMENDED, hipMemAllocationGranularityRecommended)
GA_ABI_VALUE(GA_HIP_MEMPOOL_REUSE_FOLLOW_EVENT_DEPENDENCIES, hipMemPoolReuseFollowEventDependencies)
GA_ABI_VALUE(GA_HIP_MEMPOOL_REUSE_ALLOW_OPPORTUNISTIC, hipMemPoolReuseAllowOpportunistic)
GA_ABI_VALUE(GA_HIP_MEMPOOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES, hipMemPoolReuseAllowInternalDependencies)
GA_ABI_VALUE(GA_HIP_MEMPOOL_ATTR_RELEASE_THRESHOLD, hipMemPoolAttrReleaseThreshold)
GA_ABI_VALUE(GA_HIP_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, hipMemPoolAttrReservedMemCurrent)
GA_ABI_VALUE(GA_HIP_MEMPOOL_ATTR_RESERVED_MEM_HIGH, hipMemPoolAttrReservedMemHigh)
GA_ABI_VALUE(GA_HIP_MEMPOOL_ATTR_USED_MEM_CURRENT, hipMemPoolAttrUsedMemCurrent)
GA_ABI_VALUE(GA_HIP_MEMPOOL_ATTR_USED_MEM_HIGH, hipMemPoolAttrUsedMemHigh)
// HIP_VERSION's encoding, which galloc's 6.0 threshold is written in.
static_assert(HIP_VERSION == HIP_VERSION_MAJOR * 10000000 + HIP_VERSION_MINOR * 100000 + HIP_VERSION_PATCH);
static_assert((HIP_VERSION >= GA_HIP_VERSION_6_0) == (HIP_VERSION_MAJOR >= 6));

// ---- Struct layouts, member by member. ----
GA_ABI_LAYOUT(ga_hip_mem_location_t, hipMemLocation)
GA_ABI_MEMBER(ga_hip_mem_location_t, type, hipMemLocation, type)
GA_ABI_MEMBER(ga_hip_mem_location_t, id, hipMemLocation, id)
GA_ABI_LAYOUT(ga_hip_mem_access_desc_t, hipMemAccessDesc)
GA_ABI_LAYOUT(ga_hip_ipc_mem_handle_t, hipIpcMemHandle_t)
GA_ABI_MEMBER(ga_hip_ipc_mem_handle_t, reserved, hipIpcMemHandle_t, reserved)
GA_ABI_VALUE(sizeof(ga_hip_ipc_mem_handle_t), HIP_IPC_HANDLE_SIZE)
#if HIP_VERSION_MAJOR >= 6 // the flag's value changed in ROCm 6.0 (see hip_api.h)
GA_ABI_VALUE(GA_HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, hipIpcMemLazyEnablePeerAccess)
#else
GA_ABI_VALUE(GA_HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V5, hipIpcMemLazyEnablePeerAccess)
#endif
GA_ABI_MEMBER(ga_hip_mem_access_desc_t, location, hipMemAccessDesc, location)
GA_ABI_MEMBER(ga_hip_mem_access_desc_t, flags, hipMemAccessDesc, flags)
#if HIP_VERSION_MAJOR >= 6
GA_ABI_LAYOUT(ga_hip_mem_allocation_prop_t, hipMemAllocationProp)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, type, hipMemAllocationProp, type)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, requested_handle_types, hipMemAllocationProp, requestedHandleTypes)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, location, hipMemAllocationProp, location)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, win32_handle_meta_data, hipMemAllocationProp, win32HandleMetaData)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, alloc_flags, hipMemAllocationProp, allocFlags)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, alloc_flags.compression_type, hipMemAllocationProp,
              allocFlags.compressionType)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, alloc_flags.gpu_direct_rdma_capable, hipMemAllocationProp,
              allocFlags.gpuDirectRDMACapable)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_t, alloc_flags.usage, hipMemAllocationProp, allocFlags.usage)
#else
GA_ABI_LAYOUT(ga_hip_mem_allocation_prop_v5_t, hipMemAllocationProp)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_v5_t, compression_type, hipMemAllocationProp, compressionType)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_v5_t, location, hipMemAllocationProp, location)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_v5_t, requested_handle_type, hipMemAllocationProp, requestedHandleType)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_v5_t, type, hipMemAllocationProp, type)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_v5_t, usage, hipMemAllocationProp, usage)
GA_ABI_MEMBER(ga_hip_mem_allocation_prop_v5_t, win32_handle_meta_data, hipMemAllocationProp, win32HandleMetaData)
#endif
// The 6.x declaration is what galloc's function types take: a 5.x runtime
// reads the v5 struct through that pointer, so both must be the same size.
GA_ABI_LAYOUT(ga_hip_mem_allocation_prop_t, ga_hip_mem_allocation_prop_v5_t)

#endif // GA_HAVE_HIP_H

namespace {

TEST(HipAbi, DeclarationsMatchHipRuntimeApiH)
{
    if (!GA_HAVE_HIP_H)
        GTEST_SKIP() << "hip/hip_runtime_api.h is absent (Debian: apt-get install libamdhip64-dev)";
#if GA_HAVE_HIP_H
    RecordProperty("hip_version", HIP_VERSION);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(GA_HIP_STREAM_PER_THREAD), reinterpret_cast<uintptr_t>(hipStreamPerThread));
#endif
    // Everything else was checked at compile time; a mismatch would not build.
}

TEST(HipAbi, TheSymbolTableNamesEveryDeclaredFunctionOnce)
{
    ASSERT_EQ(ga_hip_library.count, 47u); // 18 required, 8 VMM, 6 ASYNC, 4 HOST, 2 PEER, 5 IPC, 2 GRAPH, 2 HOSTREG
    for (size_t i = 0; i < ga_hip_library.count; i++)
        for (size_t j = i + 1; j < ga_hip_library.count; j++)
            EXPECT_STRNE(ga_hip_library.syms[i].name, ga_hip_library.syms[j].name);
}

// The runtime itself (Debian's libamdhip64-5 comes with the -dev package):
// loadable without a GPU, it must export every name in galloc's table. The
// test holds it for the process, so galloc's dlclose never unloads it:
// unloading ROCm's C++ runtime strands the sanitizers' bookkeeping of its
// types, which LeakSanitizer then reports as leaks that are not galloc's.
void *RealRuntime()
{
    static void *h = dlopen(GA_HIP_DEFAULT_LIBRARY, RTLD_LAZY | RTLD_LOCAL);
    return h;
}

TEST(HipAbi, EverySymbolExistsInTheRealRuntime)
{
    void *h = RealRuntime();
    if (h == nullptr)
        GTEST_SKIP() << "no " GA_HIP_DEFAULT_LIBRARY " here";
    for (size_t i = 0; i < ga_hip_library.count; i++)
        EXPECT_NE(dlsym(h, ga_hip_library.syms[i].name), nullptr) << ga_hip_library.syms[i].name;
}

// Without an AMD GPU the real runtime loads and hipInit refuses: the backend
// is unavailable with the runtime's reason, and a machine with a GPU opens it.
TEST(HipAbi, TheRealRuntimeOpensOrSaysWhyNot)
{
    if (RealRuntime() == nullptr)
        GTEST_SKIP() << "no " GA_HIP_DEFAULT_LIBRARY " here";
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st = galloc_allocator_create(nullptr, 0, "device_backend:hip", &a, err, sizeof err);
    if (st == GALLOC_OK) {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a, 1, 0, &p), GALLOC_OK);
        EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
        galloc_allocator_destroy(a);
        GTEST_SKIP() << "an AMD GPU is present: opened it";
    }
    EXPECT_EQ(st, GALLOC_E_UNAVAILABLE) << err;
    EXPECT_EQ(std::string(err).rfind("device backend \"hip\" could not open device 0: ", 0), 0u) << err;
    EXPECT_NE(std::string(err).find(" failed: hipError"), std::string::npos) << "the runtime's own error name: " << err;
}

} // namespace

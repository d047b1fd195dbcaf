/*
 * fake_hip.c: the HIP runtime API layer of the fake GPU: exports the runtime
 * symbols galloc resolves (typed with galloc's own declarations from
 * backend/hip_api.h, so a signature that drifts from the loader's typedef does
 * not compile), checks HIP's structs, maps the null and per-thread streams and
 * the core's results to hipError_t values, and exports the fake_hip_* test
 * controls. All behaviour is the vendor-neutral core's
 * (tests/fake_cuda/fake_gpu.h), shared with the fake CUDA driver.
 *
 * What makes it a runtime rather than a driver: there is no context call; the
 * current device is per thread (hipSetDevice, device 0 until set) and its
 * primary context is the runtime's for the process (the core's fg_rt_*), so
 * every call that acts on a device binds the thread's device first.
 *
 * hipMemAllocationProp is read in the layout of the version the fake reports
 * (fake_hip_set_version): HIP 5's below 60000000, ROCm 6's from there, so a
 * caller that builds the wrong layout is refused as a contract violation.
 *
 * Variants (for the loader's required / optional rules), by define:
 *   FAKE_HIP_NO_VMM    omit hipMemCreate (the VMM group is then incomplete)
 *   FAKE_HIP_NO_ASYNC  omit hipMallocAsync
 *   FAKE_HIP_NO_ALLOC  omit hipMalloc (a required symbol)
 *   FAKE_HIP_NO_HOST   omit hipHostMalloc (the HOST group: no offload)
 *   FAKE_HIP_NO_HOSTREG omit hipHostRegister (the HOSTREG group: no register path)
 *   FAKE_HIP_NO_IPC    omit hipIpcOpenMemHandle (the IPC group: no sharing between processes)
 *   FAKE_HIP_NO_GRAPH  omit hipStreamGetCaptureInfo_v2 (the GRAPH group: no capture graphs)
 */
#include <stdatomic.h>
#include <string.h>

#include "backend/hip_api.h"
#include "tests/fake_hip/fake_hip_control.h"
#include "tests/fake_hip/fake_hip_int.h"

/* The version fake_hip_set_version set: the layouts and flags it implies. */
_Atomic int fake_hip_version = FAKE_HIP_DEFAULT_VERSION;

/* The allocation properties galloc may pass, in the reported version's
 * layout: pinned memory on a device, no Windows data, no compression or
 * usage flags. Returns the device or -1 (violation); *exportable (when not
 * NULL): a POSIX file descriptor type was requested. */
static int prop_device(const ga_hip_mem_allocation_prop_t *p, bool *exportable)
{
    if (p == NULL) {
        fg_violation(FG_INVALID_VALUE, "prop is NULL");
        return -1;
    }
    int type, loc_type, handles, id;
    bool clean;
    if (atomic_load(&fake_hip_version) >= GA_HIP_VERSION_6_0) {
        type = (int)p->type, loc_type = (int)p->location.type, handles = (int)p->requested_handle_types;
        id = p->location.id;
        clean = p->win32_handle_meta_data == NULL && p->alloc_flags.compression_type == 0 &&
                p->alloc_flags.gpu_direct_rdma_capable == 0 && p->alloc_flags.usage == 0;
    } else {
        const ga_hip_mem_allocation_prop_v5_t *v5 = (const void *)p;
        type = (int)v5->type, loc_type = (int)v5->location.type, handles = (int)v5->requested_handle_type;
        id = v5->location.id;
        clean = v5->win32_handle_meta_data == NULL && v5->compression_type == 0 && v5->usage == 0;
    }
    if (type != GA_HIP_MEM_ALLOCATION_TYPE_PINNED || loc_type != GA_HIP_MEM_LOCATION_TYPE_DEVICE || !clean ||
        (handles != GA_HIP_MEM_HANDLE_TYPE_NONE && handles != GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) {
        fg_violation(FG_INVALID_VALUE,
                     "prop (read as HIP %d.x's layout): type %d, location type %d, handle types %d: want pinned "
                     "device memory",
                     atomic_load(&fake_hip_version) / 10000000, type, loc_type, handles);
        return -1;
    }
    if (exportable != NULL)
        *exportable = handles == GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return id;
}

/* ---- Exported runtime symbols. ---- */

EXPORT ga_hipInit_fn hipInit;
EXPORT ga_hipRuntimeGetVersion_fn hipRuntimeGetVersion;
EXPORT ga_hipGetDeviceCount_fn hipGetDeviceCount;
EXPORT ga_hipDeviceGet_fn hipDeviceGet;
EXPORT ga_hipGetDevice_fn hipGetDevice;
EXPORT ga_hipSetDevice_fn hipSetDevice;
EXPORT ga_hipDeviceSynchronize_fn hipDeviceSynchronize;
EXPORT ga_hipFree_fn hipFree;
EXPORT ga_hipMemGetInfo_fn hipMemGetInfo;
EXPORT ga_hipEventCreateWithFlags_fn hipEventCreateWithFlags;
EXPORT ga_hipEventDestroy_fn hipEventDestroy;
EXPORT ga_hipEventRecord_fn hipEventRecord;
EXPORT ga_hipEventQuery_fn hipEventQuery;
EXPORT ga_hipEventSynchronize_fn hipEventSynchronize;
EXPORT ga_hipStreamSynchronize_fn hipStreamSynchronize;
EXPORT ga_hipGetErrorName_fn hipGetErrorName;
EXPORT ga_hipGetErrorString_fn hipGetErrorString;
EXPORT ga_hipMemGetAllocationGranularity_fn hipMemGetAllocationGranularity;
EXPORT ga_hipMemAddressReserve_fn hipMemAddressReserve;
EXPORT ga_hipMemAddressFree_fn hipMemAddressFree;
EXPORT ga_hipMemRelease_fn hipMemRelease;
EXPORT ga_hipMemMap_fn hipMemMap;
EXPORT ga_hipMemUnmap_fn hipMemUnmap;
EXPORT ga_hipMemSetAccess_fn hipMemSetAccess;
EXPORT ga_hipFreeAsync_fn hipFreeAsync;
EXPORT ga_hipDeviceGetDefaultMemPool_fn hipDeviceGetDefaultMemPool;
EXPORT ga_hipMemPoolSetAttribute_fn hipMemPoolSetAttribute;
EXPORT ga_hipMemPoolGetAttribute_fn hipMemPoolGetAttribute;
EXPORT ga_hipMemPoolTrimTo_fn hipMemPoolTrimTo;

ga_hip_error_t hipInit(unsigned int flags)
{
    ENTER(hipInit);
    return hip(fg_init(flags));
}

ga_hip_error_t hipRuntimeGetVersion(int *runtime_version)
{
    ENTER(hipRuntimeGetVersion);
    if (runtime_version == NULL)
        return hip(fg_violation(FG_INVALID_VALUE, "runtimeVersion is NULL"));
    *runtime_version = atomic_load(&fake_hip_version);
    return GA_HIP_SUCCESS;
}

ga_hip_error_t hipGetDeviceCount(int *count)
{
    ENTER(hipGetDeviceCount);
    return hip(fg_device_count(count));
}

ga_hip_error_t hipDeviceGet(ga_hip_device_t *device, int ordinal)
{
    ENTER(hipDeviceGet);
    return hip(fg_device_get(device, ordinal));
}

ga_hip_error_t hipGetDevice(int *device_id)
{
    ENTER(hipGetDevice);
    return hip(fg_rt_get_device(device_id));
}

ga_hip_error_t hipSetDevice(int device_id)
{
    ENTER(hipSetDevice);
    return hip(fg_rt_set_device(device_id));
}

ga_hip_error_t hipDeviceSynchronize(void)
{
    ENTER(hipDeviceSynchronize);
    return hip(fg_ctx_synchronize());
}

#ifndef FAKE_HIP_NO_ALLOC
EXPORT ga_hipMalloc_fn hipMalloc;
ga_hip_error_t hipMalloc(void **ptr, size_t size)
{
    ENTER(hipMalloc);
    uint64_t a = 0;
    fg_rc_t rc = fg_mem_alloc(ptr != NULL ? &a : NULL, size);
    if (rc == FG_OK)
        *ptr = (void *)(uintptr_t)a;
    return hip(rc);
}
#endif

ga_hip_error_t hipFree(void *ptr)
{
    ENTER(hipFree);
    return hip(fg_mem_free((uintptr_t)ptr));
}

ga_hip_error_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    ENTER(hipMemGetInfo);
    return hip(fg_mem_info(free_bytes, total_bytes));
}

ga_hip_error_t hipEventCreateWithFlags(ga_hip_event_t *event, unsigned flags)
{
    ENTER(hipEventCreateWithFlags);
    /* BlockingSync 0x1, DisableTiming 0x2, Interprocess 0x4, ReleaseToDevice 0x40000000,
     * ReleaseToSystem 0x80000000. */
    void *e = NULL;
    fg_rc_t rc = fg_event_create_flags(event != NULL ? &e : NULL, flags, 0xc0000007u);
    if (rc == FG_OK)
        *event = e;
    return hip(rc);
}

ga_hip_error_t hipEventDestroy(ga_hip_event_t event)
{
    ENTER(hipEventDestroy);
    return hip(fg_event_destroy(event));
}

ga_hip_error_t hipEventRecord(ga_hip_event_t event, ga_hip_stream_t stream)
{
    ENTER(hipEventRecord);
    return hip(fg_event_record(event, stream_of(stream)));
}

ga_hip_error_t hipEventQuery(ga_hip_event_t event)
{
    ENTER(hipEventQuery);
    return hip(fg_event_query(event));
}

ga_hip_error_t hipEventSynchronize(ga_hip_event_t event)
{
    ENTER(hipEventSynchronize);
    return hip(fg_event_synchronize(event));
}

ga_hip_error_t hipStreamSynchronize(ga_hip_stream_t stream)
{
    ENTER(hipStreamSynchronize);
    return hip(fg_stream_synchronize(stream_of(stream)));
}

/* ---- Error names: the runtime's spelling, for the codes the fake can return.
 * They return the string itself and cannot fail, so they are not counted
 * calls and take no fault; a code the runtime does not know is
 * hipErrorUnknown, as the runtime answers. ---- */

static const struct {
    int code;
    const char *name, *text;
} errors[] = {
    {0, "hipSuccess", "no error"},
    {1, "hipErrorInvalidValue", "invalid argument"},
    {2, "hipErrorOutOfMemory", "out of memory"},
    {3, "hipErrorNotInitialized", "initialization error"},
    {4, "hipErrorDeinitialized", "driver shutting down"},
    {100, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {101, "hipErrorInvalidDevice", "invalid device ordinal"},
    {201, "hipErrorInvalidContext", "invalid device context"},
    {217, "hipErrorPeerAccessUnsupported", "peer access is not supported between these two devices"},
    {400, "hipErrorInvalidHandle", "invalid resource handle"},
    {500, "hipErrorNotFound", "named symbol not found"},
    {600, "hipErrorNotReady", "device not ready"},
    {704, "hipErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {801, "hipErrorNotSupported", "operation not supported"},
    {999, "hipErrorUnknown", "unknown error"},
};

static const char *error_text(ga_hip_error_t error, bool name)
{
    size_t n = sizeof(errors) / sizeof(errors[0]);
    for (size_t i = 0; i < n; i++)
        if (errors[i].code == (int)error)
            return name ? errors[i].name : errors[i].text;
    return name ? errors[n - 1].name : errors[n - 1].text;
}

const char *hipGetErrorName(ga_hip_error_t error)
{
    return error_text(error, true);
}

const char *hipGetErrorString(ga_hip_error_t error)
{
    return error_text(error, false);
}

/* ---- Virtual memory. ---- */

ga_hip_error_t hipMemGetAllocationGranularity(size_t *granularity, const ga_hip_mem_allocation_prop_t *prop,
                                              ga_hip_mem_granularity_flags_t option)
{
    ENTER(hipMemGetAllocationGranularity);
    int device = prop_device(prop, NULL);
    if (device < 0)
        return GA_HIP_ERROR_INVALID_VALUE;
    if (option != GA_HIP_MEM_ALLOC_GRANULARITY_MINIMUM && option != GA_HIP_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return hip(fg_violation(FG_INVALID_VALUE, "bad granularity option %d", (int)option));
    return hip(fg_granularity(device, granularity));
}

ga_hip_error_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr, unsigned long long flags)
{
    ENTER(hipMemAddressReserve);
    uint64_t a = 0;
    fg_rc_t rc = fg_va_reserve(ptr != NULL ? &a : NULL, size, alignment, (uintptr_t)addr, flags);
    if (rc == FG_OK)
        *ptr = (void *)(uintptr_t)a;
    return hip(rc);
}

ga_hip_error_t hipMemAddressFree(void *dev_ptr, size_t size)
{
    ENTER(hipMemAddressFree);
    return hip(fg_va_free((uintptr_t)dev_ptr, size));
}

#ifndef FAKE_HIP_NO_VMM
EXPORT ga_hipMemCreate_fn hipMemCreate;
ga_hip_error_t hipMemCreate(ga_hip_mem_handle_t *handle, size_t size, const ga_hip_mem_allocation_prop_t *prop,
                            unsigned long long flags)
{
    ENTER(hipMemCreate);
    bool exportable = false;
    int device = prop_device(prop, &exportable);
    if (device < 0)
        return GA_HIP_ERROR_INVALID_VALUE;
    uint64_t h = 0;
    fg_rc_t rc = fg_phys_create(handle != NULL ? &h : NULL, size, device, flags, exportable);
    if (rc == FG_OK)
        *handle = (ga_hip_mem_handle_t)(uintptr_t)h;
    return hip(rc);
}
#endif

ga_hip_error_t hipMemRelease(ga_hip_mem_handle_t handle)
{
    ENTER(hipMemRelease);
    return hip(fg_phys_release((uintptr_t)handle));
}

ga_hip_error_t hipMemMap(void *ptr, size_t size, size_t offset, ga_hip_mem_handle_t handle, unsigned long long flags)
{
    ENTER(hipMemMap);
    return hip(fg_map((uintptr_t)ptr, size, offset, (uintptr_t)handle, flags));
}

ga_hip_error_t hipMemUnmap(void *ptr, size_t size)
{
    ENTER(hipMemUnmap);
    return hip(fg_unmap((uintptr_t)ptr, size));
}

ga_hip_error_t hipMemSetAccess(void *ptr, size_t size, const ga_hip_mem_access_desc_t *desc, size_t count)
{
    ENTER(hipMemSetAccess);
    if (desc == NULL || count == 0)
        return hip(fg_violation(FG_INVALID_VALUE, "no access descriptor"));
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != GA_HIP_MEM_LOCATION_TYPE_DEVICE)
            return hip(
                fg_violation(FG_INVALID_VALUE, "descriptor %zu: location type %d", i, (int)desc[i].location.type));
        fg_rc_t rc = fg_set_access((uintptr_t)ptr, size, desc[i].location.id, (int)desc[i].flags);
        if (rc != FG_OK)
            return hip(rc);
    }
    return GA_HIP_SUCCESS;
}

/* ---- The stream-ordered pool. ---- */

#ifndef FAKE_HIP_NO_ASYNC
EXPORT ga_hipMallocAsync_fn hipMallocAsync;
ga_hip_error_t hipMallocAsync(void **dev_ptr, size_t size, ga_hip_stream_t stream)
{
    ENTER(hipMallocAsync);
    uint64_t a = 0;
    fg_rc_t rc = fg_malloc_async(dev_ptr != NULL ? &a : NULL, size, stream_of(stream));
    if (rc == FG_OK)
        *dev_ptr = (void *)(uintptr_t)a;
    return hip(rc);
}
#endif

ga_hip_error_t hipFreeAsync(void *dev_ptr, ga_hip_stream_t stream)
{
    ENTER(hipFreeAsync);
    return hip(fg_free_async((uintptr_t)dev_ptr, stream_of(stream)));
}

ga_hip_error_t hipDeviceGetDefaultMemPool(ga_hip_mempool_t *mem_pool, int device)
{
    ENTER(hipDeviceGetDefaultMemPool);
    void *p = NULL;
    fg_rc_t rc = fg_pool_default(mem_pool != NULL ? &p : NULL, device);
    if (rc == FG_OK)
        *mem_pool = p;
    return hip(rc);
}

/* hipMemPoolAttr values are the core's attribute numbers: 1..3 int values, 4..8 uint64_t
 * (hip_runtime_api.h). */
ga_hip_error_t hipMemPoolSetAttribute(ga_hip_mempool_t mem_pool, ga_hip_mempool_attr_t attr, void *value)
{
    ENTER(hipMemPoolSetAttribute);
    return hip(fg_pool_set_number(mem_pool, (int)attr, value));
}

ga_hip_error_t hipMemPoolGetAttribute(ga_hip_mempool_t mem_pool, ga_hip_mempool_attr_t attr, void *value)
{
    ENTER(hipMemPoolGetAttribute);
    return hip(fg_pool_get_number(mem_pool, (int)attr, value));
}

ga_hip_error_t hipMemPoolTrimTo(ga_hip_mempool_t mem_pool, size_t min_bytes_to_hold)
{
    ENTER(hipMemPoolTrimTo);
    return hip(fg_pool_trim(mem_pool, min_bytes_to_hold));
}

/* ---- Pinned host memory and copies. ---- */

EXPORT ga_hipHostFree_fn hipHostFree;
EXPORT ga_hipMemcpyDtoH_fn hipMemcpyDtoH;
EXPORT ga_hipMemcpyHtoD_fn hipMemcpyHtoD;

#ifndef FAKE_HIP_NO_HOST
EXPORT ga_hipHostMalloc_fn hipHostMalloc;
ga_hip_error_t hipHostMalloc(void **ptr, size_t size, unsigned int flags)
{
    ENTER(hipHostMalloc);
    /* Portable 0x1, Mapped 0x2, WriteCombined 0x4; NumaUser, Coherent, NonCoherent in the top bits. */
    return hip(fg_host_alloc_flags(ptr, size, flags, 0xe0000007u));
}
#endif

ga_hip_error_t hipHostFree(void *ptr)
{
    ENTER(hipHostFree);
    return hip(fg_host_free(ptr));
}

EXPORT ga_hipHostUnregister_fn hipHostUnregister;

#ifndef FAKE_HIP_NO_HOSTREG
EXPORT ga_hipHostRegister_fn hipHostRegister;
ga_hip_error_t hipHostRegister(void *host_ptr, size_t size_bytes, unsigned int flags)
{
    ENTER(hipHostRegister);
    /* Default 0x0, Portable 0x1, Mapped 0x2, IoMemory 0x4, ReadOnly 0x8. */
    return hip(fg_host_register(host_ptr, size_bytes, flags, 0xfu));
}
#endif

ga_hip_error_t hipHostUnregister(void *host_ptr)
{
    ENTER(hipHostUnregister);
    return hip(fg_host_unregister(host_ptr));
}

ga_hip_error_t hipMemcpyDtoH(void *dst, void *src, size_t size_bytes)
{
    ENTER(hipMemcpyDtoH);
    return hip(fg_copy_d2h(dst, (uintptr_t)src, size_bytes));
}

ga_hip_error_t hipMemcpyHtoD(void *dst, void *src, size_t size_bytes)
{
    ENTER(hipMemcpyHtoD);
    return hip(fg_copy_h2d((uintptr_t)dst, src, size_bytes));
}

/* ---- Peer access. ---- */

EXPORT ga_hipDeviceCanAccessPeer_fn hipDeviceCanAccessPeer;
EXPORT ga_hipDeviceEnablePeerAccess_fn hipDeviceEnablePeerAccess;

ga_hip_error_t hipDeviceCanAccessPeer(int *can_access_peer, int device_id, int peer_device_id)
{
    ENTER(hipDeviceCanAccessPeer);
    return hip(fg_can_access_peer(can_access_peer, device_id, peer_device_id));
}

/* The current device gains access to peer_device_id's memory. */
ga_hip_error_t hipDeviceEnablePeerAccess(int peer_device_id, unsigned int flags)
{
    ENTER(hipDeviceEnablePeerAccess);
    if (flags != 0)
        return hip(fg_violation(FG_INVALID_VALUE, "flags %u: must be 0", flags));
    return hip(fg_peer_enable_device(peer_device_id));
}

/* ---- Test controls (fake_hip_control.h). ---- */

EXPORT void fake_hip_reset(void)
{
    fg_reset();
    atomic_store(&fake_hip_version, FAKE_HIP_DEFAULT_VERSION);
}

FAKE_GPU_DEFINE_CONTROLS(fake_hip)

EXPORT void fake_hip_set_version(int v)
{
    atomic_store(&fake_hip_version, v);
}

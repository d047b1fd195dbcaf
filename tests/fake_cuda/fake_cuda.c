/*
 * fake_cuda.c: the CUDA driver API layer of the fake driver: exports the
 * driver symbols galloc resolves (with the exact versioned names and galloc's
 * own declarations from backend/cuda_api.h, so a signature that drifts from
 * the loader's typedef does not compile), checks CUDA's structs, maps CUDA's
 * special stream handles and the core's results to CUresult values, and
 * exports the fake_cuda_* test controls. All behaviour is the vendor-neutral
 * core's (fake_gpu.h).
 *
 * Variants (for the loader's required / optional rules), by define:
 *   FAKE_CUDA_NO_VMM    omit cuMemCreate (the VMM group is then incomplete)
 *   FAKE_CUDA_NO_ASYNC  omit cuMemAllocAsync
 *   FAKE_CUDA_NO_ALLOC  omit cuMemAlloc_v2 (a required symbol)
 *   FAKE_CUDA_NO_HOST   omit cuMemHostAlloc (the HOST group: no offload)
 *   FAKE_CUDA_NO_HOSTREG omit cuMemHostRegister_v2 (the HOSTREG group: no register path)
 *   FAKE_CUDA_NO_IPC    omit cuIpcOpenMemHandle_v2 (the IPC group: no sharing between processes)
 *   FAKE_CUDA_NO_GRAPH  omit cuStreamGetCaptureInfo_v2 (the GRAPH group: no capture graphs)
 */
#include <string.h>

#include "backend/cuda_api.h"
#include "tests/fake_cuda/fake_cuda_control.h"

#define EXPORT __attribute__((visibility("default")))

/* Count the call, apply fault rules: an injected failure changes nothing. */
#define ENTER(fn)                                                                                                      \
    do {                                                                                                               \
        int code_;                                                                                                     \
        if (fg_enter(#fn, &code_))                                                                                     \
            return (ga_cu_result_t)code_;                                                                              \
    } while (0)

static ga_cu_result_t cu(fg_rc_t rc)
{
    static const ga_cu_result_t map[] = {
        [FG_OK] = GA_CUDA_SUCCESS,
        [FG_INVALID_VALUE] = GA_CUDA_ERROR_INVALID_VALUE,
        [FG_OUT_OF_MEMORY] = GA_CUDA_ERROR_OUT_OF_MEMORY,
        [FG_NOT_INITIALIZED] = GA_CUDA_ERROR_NOT_INITIALIZED,
        [FG_INVALID_DEVICE] = GA_CUDA_ERROR_INVALID_DEVICE,
        [FG_INVALID_CONTEXT] = GA_CUDA_ERROR_INVALID_CONTEXT,
        [FG_INVALID_HANDLE] = GA_CUDA_ERROR_INVALID_HANDLE,
        [FG_NOT_READY] = GA_CUDA_ERROR_NOT_READY,
        [FG_NOT_SUPPORTED] = GA_CUDA_ERROR_NOT_SUPPORTED,
        [FG_PEER_UNSUPPORTED] = GA_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED,
        [FG_PEER_ALREADY_ENABLED] = GA_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED,
        [FG_CAPTURE_UNSUPPORTED] = GA_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        [FG_CAPTURED_EVENT] = GA_CUDA_ERROR_CAPTURED_EVENT,
        [FG_HOST_ALREADY_REGISTERED] = GA_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        [FG_HOST_NOT_REGISTERED] = GA_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
    };
    return map[rc];
}

/* NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD all mean the context's
 * default stream to the core. */
static uintptr_t stream_of(ga_cu_stream_t s)
{
    return s == GA_CU_STREAM_LEGACY || s == GA_CU_STREAM_PER_THREAD ? 0 : (uintptr_t)s;
}

/* The allocation properties galloc may pass: pinned memory on a device, no
 * Windows data, reserved bytes zero. Returns the device or -1 (violation);
 * *exportable (when not NULL): a POSIX file descriptor type was requested. */
static int prop_device(const ga_cu_mem_allocation_prop_t *p, bool *exportable)
{
    if (p == NULL) {
        fg_violation(FG_INVALID_VALUE, "prop is NULL");
        return -1;
    }
    static const unsigned char zero[4];
    if (p->type != GA_CU_MEM_ALLOCATION_TYPE_PINNED || p->location.type != GA_CU_MEM_LOCATION_TYPE_DEVICE ||
        (p->requested_handle_types != GA_CU_MEM_HANDLE_TYPE_NONE &&
         p->requested_handle_types != GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) ||
        p->win32_handle_meta_data != NULL || memcmp(p->alloc_flags.reserved, zero, sizeof(zero)) != 0) {
        fg_violation(FG_INVALID_VALUE, "prop: type %d, location type %d, handle types %d: want pinned device memory",
                     (int)p->type, (int)p->location.type, (int)p->requested_handle_types);
        return -1;
    }
    if (exportable != NULL)
        *exportable = p->requested_handle_types == GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return p->location.id;
}

/* ---- Exported driver symbols. ---- */

EXPORT ga_cuInit_fn cuInit;
EXPORT ga_cuDeviceGet_fn cuDeviceGet;
EXPORT ga_cuDeviceGetCount_fn cuDeviceGetCount;
EXPORT ga_cuDevicePrimaryCtxRetain_fn cuDevicePrimaryCtxRetain;
EXPORT ga_cuDevicePrimaryCtxRelease_v2_fn cuDevicePrimaryCtxRelease_v2;
EXPORT ga_cuCtxGetCurrent_fn cuCtxGetCurrent;
EXPORT ga_cuCtxSetCurrent_fn cuCtxSetCurrent;
EXPORT ga_cuCtxSynchronize_fn cuCtxSynchronize;
EXPORT ga_cuMemFree_v2_fn cuMemFree_v2;
EXPORT ga_cuMemGetInfo_v2_fn cuMemGetInfo_v2;
EXPORT ga_cuEventCreate_fn cuEventCreate;
EXPORT ga_cuEventDestroy_v2_fn cuEventDestroy_v2;
EXPORT ga_cuEventRecord_fn cuEventRecord;
EXPORT ga_cuEventQuery_fn cuEventQuery;
EXPORT ga_cuEventSynchronize_fn cuEventSynchronize;
EXPORT ga_cuStreamSynchronize_fn cuStreamSynchronize;
EXPORT ga_cuGetErrorName_fn cuGetErrorName;
EXPORT ga_cuGetErrorString_fn cuGetErrorString;
EXPORT ga_cuMemGetAllocationGranularity_fn cuMemGetAllocationGranularity;
EXPORT ga_cuMemAddressReserve_fn cuMemAddressReserve;
EXPORT ga_cuMemAddressFree_fn cuMemAddressFree;
EXPORT ga_cuMemRelease_fn cuMemRelease;
EXPORT ga_cuMemMap_fn cuMemMap;
EXPORT ga_cuMemUnmap_fn cuMemUnmap;
EXPORT ga_cuMemSetAccess_fn cuMemSetAccess;
EXPORT ga_cuMemFreeAsync_fn cuMemFreeAsync;
EXPORT ga_cuDeviceGetDefaultMemPool_fn cuDeviceGetDefaultMemPool;
EXPORT ga_cuMemPoolSetAttribute_fn cuMemPoolSetAttribute;
EXPORT ga_cuMemPoolGetAttribute_fn cuMemPoolGetAttribute;
EXPORT ga_cuMemPoolTrimTo_fn cuMemPoolTrimTo;

ga_cu_result_t cuInit(unsigned int flags)
{
    ENTER(cuInit);
    return cu(fg_init(flags));
}

ga_cu_result_t cuDeviceGet(ga_cu_device_t *device, int ordinal)
{
    ENTER(cuDeviceGet);
    return cu(fg_device_get(device, ordinal));
}

ga_cu_result_t cuDeviceGetCount(int *count)
{
    ENTER(cuDeviceGetCount);
    return cu(fg_device_count(count));
}

ga_cu_result_t cuDevicePrimaryCtxRetain(ga_cu_context_t *pctx, ga_cu_device_t dev)
{
    ENTER(cuDevicePrimaryCtxRetain);
    void *c = NULL;
    fg_rc_t rc = fg_ctx_retain(pctx != NULL ? &c : NULL, dev);
    if (rc == FG_OK)
        *pctx = c;
    return cu(rc);
}

ga_cu_result_t cuDevicePrimaryCtxRelease_v2(ga_cu_device_t dev)
{
    ENTER(cuDevicePrimaryCtxRelease_v2);
    return cu(fg_ctx_release(dev));
}

ga_cu_result_t cuCtxGetCurrent(ga_cu_context_t *pctx)
{
    ENTER(cuCtxGetCurrent);
    void *c = NULL;
    fg_rc_t rc = fg_ctx_get(pctx != NULL ? &c : NULL);
    if (rc == FG_OK)
        *pctx = c;
    return cu(rc);
}

ga_cu_result_t cuCtxSetCurrent(ga_cu_context_t ctx)
{
    ENTER(cuCtxSetCurrent);
    return cu(fg_ctx_set(ctx));
}

ga_cu_result_t cuCtxSynchronize(void)
{
    ENTER(cuCtxSynchronize);
    return cu(fg_ctx_synchronize());
}

#ifndef FAKE_CUDA_NO_ALLOC
EXPORT ga_cuMemAlloc_v2_fn cuMemAlloc_v2;
ga_cu_result_t cuMemAlloc_v2(ga_cu_deviceptr_t *dptr, size_t bytesize)
{
    ENTER(cuMemAlloc_v2);
    uint64_t a = 0;
    fg_rc_t rc = fg_mem_alloc(dptr != NULL ? &a : NULL, bytesize);
    if (rc == FG_OK)
        *dptr = a;
    return cu(rc);
}
#endif

ga_cu_result_t cuMemFree_v2(ga_cu_deviceptr_t dptr)
{
    ENTER(cuMemFree_v2);
    return cu(fg_mem_free(dptr));
}

ga_cu_result_t cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    ENTER(cuMemGetInfo_v2);
    return cu(fg_mem_info(free_bytes, total_bytes));
}

ga_cu_result_t cuEventCreate(ga_cu_event_t *event, unsigned int flags)
{
    ENTER(cuEventCreate);
    /* BLOCKING_SYNC 0x1, DISABLE_TIMING 0x2, INTERPROCESS 0x4. */
    void *e = NULL;
    fg_rc_t rc = fg_event_create_flags(event != NULL ? &e : NULL, flags, 0x7u);
    if (rc == FG_OK)
        *event = e;
    return cu(rc);
}

ga_cu_result_t cuEventDestroy_v2(ga_cu_event_t event)
{
    ENTER(cuEventDestroy_v2);
    return cu(fg_event_destroy(event));
}

ga_cu_result_t cuEventRecord(ga_cu_event_t event, ga_cu_stream_t stream)
{
    ENTER(cuEventRecord);
    return cu(fg_event_record(event, stream_of(stream)));
}

ga_cu_result_t cuEventQuery(ga_cu_event_t event)
{
    ENTER(cuEventQuery);
    return cu(fg_event_query(event));
}

ga_cu_result_t cuEventSynchronize(ga_cu_event_t event)
{
    ENTER(cuEventSynchronize);
    return cu(fg_event_synchronize(event));
}

ga_cu_result_t cuStreamSynchronize(ga_cu_stream_t stream)
{
    ENTER(cuStreamSynchronize);
    return cu(fg_stream_synchronize(stream_of(stream)));
}

/* ---- Error names: the driver's spelling, for the codes the fake can return. ---- */

static const struct {
    int code;
    const char *name, *text;
} errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static ga_cu_result_t error_text(ga_cu_result_t error, const char **str, bool name)
{
    if (str == NULL)
        return cu(fg_violation(FG_INVALID_VALUE, "pStr is NULL"));
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        if (errors[i].code == (int)error) {
            *str = name ? errors[i].name : errors[i].text;
            return GA_CUDA_SUCCESS;
        }
    }
    *str = NULL; /* as the driver does for a code it does not know */
    return GA_CUDA_ERROR_INVALID_VALUE;
}

ga_cu_result_t cuGetErrorName(ga_cu_result_t error, const char **str)
{
    ENTER(cuGetErrorName);
    return error_text(error, str, true);
}

ga_cu_result_t cuGetErrorString(ga_cu_result_t error, const char **str)
{
    ENTER(cuGetErrorString);
    return error_text(error, str, false);
}

/* ---- Virtual memory. ---- */

ga_cu_result_t cuMemGetAllocationGranularity(size_t *granularity, const ga_cu_mem_allocation_prop_t *prop,
                                             ga_cu_mem_granularity_flags_t option)
{
    ENTER(cuMemGetAllocationGranularity);
    int device = prop_device(prop, NULL);
    if (device < 0)
        return GA_CUDA_ERROR_INVALID_VALUE;
    if (option != GA_CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != GA_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
        return cu(fg_violation(FG_INVALID_VALUE, "bad granularity option %d", (int)option));
    return cu(fg_granularity(device, granularity));
}

ga_cu_result_t cuMemAddressReserve(ga_cu_deviceptr_t *ptr, size_t size, size_t alignment, ga_cu_deviceptr_t addr,
                                   unsigned long long flags)
{
    ENTER(cuMemAddressReserve);
    uint64_t a = 0;
    fg_rc_t rc = fg_va_reserve(ptr != NULL ? &a : NULL, size, alignment, addr, flags);
    if (rc == FG_OK)
        *ptr = a;
    return cu(rc);
}

ga_cu_result_t cuMemAddressFree(ga_cu_deviceptr_t ptr, size_t size)
{
    ENTER(cuMemAddressFree);
    return cu(fg_va_free(ptr, size));
}

#ifndef FAKE_CUDA_NO_VMM
EXPORT ga_cuMemCreate_fn cuMemCreate;
ga_cu_result_t cuMemCreate(ga_cu_mem_handle_t *handle, size_t size, const ga_cu_mem_allocation_prop_t *prop,
                           unsigned long long flags)
{
    ENTER(cuMemCreate);
    bool exportable = false;
    int device = prop_device(prop, &exportable);
    if (device < 0)
        return GA_CUDA_ERROR_INVALID_VALUE;
    uint64_t h = 0;
    fg_rc_t rc = fg_phys_create(handle != NULL ? &h : NULL, size, device, flags, exportable);
    if (rc == FG_OK)
        *handle = h;
    return cu(rc);
}
#endif

ga_cu_result_t cuMemRelease(ga_cu_mem_handle_t handle)
{
    ENTER(cuMemRelease);
    return cu(fg_phys_release(handle));
}

ga_cu_result_t cuMemMap(ga_cu_deviceptr_t ptr, size_t size, size_t offset, ga_cu_mem_handle_t handle,
                        unsigned long long flags)
{
    ENTER(cuMemMap);
    return cu(fg_map(ptr, size, offset, handle, flags));
}

ga_cu_result_t cuMemUnmap(ga_cu_deviceptr_t ptr, size_t size)
{
    ENTER(cuMemUnmap);
    return cu(fg_unmap(ptr, size));
}

ga_cu_result_t cuMemSetAccess(ga_cu_deviceptr_t ptr, size_t size, const ga_cu_mem_access_desc_t *desc, size_t count)
{
    ENTER(cuMemSetAccess);
    if (desc == NULL || count == 0)
        return cu(fg_violation(FG_INVALID_VALUE, "no access descriptor"));
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != GA_CU_MEM_LOCATION_TYPE_DEVICE)
            return cu(
                fg_violation(FG_INVALID_VALUE, "descriptor %zu: location type %d", i, (int)desc[i].location.type));
        fg_rc_t rc = fg_set_access(ptr, size, desc[i].location.id, (int)desc[i].flags);
        if (rc != FG_OK)
            return cu(rc);
    }
    return GA_CUDA_SUCCESS;
}

/* ---- The stream-ordered pool. ---- */

#ifndef FAKE_CUDA_NO_ASYNC
EXPORT ga_cuMemAllocAsync_fn cuMemAllocAsync;
ga_cu_result_t cuMemAllocAsync(ga_cu_deviceptr_t *dptr, size_t bytesize, ga_cu_stream_t stream)
{
    ENTER(cuMemAllocAsync);
    uint64_t a = 0;
    fg_rc_t rc = fg_malloc_async(dptr != NULL ? &a : NULL, bytesize, stream_of(stream));
    if (rc == FG_OK)
        *dptr = a;
    return cu(rc);
}
#endif

ga_cu_result_t cuMemFreeAsync(ga_cu_deviceptr_t dptr, ga_cu_stream_t stream)
{
    ENTER(cuMemFreeAsync);
    return cu(fg_free_async(dptr, stream_of(stream)));
}

ga_cu_result_t cuDeviceGetDefaultMemPool(ga_cu_mempool_t *pool, ga_cu_device_t dev)
{
    ENTER(cuDeviceGetDefaultMemPool);
    void *p = NULL;
    fg_rc_t rc = fg_pool_default(pool != NULL ? &p : NULL, dev);
    if (rc == FG_OK)
        *pool = p;
    return cu(rc);
}

/* CU_MEMPOOL_ATTR_* are the core's attribute numbers: 1..3 int values, 4..8 cuuint64_t (cuda.h). */
ga_cu_result_t cuMemPoolSetAttribute(ga_cu_mempool_t pool, ga_cu_mempool_attr_t attr, void *value)
{
    ENTER(cuMemPoolSetAttribute);
    return cu(fg_pool_set_number(pool, (int)attr, value));
}

ga_cu_result_t cuMemPoolGetAttribute(ga_cu_mempool_t pool, ga_cu_mempool_attr_t attr, void *value)
{
    ENTER(cuMemPoolGetAttribute);
    return cu(fg_pool_get_number(pool, (int)attr, value));
}

ga_cu_result_t cuMemPoolTrimTo(ga_cu_mempool_t pool, size_t min_bytes_to_keep)
{
    ENTER(cuMemPoolTrimTo);
    return cu(fg_pool_trim(pool, min_bytes_to_keep));
}

/* ---- Pinned host memory and copies. ---- */

EXPORT ga_cuMemFreeHost_fn cuMemFreeHost;
EXPORT ga_cuMemcpyDtoH_v2_fn cuMemcpyDtoH_v2;
EXPORT ga_cuMemcpyHtoD_v2_fn cuMemcpyHtoD_v2;

#ifndef FAKE_CUDA_NO_HOST
EXPORT ga_cuMemHostAlloc_fn cuMemHostAlloc;
ga_cu_result_t cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    ENTER(cuMemHostAlloc);
    /* PORTABLE 0x1, DEVICEMAP 0x2, WRITECOMBINED 0x4. */
    return cu(fg_host_alloc_flags(pp, bytesize, flags, 0x7u));
}
#endif

ga_cu_result_t cuMemFreeHost(void *p)
{
    ENTER(cuMemFreeHost);
    return cu(fg_host_free(p));
}

EXPORT ga_cuMemHostUnregister_fn cuMemHostUnregister;

#ifndef FAKE_CUDA_NO_HOSTREG
EXPORT ga_cuMemHostRegister_v2_fn cuMemHostRegister_v2;
ga_cu_result_t cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags)
{
    ENTER(cuMemHostRegister_v2);
    /* PORTABLE 0x1, DEVICEMAP 0x2, IOMEMORY 0x4, READ_ONLY 0x8. */
    return cu(fg_host_register(p, bytesize, flags, 0xfu));
}
#endif

ga_cu_result_t cuMemHostUnregister(void *p)
{
    ENTER(cuMemHostUnregister);
    return cu(fg_host_unregister(p));
}

ga_cu_result_t cuMemcpyDtoH_v2(void *dst_host, ga_cu_deviceptr_t src_device, size_t byte_count)
{
    ENTER(cuMemcpyDtoH_v2);
    return cu(fg_copy_d2h(dst_host, src_device, byte_count));
}

ga_cu_result_t cuMemcpyHtoD_v2(ga_cu_deviceptr_t dst_device, const void *src_host, size_t byte_count)
{
    ENTER(cuMemcpyHtoD_v2);
    return cu(fg_copy_h2d(dst_device, src_host, byte_count));
}

/* ---- Peer access. ---- */

EXPORT ga_cuDeviceCanAccessPeer_fn cuDeviceCanAccessPeer;
EXPORT ga_cuCtxEnablePeerAccess_fn cuCtxEnablePeerAccess;

ga_cu_result_t cuDeviceCanAccessPeer(int *can_access_peer, ga_cu_device_t dev, ga_cu_device_t peer_dev)
{
    ENTER(cuDeviceCanAccessPeer);
    return cu(fg_can_access_peer(can_access_peer, dev, peer_dev));
}

ga_cu_result_t cuCtxEnablePeerAccess(ga_cu_context_t peer_context, unsigned int flags)
{
    ENTER(cuCtxEnablePeerAccess);
    if (flags != 0)
        return cu(fg_violation(FG_INVALID_VALUE, "flags %u: must be 0", flags));
    return cu(fg_peer_enable_ctx(peer_context));
}

/* ---- Sharing between processes. ---- */

EXPORT ga_cuIpcGetMemHandle_fn cuIpcGetMemHandle;
EXPORT ga_cuIpcCloseMemHandle_fn cuIpcCloseMemHandle;
EXPORT ga_cuMemExportToShareableHandle_fn cuMemExportToShareableHandle;
EXPORT ga_cuMemImportFromShareableHandle_fn cuMemImportFromShareableHandle;

ga_cu_result_t cuIpcGetMemHandle(ga_cu_ipc_mem_handle_t *handle, ga_cu_deviceptr_t dptr)
{
    ENTER(cuIpcGetMemHandle);
    return cu(fg_ipc_get(dptr, handle != NULL ? handle->reserved : NULL));
}

#ifndef FAKE_CUDA_NO_IPC
EXPORT ga_cuIpcOpenMemHandle_v2_fn cuIpcOpenMemHandle_v2;
ga_cu_result_t cuIpcOpenMemHandle_v2(ga_cu_deviceptr_t *pdptr, ga_cu_ipc_mem_handle_t handle, unsigned int flags)
{
    ENTER(cuIpcOpenMemHandle_v2);
    uint64_t a = 0;
    fg_rc_t rc = fg_ipc_open(pdptr != NULL ? &a : NULL, handle.reserved, flags);
    if (rc == FG_OK)
        *pdptr = a;
    return cu(rc);
}
#endif

ga_cu_result_t cuIpcCloseMemHandle(ga_cu_deviceptr_t dptr)
{
    ENTER(cuIpcCloseMemHandle);
    return cu(fg_ipc_close(dptr));
}

/* POSIX file descriptors only: shareable_handle is an int *, os_handle the descriptor cast to a pointer. */
ga_cu_result_t cuMemExportToShareableHandle(void *shareable_handle, ga_cu_mem_handle_t handle,
                                            ga_cu_mem_handle_type_t handle_type, unsigned long long flags)
{
    ENTER(cuMemExportToShareableHandle);
    if (handle_type != GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || flags != 0)
        return cu(fg_violation(FG_INVALID_VALUE, "handle type %d, flags %llu: want a POSIX file descriptor, flags 0",
                               (int)handle_type, flags));
    return cu(fg_export_fd(handle, shareable_handle));
}

ga_cu_result_t cuMemImportFromShareableHandle(ga_cu_mem_handle_t *handle, void *os_handle,
                                              ga_cu_mem_handle_type_t sh_handle_type)
{
    ENTER(cuMemImportFromShareableHandle);
    if (sh_handle_type != GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return cu(fg_violation(FG_INVALID_VALUE, "handle type %d: want a POSIX file descriptor", (int)sh_handle_type));
    uint64_t h = 0;
    fg_rc_t rc = fg_import_fd(handle != NULL ? &h : NULL, (int)(uintptr_t)os_handle);
    if (rc == FG_OK)
        *handle = h;
    return cu(rc);
}

/* ---- Stream capture graphs (the core's Capture model). ---- */

#ifndef FAKE_CUDA_NO_GRAPH
EXPORT ga_cuStreamGetCaptureInfo_v2_fn cuStreamGetCaptureInfo_v2;
/* The optional outputs may be NULL; the frontier array is the core's. */
ga_cu_result_t cuStreamGetCaptureInfo_v2(ga_cu_stream_t stream, ga_cu_stream_capture_status_t *capture_status_out,
                                         uint64_t *id_out, ga_cu_graph_t *graph_out,
                                         const ga_cu_graph_node_t **dependencies_out, size_t *num_dependencies_out)
{
    ENTER(cuStreamGetCaptureInfo_v2);
    int st = 0;
    void *graph = NULL;
    void *const *deps = NULL;
    fg_rc_t rc = fg_capture_info(stream_of(stream), capture_status_out != NULL ? &st : NULL, id_out,
                                 graph_out != NULL ? &graph : NULL, dependencies_out != NULL ? &deps : NULL,
                                 num_dependencies_out);
    if (rc == FG_OK) {
        *capture_status_out = (ga_cu_stream_capture_status_t)st;
        if (graph_out != NULL)
            *graph_out = graph;
        if (dependencies_out != NULL)
            *dependencies_out = (const ga_cu_graph_node_t *)deps;
    }
    return cu(rc);
}
#endif

EXPORT ga_cuGraphNodeGetDependencies_fn cuGraphNodeGetDependencies;
ga_cu_result_t cuGraphNodeGetDependencies(ga_cu_graph_node_t node, ga_cu_graph_node_t *dependencies,
                                          size_t *num_dependencies)
{
    ENTER(cuGraphNodeGetDependencies);
    return cu(fg_node_deps(node, (void **)dependencies, num_dependencies));
}

/* ---- Test controls (fake_cuda_control.h). ---- */

EXPORT void fake_cuda_reset(void)
{
    fg_reset();
}

FAKE_GPU_DEFINE_CONTROLS(fake_cuda)

/*
 * vendor_cuda.c: the CUDA driver as a GPU vendor (backend/gpu.h) and the
 * "cuda" backend's ops table. Each primitive is one driver call through the
 * pointers the loader (backend/dl_table.c) filled from this file's symbol
 * table; all logic lives in backend/gpu*.c.
 *
 * Streams are the caller's CUstream values (galloc_stream_t is the CUstream
 * cast to an integer, 0 the legacy default stream) and are passed through.
 * Physical memory is pinned device memory located on this device, exportable
 * as a POSIX file descriptor (export_page; PyTorch's expandable segments
 * request the same type, with no fallback), read-write for this device and for
 * every peer enable_peer_access added (as PyTorch's ExpandableSegment grants
 * its peers).
 */
#include <stdio.h>
#include <string.h>

#include "backend/cuda_api.h"
#include "backend/gpu.h"

/* The vendor state: one loaded library and the device it serves. */
typedef struct cuda_vs {
    ga_dl_lib_t lib;               /* the loaded library (first: the loader's) */
    GA_CUDA_SYMBOLS(GA_DL_POINTER) /* resolved driver symbols */
    ga_cu_device_t dev;            /* from cuDeviceGet */
    int ordinal;                   /* device index (CUmemLocation ids are ordinals) */
    ga_cu_mempool_t pool;          /* the device's default pool, once found */
} cuda_vs_t;

#define CUDA_SYMBOL_(group, sym) GA_DL_SYMBOL(cuda_vs_t, group, sym)
static const ga_dl_symbol_t cuda_symbols[] = {GA_CUDA_SYMBOLS(CUDA_SYMBOL_)};
#undef CUDA_SYMBOL_

const ga_dl_library_t ga_cuda_library = {
    .what = "driver library",
    .path = GA_CUDA_DEFAULT_LIBRARY,
    .syms = cuda_symbols,
    .count = sizeof(cuda_symbols) / sizeof(cuda_symbols[0]),
    .size = sizeof(cuda_vs_t),
};

#define VS(vs) ((cuda_vs_t *)(vs))
#define CUPTR(a) ((ga_cu_deviceptr_t)(a))
#define CUSTREAM(s) ((ga_cu_stream_t)(s))

static ga_gpu_rc_t cuda_init(void *vs)
{
    return VS(vs)->cuInit(0);
}

static ga_gpu_rc_t cuda_device_count(void *vs, int *count)
{
    return VS(vs)->cuDeviceGetCount(count);
}

static ga_gpu_rc_t cuda_device_get(void *vs, int ordinal)
{
    VS(vs)->ordinal = ordinal;
    return VS(vs)->cuDeviceGet(&VS(vs)->dev, ordinal);
}

static ga_gpu_rc_t cuda_ctx_retain(void *vs, uintptr_t *ctx)
{
    ga_cu_context_t c = NULL;
    ga_cu_result_t rc = VS(vs)->cuDevicePrimaryCtxRetain(&c, VS(vs)->dev);
    *ctx = (uintptr_t)c;
    return rc;
}

static ga_gpu_rc_t cuda_ctx_release(void *vs)
{
    return VS(vs)->cuDevicePrimaryCtxRelease_v2(VS(vs)->dev);
}

static ga_gpu_rc_t cuda_ctx_get(void *vs, uintptr_t *ctx)
{
    ga_cu_context_t c = NULL;
    ga_cu_result_t rc = VS(vs)->cuCtxGetCurrent(&c);
    *ctx = (uintptr_t)c;
    return rc;
}

static ga_gpu_rc_t cuda_ctx_set(void *vs, uintptr_t ctx)
{
    return VS(vs)->cuCtxSetCurrent((ga_cu_context_t)ctx);
}

static ga_gpu_rc_t cuda_mem_alloc(void *vs, size_t bytes, uintptr_t *addr)
{
    ga_cu_deviceptr_t p = 0;
    ga_cu_result_t rc = VS(vs)->cuMemAlloc_v2(&p, bytes);
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t cuda_mem_free(void *vs, uintptr_t addr)
{
    return VS(vs)->cuMemFree_v2(CUPTR(addr));
}

static ga_gpu_rc_t cuda_mem_info(void *vs, size_t *free_bytes, size_t *total_bytes)
{
    return VS(vs)->cuMemGetInfo_v2(free_bytes, total_bytes);
}

/* ---- Virtual memory. ---- */

static ga_cu_mem_allocation_prop_t device_prop(const void *vs)
{
    ga_cu_mem_allocation_prop_t p = {0};
    p.type = GA_CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requested_handle_types = GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; /* so export_page can share it */
    p.location.type = GA_CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = ((const cuda_vs_t *)vs)->ordinal;
    return p;
}

static ga_gpu_rc_t cuda_granularity(void *vs, size_t *bytes)
{
    ga_cu_mem_allocation_prop_t p = device_prop(vs);
    return VS(vs)->cuMemGetAllocationGranularity(bytes, &p, GA_CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

static ga_gpu_rc_t cuda_va_reserve(void *vs, size_t bytes, uintptr_t *addr)
{
    ga_cu_deviceptr_t p = 0;
    ga_cu_result_t rc = VS(vs)->cuMemAddressReserve(&p, bytes, 0, 0, 0); /* default alignment, no hint */
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t cuda_va_free(void *vs, uintptr_t addr, size_t bytes)
{
    return VS(vs)->cuMemAddressFree(CUPTR(addr), bytes);
}

static ga_gpu_rc_t cuda_phys_create(void *vs, size_t bytes, uint64_t *handle)
{
    ga_cu_mem_allocation_prop_t p = device_prop(vs);
    ga_cu_mem_handle_t h = 0;
    ga_cu_result_t rc = VS(vs)->cuMemCreate(&h, bytes, &p, 0);
    *handle = h;
    return rc;
}

static ga_gpu_rc_t cuda_phys_release(void *vs, uint64_t handle)
{
    return VS(vs)->cuMemRelease(handle);
}

static ga_gpu_rc_t cuda_phys_map(void *vs, uintptr_t addr, size_t bytes, uint64_t handle)
{
    return VS(vs)->cuMemMap(CUPTR(addr), bytes, 0, handle, 0);
}

static ga_gpu_rc_t cuda_phys_unmap(void *vs, uintptr_t addr, size_t bytes)
{
    return VS(vs)->cuMemUnmap(CUPTR(addr), bytes);
}

/* Descriptors on the stack: a process has at most this many devices to name. */
#define CUDA_MAX_ACCESS 64

static ga_gpu_rc_t cuda_set_access(void *vs, uintptr_t addr, size_t bytes, const int *peers, size_t n_peers)
{
    ga_cu_mem_access_desc_t desc[CUDA_MAX_ACCESS];
    size_t n = 0;
    desc[n++] = (ga_cu_mem_access_desc_t){.location = {.type = GA_CU_MEM_LOCATION_TYPE_DEVICE, .id = VS(vs)->ordinal},
                                          .flags = GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (size_t i = 0; i < n_peers && n < CUDA_MAX_ACCESS; i++)
        desc[n++] = (ga_cu_mem_access_desc_t){.location = {.type = GA_CU_MEM_LOCATION_TYPE_DEVICE, .id = peers[i]},
                                              .flags = GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    return VS(vs)->cuMemSetAccess(CUPTR(addr), bytes, desc, n);
}

/* ---- Events and synchronization. ---- */

static ga_gpu_rc_t cuda_event_create(void *vs, uintptr_t *event)
{
    ga_cu_event_t e = NULL;
    ga_cu_result_t rc = VS(vs)->cuEventCreate(&e, GA_CU_EVENT_DISABLE_TIMING);
    *event = (uintptr_t)e;
    return rc;
}

static ga_gpu_rc_t cuda_event_destroy(void *vs, uintptr_t event)
{
    return VS(vs)->cuEventDestroy_v2((ga_cu_event_t)event);
}

static ga_gpu_rc_t cuda_event_record(void *vs, uintptr_t event, uintptr_t stream)
{
    return VS(vs)->cuEventRecord((ga_cu_event_t)event, CUSTREAM(stream));
}

static ga_gpu_rc_t cuda_event_query(void *vs, uintptr_t event)
{
    return VS(vs)->cuEventQuery((ga_cu_event_t)event);
}

static ga_gpu_rc_t cuda_event_sync(void *vs, uintptr_t event)
{
    return VS(vs)->cuEventSynchronize((ga_cu_event_t)event);
}

static ga_gpu_rc_t cuda_stream_sync(void *vs, uintptr_t stream)
{
    return VS(vs)->cuStreamSynchronize(CUSTREAM(stream));
}

static ga_gpu_rc_t cuda_device_sync(void *vs)
{
    return VS(vs)->cuCtxSynchronize();
}

/* ---- The default stream-ordered pool. ---- */

static ga_cu_mempool_attr_t pool_attr(ga_gpu_pool_attr_t a)
{
    switch (a) {
    case GA_GPU_POOL_RELEASE_THRESHOLD: return GA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    case GA_GPU_POOL_RESERVED_CURRENT: return GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    case GA_GPU_POOL_RESERVED_HIGH: return GA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
    case GA_GPU_POOL_USED_CURRENT: return GA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    case GA_GPU_POOL_USED_HIGH: break;
    }
    return GA_CU_MEMPOOL_ATTR_USED_MEM_HIGH;
}

static ga_gpu_rc_t cuda_pool_get(void *vs)
{
    return VS(vs)->cuDeviceGetDefaultMemPool(&VS(vs)->pool, VS(vs)->dev);
}

/* Attributes 4..8 are cuuint64_t values (cuda.h). */
static ga_gpu_rc_t cuda_pool_set_attr(void *vs, ga_gpu_pool_attr_t attr, uint64_t value)
{
    return VS(vs)->cuMemPoolSetAttribute(VS(vs)->pool, pool_attr(attr), &value);
}

static ga_gpu_rc_t cuda_pool_get_attr(void *vs, ga_gpu_pool_attr_t attr, uint64_t *value)
{
    return VS(vs)->cuMemPoolGetAttribute(VS(vs)->pool, pool_attr(attr), value);
}

static ga_gpu_rc_t cuda_pool_trim(void *vs, size_t keep_bytes)
{
    return VS(vs)->cuMemPoolTrimTo(VS(vs)->pool, keep_bytes);
}

static ga_gpu_rc_t cuda_malloc_async(void *vs, size_t bytes, uintptr_t stream, uintptr_t *addr)
{
    ga_cu_deviceptr_t p = 0;
    ga_cu_result_t rc = VS(vs)->cuMemAllocAsync(&p, bytes, CUSTREAM(stream));
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t cuda_free_async(void *vs, uintptr_t addr, uintptr_t stream)
{
    return VS(vs)->cuMemFreeAsync(CUPTR(addr), CUSTREAM(stream));
}

/* ---- Pinned host memory and copies. ---- */

static ga_gpu_rc_t cuda_host_alloc(void *vs, size_t bytes, void **ptr)
{
    return VS(vs)->cuMemHostAlloc(ptr, bytes, GA_CU_MEMHOSTALLOC_PORTABLE);
}

static ga_gpu_rc_t cuda_host_free(void *vs, void *ptr)
{
    return VS(vs)->cuMemFreeHost(ptr);
}

static ga_gpu_rc_t cuda_host_register(void *vs, void *ptr, size_t bytes)
{
    return VS(vs)->cuMemHostRegister_v2(ptr, bytes, GA_CU_MEMHOSTREGISTER_PORTABLE);
}

static ga_gpu_rc_t cuda_host_unregister(void *vs, void *ptr)
{
    return VS(vs)->cuMemHostUnregister(ptr);
}

static ga_gpu_rc_t cuda_copy_d2h(void *vs, void *dst, uintptr_t src, size_t bytes)
{
    return VS(vs)->cuMemcpyDtoH_v2(dst, CUPTR(src), bytes);
}

static ga_gpu_rc_t cuda_copy_h2d(void *vs, uintptr_t dst, const void *src, size_t bytes)
{
    return VS(vs)->cuMemcpyHtoD_v2(CUPTR(dst), src, bytes);
}

/* ---- Peer access. ---- */

static ga_gpu_rc_t cuda_peer_can_access(void *vs, int peer, int *can)
{
    ga_cu_device_t d = 0;
    ga_cu_result_t rc = VS(vs)->cuDeviceGet(&d, peer);
    return rc != GA_CUDA_SUCCESS ? rc : VS(vs)->cuDeviceCanAccessPeer(can, d, VS(vs)->dev);
}

static ga_gpu_rc_t cuda_peer_ctx_retain(void *vs, int peer, uintptr_t *ctx)
{
    ga_cu_device_t d = 0;
    ga_cu_context_t c = NULL;
    ga_cu_result_t rc = VS(vs)->cuDeviceGet(&d, peer);
    if (rc == GA_CUDA_SUCCESS)
        rc = VS(vs)->cuDevicePrimaryCtxRetain(&c, d);
    *ctx = (uintptr_t)c;
    return rc;
}

static ga_gpu_rc_t cuda_peer_ctx_release(void *vs, int peer)
{
    ga_cu_device_t d = 0;
    ga_cu_result_t rc = VS(vs)->cuDeviceGet(&d, peer);
    return rc != GA_CUDA_SUCCESS ? rc : VS(vs)->cuDevicePrimaryCtxRelease_v2(d);
}

/* Another allocator (or the framework) may have enabled the pair already: the
 * access galloc wants is there either way. */
static ga_gpu_rc_t cuda_peer_enable(void *vs, uintptr_t ctx)
{
    ga_cu_result_t rc = VS(vs)->cuCtxEnablePeerAccess((ga_cu_context_t)ctx, 0);
    return rc == GA_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED ? GA_CUDA_SUCCESS : rc;
}

/* ---- Sharing between processes. ---- */

static ga_gpu_rc_t cuda_ipc_get(void *vs, uintptr_t addr, void *handle)
{
    return VS(vs)->cuIpcGetMemHandle((ga_cu_ipc_mem_handle_t *)handle, CUPTR(addr));
}

static ga_gpu_rc_t cuda_ipc_open(void *vs, const void *handle, uintptr_t *addr)
{
    ga_cu_ipc_mem_handle_t h;
    ga_cu_deviceptr_t p = 0;
    memcpy(&h, handle, sizeof(h)); /* by value, from the caller's bytes (no alignment promised) */
    ga_cu_result_t rc = VS(vs)->cuIpcOpenMemHandle_v2(&p, h, GA_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t cuda_ipc_close(void *vs, uintptr_t addr)
{
    return VS(vs)->cuIpcCloseMemHandle(CUPTR(addr));
}

static ga_gpu_rc_t cuda_phys_export(void *vs, uint64_t handle, int *fd)
{
    return VS(vs)->cuMemExportToShareableHandle(fd, handle, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

static ga_gpu_rc_t cuda_phys_import(void *vs, int fd, uint64_t *handle)
{
    ga_cu_mem_handle_t h = 0;
    ga_cu_result_t rc =
        VS(vs)->cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    *handle = h;
    return rc;
}

/* ---- Stream capture graphs. ---- */

/* A CUgraphNode travels as a uintptr_t (gpu.h); the driver writes handles
 * straight into the caller's integers, which needs equal sizes. */
_Static_assert(sizeof(ga_cu_graph_node_t) == sizeof(uintptr_t), "CUgraphNode is pointer-sized");

/* The driver's frontier array is its own and valid until the next call on the
 * stream: the nodes are copied out here. */
static ga_gpu_rc_t cuda_capture_info(void *vs, uintptr_t stream, int *status, uint64_t *id, uintptr_t *nodes,
                                     size_t cap, size_t *n)
{
    ga_cu_stream_capture_status_t st = GA_CU_STREAM_CAPTURE_STATUS_NONE;
    uint64_t cid = 0;
    const ga_cu_graph_node_t *deps = NULL;
    size_t nd = 0;
    ga_cu_result_t rc = VS(vs)->cuStreamGetCaptureInfo_v2(CUSTREAM(stream), &st, &cid, NULL, &deps, &nd);
    *status = (int)st;
    *id = cid;
    *n = 0;
    if (rc != GA_CUDA_SUCCESS || st != GA_CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return rc; /* the rest is valid only for an active capture */
    for (size_t i = 0; i < nd && i < cap; i++)
        nodes[i] = (uintptr_t)deps[i];
    *n = nd;
    return rc;
}

static ga_gpu_rc_t cuda_node_deps(void *vs, uintptr_t node, uintptr_t *deps, size_t *n)
{
    return VS(vs)->cuGraphNodeGetDependencies((ga_cu_graph_node_t)node, (ga_cu_graph_node_t *)deps, n);
}

/* ---- Errors. ---- */

static galloc_status_t cuda_status(ga_gpu_rc_t rc)
{
    switch (rc) {
    case GA_CUDA_SUCCESS: return GALLOC_OK;
    case GA_CUDA_ERROR_OUT_OF_MEMORY: return GALLOC_E_OOM;
    case GA_CUDA_ERROR_NOT_READY: return GALLOC_E_NOT_READY;
    case GA_CUDA_ERROR_NOT_SUPPORTED: return GALLOC_E_UNSUPPORTED;
    case GA_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: return GALLOC_E_UNSUPPORTED;
    default: return GALLOC_E_DEVICE;
    }
}

/* Names for the codes cuda_api.h declares, for when the driver cannot name
 * them itself (the toolkit's stub libcuda answers every call with 34). */
static const char *known_name(ga_gpu_rc_t rc)
{
    switch (rc) {
    case GA_CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case GA_CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case GA_CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case GA_CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case GA_CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY (a toolkit stub, not a driver)";
    case GA_CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case GA_CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case GA_CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case GA_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: return "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED";
    case GA_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: return "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED";
    case GA_CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case GA_CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case GA_CUDA_ERROR_NOT_READY: return "CUDA_ERROR_NOT_READY";
    case GA_CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    case GA_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    case GA_CUDA_ERROR_CAPTURED_EVENT: return "CUDA_ERROR_CAPTURED_EVENT";
    case GA_CUDA_ERROR_UNKNOWN: return "CUDA_ERROR_UNKNOWN";
    default: return "unknown to galloc";
    }
}

/* "CUDA_ERROR_OUT_OF_MEMORY: out of memory", from the driver's own tables
 * (it knows codes newer than this file); galloc's names if it cannot say. */
static void cuda_describe(void *vs, ga_gpu_rc_t rc, char *buf, size_t len)
{
    const char *name = NULL, *text = NULL;
    cuda_vs_t *d = VS(vs);
    if (d->cuGetErrorName((ga_cu_result_t)rc, &name) != GA_CUDA_SUCCESS || name == NULL) {
        snprintf(buf, len, "CUresult %d (%s)", rc, known_name(rc));
        return;
    }
    if (d->cuGetErrorString((ga_cu_result_t)rc, &text) != GA_CUDA_SUCCESS || text == NULL)
        text = "(no description)";
    snprintf(buf, len, "%s: %s", name, text);
}

static const ga_gpu_vendor_t cuda_vendor = {
    .name = "cuda",
    .lib = &ga_cuda_library,
    .fn_name = {[GA_GPU_FN_INIT] = "cuInit",
                [GA_GPU_FN_DEVICE_COUNT] = "cuDeviceGetCount",
                [GA_GPU_FN_DEVICE_GET] = "cuDeviceGet",
                [GA_GPU_FN_CTX_RETAIN] = "cuDevicePrimaryCtxRetain",
                [GA_GPU_FN_CTX_RELEASE] = "cuDevicePrimaryCtxRelease_v2",
                [GA_GPU_FN_CTX_GET] = "cuCtxGetCurrent",
                [GA_GPU_FN_CTX_SET] = "cuCtxSetCurrent",
                [GA_GPU_FN_MEM_ALLOC] = "cuMemAlloc_v2",
                [GA_GPU_FN_MEM_FREE] = "cuMemFree_v2",
                [GA_GPU_FN_MEM_INFO] = "cuMemGetInfo_v2",
                [GA_GPU_FN_GRANULARITY] = "cuMemGetAllocationGranularity",
                [GA_GPU_FN_VA_RESERVE] = "cuMemAddressReserve",
                [GA_GPU_FN_VA_FREE] = "cuMemAddressFree",
                [GA_GPU_FN_PHYS_CREATE] = "cuMemCreate",
                [GA_GPU_FN_PHYS_RELEASE] = "cuMemRelease",
                [GA_GPU_FN_PHYS_MAP] = "cuMemMap",
                [GA_GPU_FN_PHYS_UNMAP] = "cuMemUnmap",
                [GA_GPU_FN_SET_ACCESS] = "cuMemSetAccess",
                [GA_GPU_FN_EVENT_CREATE] = "cuEventCreate",
                [GA_GPU_FN_EVENT_DESTROY] = "cuEventDestroy_v2",
                [GA_GPU_FN_EVENT_RECORD] = "cuEventRecord",
                [GA_GPU_FN_EVENT_QUERY] = "cuEventQuery",
                [GA_GPU_FN_EVENT_SYNC] = "cuEventSynchronize",
                [GA_GPU_FN_STREAM_SYNC] = "cuStreamSynchronize",
                [GA_GPU_FN_DEVICE_SYNC] = "cuCtxSynchronize",
                [GA_GPU_FN_POOL_GET] = "cuDeviceGetDefaultMemPool",
                [GA_GPU_FN_POOL_SET_ATTR] = "cuMemPoolSetAttribute",
                [GA_GPU_FN_POOL_GET_ATTR] = "cuMemPoolGetAttribute",
                [GA_GPU_FN_POOL_TRIM] = "cuMemPoolTrimTo",
                [GA_GPU_FN_MALLOC_ASYNC] = "cuMemAllocAsync",
                [GA_GPU_FN_FREE_ASYNC] = "cuMemFreeAsync",
                [GA_GPU_FN_HOST_ALLOC] = "cuMemHostAlloc",
                [GA_GPU_FN_HOST_FREE] = "cuMemFreeHost",
                [GA_GPU_FN_COPY_D2H] = "cuMemcpyDtoH_v2",
                [GA_GPU_FN_COPY_H2D] = "cuMemcpyHtoD_v2",
                [GA_GPU_FN_PEER_CAN_ACCESS] = "cuDeviceCanAccessPeer",
                [GA_GPU_FN_PEER_CTX_RETAIN] = "cuDevicePrimaryCtxRetain",
                [GA_GPU_FN_PEER_CTX_RELEASE] = "cuDevicePrimaryCtxRelease_v2",
                [GA_GPU_FN_PEER_ENABLE] = "cuCtxEnablePeerAccess",
                [GA_GPU_FN_IPC_GET] = "cuIpcGetMemHandle",
                [GA_GPU_FN_IPC_OPEN] = "cuIpcOpenMemHandle_v2",
                [GA_GPU_FN_IPC_CLOSE] = "cuIpcCloseMemHandle",
                [GA_GPU_FN_PHYS_EXPORT] = "cuMemExportToShareableHandle",
                [GA_GPU_FN_PHYS_IMPORT] = "cuMemImportFromShareableHandle",
                [GA_GPU_FN_CAPTURE_INFO] = "cuStreamGetCaptureInfo_v2",
                [GA_GPU_FN_NODE_DEPS] = "cuGraphNodeGetDependencies",
                [GA_GPU_FN_HOST_REGISTER] = "cuMemHostRegister_v2",
                [GA_GPU_FN_HOST_UNREGISTER] = "cuMemHostUnregister"},
    .init = cuda_init,
    .device_count = cuda_device_count,
    .device_get = cuda_device_get,
    .ctx_retain = cuda_ctx_retain,
    .ctx_release = cuda_ctx_release,
    .ctx_get = cuda_ctx_get,
    .ctx_set = cuda_ctx_set,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .mem_info = cuda_mem_info,
    .granularity = cuda_granularity,
    .va_reserve = cuda_va_reserve,
    .va_free = cuda_va_free,
    .phys_create = cuda_phys_create,
    .phys_release = cuda_phys_release,
    .phys_map = cuda_phys_map,
    .phys_unmap = cuda_phys_unmap,
    .set_access = cuda_set_access,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_query = cuda_event_query,
    .event_sync = cuda_event_sync,
    .stream_sync = cuda_stream_sync,
    .device_sync = cuda_device_sync,
    .pool_get = cuda_pool_get,
    .pool_set_attr = cuda_pool_set_attr,
    .pool_get_attr = cuda_pool_get_attr,
    .pool_trim = cuda_pool_trim,
    .malloc_async = cuda_malloc_async,
    .free_async = cuda_free_async,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
    .copy_d2h = cuda_copy_d2h,
    .copy_h2d = cuda_copy_h2d,
    .peer_can_access = cuda_peer_can_access,
    .peer_ctx_retain = cuda_peer_ctx_retain,
    .peer_ctx_release = cuda_peer_ctx_release,
    .peer_enable = cuda_peer_enable,
    .ipc_get = cuda_ipc_get,
    .ipc_open = cuda_ipc_open,
    .ipc_close = cuda_ipc_close,
    .phys_export = cuda_phys_export,
    .phys_import = cuda_phys_import,
    .capture_info = cuda_capture_info,
    .node_deps = cuda_node_deps,
    .host_register = cuda_host_register,
    .host_unregister = cuda_host_unregister,
    .status = cuda_status,
    .describe = cuda_describe,
};

static galloc_status_t cuda_open(const galloc_backend_args_t *args, void **state, char *err, size_t errlen)
{
    return ga_gpu_open(&cuda_vendor, args, state, err, errlen);
}

/* The file's only external symbol; registered as "cuda" through backends.def. */
const galloc_backend_ops_t ga_backend_cuda = {
    .struct_size = sizeof(galloc_backend_ops_t),
    .version = GALLOC_BACKEND_OPS_V1,
    .name = "cuda",
    .open = cuda_open,
    GA_GPU_OPS_MEMBERS,
    .vendor = GALLOC_BACKEND_VENDOR_CUDA,
};

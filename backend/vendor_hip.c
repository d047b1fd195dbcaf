/*
 * vendor_hip.c: the HIP runtime (ROCm's libamdhip64.so) as a GPU vendor
 * (backend/gpu.h) and the "hip" backend's ops table. Each primitive is one
 * runtime call through the pointers the loader (backend/dl_table.c) filled
 * from this file's symbol table; all logic lives in backend/gpu*.c, shared
 * with the CUDA driver (vendor_cuda.c).
 *
 * Contexts: HIP's runtime keeps each device's primary context for the life of
 * the process and has no retain/release call; what is per thread is the
 * current device (hipSetDevice, device 0 until set). So the generic layer's
 * "context" token is the device ordinal + 1 (0 stays "none"): retain and
 * release make no call, get is hipGetDevice and set hipSetDevice, and the
 * generic enter/leave makes the backend's device current around every call and
 * gives the caller's thread its own device back, as for CUDA contexts.
 *
 * Streams are the caller's hipStream_t values (galloc_stream_t is the
 * hipStream_t cast to an integer, 0 the null stream) and are passed through.
 * Physical memory is pinned device memory of this device, exportable as a
 * POSIX file descriptor (export_page), read-write for this device and every
 * peer enable_peer_access added. hipMemAllocationProp changed
 * layout in ROCm 6.0: init reads hipRuntimeGetVersion and the VMM primitives
 * build whichever layout the loaded runtime expects.
 */
#include <stdio.h>
#include <string.h>

#include "backend/gpu.h"
#include "backend/hip_api.h"

/* The vendor state: one loaded runtime and the device it serves. */
typedef struct hip_vs {
    ga_dl_lib_t lib;              /* the loaded runtime (first: the loader's) */
    GA_HIP_SYMBOLS(GA_DL_POINTER) /* resolved runtime symbols */
    int ordinal;                  /* device index (hipMemLocation ids are ordinals) */
    int version;                  /* hipRuntimeGetVersion, after init */
    ga_hip_mempool_t pool;        /* the device's default pool, once found */
} hip_vs_t;

#define HIP_SYMBOL_(group, sym) GA_DL_SYMBOL(hip_vs_t, group, sym)
static const ga_dl_symbol_t hip_symbols[] = {GA_HIP_SYMBOLS(HIP_SYMBOL_)};
#undef HIP_SYMBOL_

const ga_dl_library_t ga_hip_library = {
    .what = "HIP runtime library",
    .path = GA_HIP_DEFAULT_LIBRARY,
    .syms = hip_symbols,
    .count = sizeof(hip_symbols) / sizeof(hip_symbols[0]),
    .size = sizeof(hip_vs_t),
};

#define VS(vs) ((hip_vs_t *)(vs))
#define PTR(a) ((void *)(a))
#define STREAM(s) ((ga_hip_stream_t)(s))
#define HANDLE(h) ((ga_hip_mem_handle_t)(uintptr_t)(h))

/* hipInit, then the runtime's version (it decides the VMM struct layout);
 * both are initialization, reported as hipInit's failure. */
static ga_gpu_rc_t hip_init(void *vs)
{
    ga_hip_error_t rc = VS(vs)->hipInit(0);
    if (rc != GA_HIP_SUCCESS)
        return rc;
    return VS(vs)->hipRuntimeGetVersion(&VS(vs)->version);
}

static ga_gpu_rc_t hip_device_count(void *vs, int *count)
{
    return VS(vs)->hipGetDeviceCount(count);
}

static ga_gpu_rc_t hip_device_get(void *vs, int ordinal)
{
    ga_hip_device_t dev = 0;
    VS(vs)->ordinal = ordinal;
    return VS(vs)->hipDeviceGet(&dev, ordinal); /* validates the ordinal; HIP devices are ordinals */
}

/* The runtime owns the primary context: nothing to retain or release. */
static ga_gpu_rc_t hip_ctx_retain(void *vs, uintptr_t *ctx)
{
    *ctx = (uintptr_t)VS(vs)->ordinal + 1;
    return GA_HIP_SUCCESS;
}

static ga_gpu_rc_t hip_ctx_release(void *vs)
{
    (void)vs;
    return GA_HIP_SUCCESS;
}

static ga_gpu_rc_t hip_ctx_get(void *vs, uintptr_t *ctx)
{
    int d = 0;
    ga_hip_error_t rc = VS(vs)->hipGetDevice(&d);
    *ctx = rc == GA_HIP_SUCCESS ? (uintptr_t)d + 1 : 0;
    return rc;
}

static ga_gpu_rc_t hip_ctx_set(void *vs, uintptr_t ctx)
{
    /* 0 ("no device") never comes from hipGetDevice; nothing to restore. */
    return ctx == 0 ? GA_HIP_SUCCESS : VS(vs)->hipSetDevice((int)(ctx - 1));
}

static ga_gpu_rc_t hip_mem_alloc(void *vs, size_t bytes, uintptr_t *addr)
{
    void *p = NULL;
    ga_hip_error_t rc = VS(vs)->hipMalloc(&p, bytes);
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t hip_mem_free(void *vs, uintptr_t addr)
{
    return VS(vs)->hipFree(PTR(addr));
}

static ga_gpu_rc_t hip_mem_info(void *vs, size_t *free_bytes, size_t *total_bytes)
{
    return VS(vs)->hipMemGetInfo(free_bytes, total_bytes);
}

/* ---- Virtual memory. ---- */

/* Pinned memory on this device, in the layout of the loaded runtime,
 * exportable as a POSIX file descriptor (export_page; PyTorch's expandable
 * segments request the same type, with no fallback). */
typedef union hip_prop {
    ga_hip_mem_allocation_prop_t v6;
    ga_hip_mem_allocation_prop_v5_t v5;
} hip_prop_t;

static const ga_hip_mem_allocation_prop_t *device_prop(const void *vs, hip_prop_t *p)
{
    const hip_vs_t *h = vs;
    ga_hip_mem_location_t loc = {.type = GA_HIP_MEM_LOCATION_TYPE_DEVICE, .id = h->ordinal};
    if (h->version >= GA_HIP_VERSION_6_0) {
        p->v6 = (ga_hip_mem_allocation_prop_t){.type = GA_HIP_MEM_ALLOCATION_TYPE_PINNED,
                                               .requested_handle_types = GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                               .location = loc};
        return &p->v6;
    }
    p->v5 = (ga_hip_mem_allocation_prop_v5_t){.location = loc,
                                              .requested_handle_type = GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                              .type = GA_HIP_MEM_ALLOCATION_TYPE_PINNED};
    return (const ga_hip_mem_allocation_prop_t *)(const void *)&p->v5; /* read by the runtime as v5 */
}

static ga_gpu_rc_t hip_granularity(void *vs, size_t *bytes)
{
    hip_prop_t p;
    return VS(vs)->hipMemGetAllocationGranularity(bytes, device_prop(vs, &p), GA_HIP_MEM_ALLOC_GRANULARITY_MINIMUM);
}

static ga_gpu_rc_t hip_va_reserve(void *vs, size_t bytes, uintptr_t *addr)
{
    void *p = NULL;
    ga_hip_error_t rc = VS(vs)->hipMemAddressReserve(&p, bytes, 0, NULL, 0); /* default alignment, no hint */
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t hip_va_free(void *vs, uintptr_t addr, size_t bytes)
{
    return VS(vs)->hipMemAddressFree(PTR(addr), bytes);
}

static ga_gpu_rc_t hip_phys_create(void *vs, size_t bytes, uint64_t *handle)
{
    hip_prop_t p;
    ga_hip_mem_handle_t h = NULL;
    ga_hip_error_t rc = VS(vs)->hipMemCreate(&h, bytes, device_prop(vs, &p), 0);
    *handle = (uint64_t)(uintptr_t)h;
    return rc;
}

static ga_gpu_rc_t hip_phys_release(void *vs, uint64_t handle)
{
    return VS(vs)->hipMemRelease(HANDLE(handle));
}

static ga_gpu_rc_t hip_phys_map(void *vs, uintptr_t addr, size_t bytes, uint64_t handle)
{
    return VS(vs)->hipMemMap(PTR(addr), bytes, 0, HANDLE(handle), 0);
}

static ga_gpu_rc_t hip_phys_unmap(void *vs, uintptr_t addr, size_t bytes)
{
    return VS(vs)->hipMemUnmap(PTR(addr), bytes);
}

/* Descriptors on the stack: a process has at most this many devices to name. */
#define HIP_MAX_ACCESS 64

static ga_gpu_rc_t hip_set_access(void *vs, uintptr_t addr, size_t bytes, const int *peers, size_t n_peers)
{
    ga_hip_mem_access_desc_t desc[HIP_MAX_ACCESS];
    size_t n = 0;
    desc[n++] = (ga_hip_mem_access_desc_t){.location = {.type = GA_HIP_MEM_LOCATION_TYPE_DEVICE, .id = VS(vs)->ordinal},
                                           .flags = GA_HIP_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (size_t i = 0; i < n_peers && n < HIP_MAX_ACCESS; i++)
        desc[n++] = (ga_hip_mem_access_desc_t){.location = {.type = GA_HIP_MEM_LOCATION_TYPE_DEVICE, .id = peers[i]},
                                               .flags = GA_HIP_MEM_ACCESS_FLAGS_PROT_READWRITE};
    return VS(vs)->hipMemSetAccess(PTR(addr), bytes, desc, n);
}

/* ---- Events and synchronization. ---- */

static ga_gpu_rc_t hip_event_create(void *vs, uintptr_t *event)
{
    ga_hip_event_t e = NULL;
    ga_hip_error_t rc = VS(vs)->hipEventCreateWithFlags(&e, GA_HIP_EVENT_DISABLE_TIMING);
    *event = (uintptr_t)e;
    return rc;
}

static ga_gpu_rc_t hip_event_destroy(void *vs, uintptr_t event)
{
    return VS(vs)->hipEventDestroy((ga_hip_event_t)event);
}

static ga_gpu_rc_t hip_event_record(void *vs, uintptr_t event, uintptr_t stream)
{
    return VS(vs)->hipEventRecord((ga_hip_event_t)event, STREAM(stream));
}

static ga_gpu_rc_t hip_event_query(void *vs, uintptr_t event)
{
    return VS(vs)->hipEventQuery((ga_hip_event_t)event);
}

static ga_gpu_rc_t hip_event_sync(void *vs, uintptr_t event)
{
    return VS(vs)->hipEventSynchronize((ga_hip_event_t)event);
}

static ga_gpu_rc_t hip_stream_sync(void *vs, uintptr_t stream)
{
    return VS(vs)->hipStreamSynchronize(STREAM(stream));
}

static ga_gpu_rc_t hip_device_sync(void *vs)
{
    return VS(vs)->hipDeviceSynchronize();
}

/* ---- The default stream-ordered pool. ---- */

static ga_hip_mempool_attr_t pool_attr(ga_gpu_pool_attr_t a)
{
    switch (a) {
    case GA_GPU_POOL_RELEASE_THRESHOLD: return GA_HIP_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    case GA_GPU_POOL_RESERVED_CURRENT: return GA_HIP_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    case GA_GPU_POOL_RESERVED_HIGH: return GA_HIP_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
    case GA_GPU_POOL_USED_CURRENT: return GA_HIP_MEMPOOL_ATTR_USED_MEM_CURRENT;
    case GA_GPU_POOL_USED_HIGH: break;
    }
    return GA_HIP_MEMPOOL_ATTR_USED_MEM_HIGH;
}

static ga_gpu_rc_t hip_pool_get(void *vs)
{
    return VS(vs)->hipDeviceGetDefaultMemPool(&VS(vs)->pool, VS(vs)->ordinal);
}

/* Attributes 4..8 are uint64_t values (hip_runtime_api.h). */
static ga_gpu_rc_t hip_pool_set_attr(void *vs, ga_gpu_pool_attr_t attr, uint64_t value)
{
    return VS(vs)->hipMemPoolSetAttribute(VS(vs)->pool, pool_attr(attr), &value);
}

static ga_gpu_rc_t hip_pool_get_attr(void *vs, ga_gpu_pool_attr_t attr, uint64_t *value)
{
    return VS(vs)->hipMemPoolGetAttribute(VS(vs)->pool, pool_attr(attr), value);
}

static ga_gpu_rc_t hip_pool_trim(void *vs, size_t keep_bytes)
{
    return VS(vs)->hipMemPoolTrimTo(VS(vs)->pool, keep_bytes);
}

static ga_gpu_rc_t hip_malloc_async(void *vs, size_t bytes, uintptr_t stream, uintptr_t *addr)
{
    void *p = NULL;
    ga_hip_error_t rc = VS(vs)->hipMallocAsync(&p, bytes, STREAM(stream));
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t hip_free_async(void *vs, uintptr_t addr, uintptr_t stream)
{
    return VS(vs)->hipFreeAsync(PTR(addr), STREAM(stream));
}

/* ---- Pinned host memory and copies. ---- */

static ga_gpu_rc_t hip_host_register(void *vs, void *ptr, size_t bytes)
{
    return VS(vs)->hipHostRegister(ptr, bytes, GA_HIP_HOST_REGISTER_DEFAULT);
}

static ga_gpu_rc_t hip_host_unregister(void *vs, void *ptr)
{
    return VS(vs)->hipHostUnregister(ptr);
}

static ga_gpu_rc_t hip_host_alloc(void *vs, size_t bytes, void **ptr)
{
    return VS(vs)->hipHostMalloc(ptr, bytes, GA_HIP_HOST_MALLOC_DEFAULT);
}

static ga_gpu_rc_t hip_host_free(void *vs, void *ptr)
{
    return VS(vs)->hipHostFree(ptr);
}

static ga_gpu_rc_t hip_copy_d2h(void *vs, void *dst, uintptr_t src, size_t bytes)
{
    return VS(vs)->hipMemcpyDtoH(dst, PTR(src), bytes);
}

/* hipMemcpyHtoD's source is not const (hip_api.h); the runtime only reads it. */
static ga_gpu_rc_t hip_copy_h2d(void *vs, uintptr_t dst, const void *src, size_t bytes)
{
    return VS(vs)->hipMemcpyHtoD(PTR(dst), (void *)(uintptr_t)src, bytes);
}

/* ---- Peer access. ---- */

static ga_gpu_rc_t hip_peer_can_access(void *vs, int peer, int *can)
{
    return VS(vs)->hipDeviceCanAccessPeer(can, peer, VS(vs)->ordinal);
}

/* The runtime holds every primary context (see Contexts): the peer's token is
 * its ordinal + 1, nothing to retain or release. */
static ga_gpu_rc_t hip_peer_ctx_retain(void *vs, int peer, uintptr_t *ctx)
{
    (void)vs;
    *ctx = (uintptr_t)peer + 1;
    return GA_HIP_SUCCESS;
}

static ga_gpu_rc_t hip_peer_ctx_release(void *vs, int peer)
{
    (void)vs;
    (void)peer;
    return GA_HIP_SUCCESS;
}

/* The peer's device is current; ctx is this device's token. Already enabled
 * (by another allocator or the framework) gives the access wanted. */
static ga_gpu_rc_t hip_peer_enable(void *vs, uintptr_t ctx)
{
    (void)ctx;
    ga_hip_error_t rc = VS(vs)->hipDeviceEnablePeerAccess(VS(vs)->ordinal, 0);
    return rc == GA_HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED ? GA_HIP_SUCCESS : rc;
}

/* ---- Sharing between processes. ---- */

static ga_gpu_rc_t hip_ipc_get(void *vs, uintptr_t addr, void *handle)
{
    return VS(vs)->hipIpcGetMemHandle((ga_hip_ipc_mem_handle_t *)handle, PTR(addr));
}

static ga_gpu_rc_t hip_ipc_open(void *vs, const void *handle, uintptr_t *addr)
{
    ga_hip_ipc_mem_handle_t h;
    void *p = NULL;
    memcpy(&h, handle, sizeof(h)); /* by value, from the caller's bytes (no alignment promised) */
    unsigned flags = VS(vs)->version >= GA_HIP_VERSION_6_0 ? GA_HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
                                                           : GA_HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V5;
    ga_hip_error_t rc = VS(vs)->hipIpcOpenMemHandle(&p, h, flags);
    *addr = (uintptr_t)p;
    return rc;
}

static ga_gpu_rc_t hip_ipc_close(void *vs, uintptr_t addr)
{
    return VS(vs)->hipIpcCloseMemHandle(PTR(addr));
}

static ga_gpu_rc_t hip_phys_export(void *vs, uint64_t handle, int *fd)
{
    return VS(vs)->hipMemExportToShareableHandle(fd, (ga_hip_mem_handle_t)(uintptr_t)handle,
                                                 GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
}

static ga_gpu_rc_t hip_phys_import(void *vs, int fd, uint64_t *handle)
{
    ga_hip_mem_handle_t h = NULL;
    ga_hip_error_t rc = VS(vs)->hipMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd,
                                                                GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    *handle = (uint64_t)(uintptr_t)h;
    return rc;
}

/* ---- Stream capture graphs. ---- */

/* A hipGraphNode_t travels as a uintptr_t (gpu.h); the runtime writes handles
 * straight into the caller's integers, which needs equal sizes. */
_Static_assert(sizeof(ga_hip_graph_node_t) == sizeof(uintptr_t), "hipGraphNode_t is pointer-sized");

/* The runtime's frontier array is its own: the nodes are copied out here. */
static ga_gpu_rc_t hip_capture_info(void *vs, uintptr_t stream, int *status, uint64_t *id, uintptr_t *nodes, size_t cap,
                                    size_t *n)
{
    ga_hip_stream_capture_status_t st = GA_HIP_STREAM_CAPTURE_STATUS_NONE;
    unsigned long long cid = 0;
    const ga_hip_graph_node_t *deps = NULL;
    size_t nd = 0;
    ga_hip_error_t rc = VS(vs)->hipStreamGetCaptureInfo_v2(STREAM(stream), &st, &cid, NULL, &deps, &nd);
    *status = (int)st;
    *id = cid;
    *n = 0;
    if (rc != GA_HIP_SUCCESS || st != GA_HIP_STREAM_CAPTURE_STATUS_ACTIVE)
        return rc; /* the rest is valid only for an active capture */
    for (size_t i = 0; i < nd && i < cap; i++)
        nodes[i] = (uintptr_t)deps[i];
    *n = nd;
    return rc;
}

static ga_gpu_rc_t hip_node_deps(void *vs, uintptr_t node, uintptr_t *deps, size_t *n)
{
    return VS(vs)->hipGraphNodeGetDependencies((ga_hip_graph_node_t)node, (ga_hip_graph_node_t *)deps, n);
}

/* ---- Errors. ---- */

static galloc_status_t hip_status(ga_gpu_rc_t rc)
{
    switch (rc) {
    case GA_HIP_SUCCESS: return GALLOC_OK;
    case GA_HIP_ERROR_OUT_OF_MEMORY: return GALLOC_E_OOM;
    case GA_HIP_ERROR_NOT_READY: return GALLOC_E_NOT_READY;
    case GA_HIP_ERROR_NOT_SUPPORTED: return GALLOC_E_UNSUPPORTED;
    case GA_HIP_ERROR_PEER_ACCESS_UNSUPPORTED: return GALLOC_E_UNSUPPORTED;
    default: return GALLOC_E_DEVICE;
    }
}

/* "hipErrorOutOfMemory: out of memory", from the runtime's own tables (they
 * know codes newer than this file); the bare code if it names none. */
static void hip_describe(void *vs, ga_gpu_rc_t rc, char *buf, size_t len)
{
    const char *name = VS(vs)->hipGetErrorName((ga_hip_error_t)rc);
    const char *text = VS(vs)->hipGetErrorString((ga_hip_error_t)rc);
    if (name == NULL) {
        snprintf(buf, len, "hipError_t %d", rc);
        return;
    }
    snprintf(buf, len, "%s: %s", name, text != NULL ? text : "(no description)");
}

static const ga_gpu_vendor_t hip_vendor = {
    .name = "hip",
    .lib = &ga_hip_library,
    .fn_name = {[GA_GPU_FN_INIT] = "hipInit",
                [GA_GPU_FN_DEVICE_COUNT] = "hipGetDeviceCount",
                [GA_GPU_FN_DEVICE_GET] = "hipDeviceGet",
                [GA_GPU_FN_CTX_RETAIN] = "(the runtime's primary context)",
                [GA_GPU_FN_CTX_RELEASE] = "(the runtime's primary context)",
                [GA_GPU_FN_CTX_GET] = "hipGetDevice",
                [GA_GPU_FN_CTX_SET] = "hipSetDevice",
                [GA_GPU_FN_MEM_ALLOC] = "hipMalloc",
                [GA_GPU_FN_MEM_FREE] = "hipFree",
                [GA_GPU_FN_MEM_INFO] = "hipMemGetInfo",
                [GA_GPU_FN_GRANULARITY] = "hipMemGetAllocationGranularity",
                [GA_GPU_FN_VA_RESERVE] = "hipMemAddressReserve",
                [GA_GPU_FN_VA_FREE] = "hipMemAddressFree",
                [GA_GPU_FN_PHYS_CREATE] = "hipMemCreate",
                [GA_GPU_FN_PHYS_RELEASE] = "hipMemRelease",
                [GA_GPU_FN_PHYS_MAP] = "hipMemMap",
                [GA_GPU_FN_PHYS_UNMAP] = "hipMemUnmap",
                [GA_GPU_FN_SET_ACCESS] = "hipMemSetAccess",
                [GA_GPU_FN_EVENT_CREATE] = "hipEventCreateWithFlags",
                [GA_GPU_FN_EVENT_DESTROY] = "hipEventDestroy",
                [GA_GPU_FN_EVENT_RECORD] = "hipEventRecord",
                [GA_GPU_FN_EVENT_QUERY] = "hipEventQuery",
                [GA_GPU_FN_EVENT_SYNC] = "hipEventSynchronize",
                [GA_GPU_FN_STREAM_SYNC] = "hipStreamSynchronize",
                [GA_GPU_FN_DEVICE_SYNC] = "hipDeviceSynchronize",
                [GA_GPU_FN_POOL_GET] = "hipDeviceGetDefaultMemPool",
                [GA_GPU_FN_POOL_SET_ATTR] = "hipMemPoolSetAttribute",
                [GA_GPU_FN_POOL_GET_ATTR] = "hipMemPoolGetAttribute",
                [GA_GPU_FN_POOL_TRIM] = "hipMemPoolTrimTo",
                [GA_GPU_FN_MALLOC_ASYNC] = "hipMallocAsync",
                [GA_GPU_FN_FREE_ASYNC] = "hipFreeAsync",
                [GA_GPU_FN_HOST_ALLOC] = "hipHostMalloc",
                [GA_GPU_FN_HOST_FREE] = "hipHostFree",
                [GA_GPU_FN_COPY_D2H] = "hipMemcpyDtoH",
                [GA_GPU_FN_COPY_H2D] = "hipMemcpyHtoD",
                [GA_GPU_FN_PEER_CAN_ACCESS] = "hipDeviceCanAccessPeer",
                [GA_GPU_FN_PEER_CTX_RETAIN] = "(the runtime's primary context)",
                [GA_GPU_FN_PEER_CTX_RELEASE] = "(the runtime's primary context)",
                [GA_GPU_FN_PEER_ENABLE] = "hipDeviceEnablePeerAccess",
                [GA_GPU_FN_IPC_GET] = "hipIpcGetMemHandle",
                [GA_GPU_FN_IPC_OPEN] = "hipIpcOpenMemHandle",
                [GA_GPU_FN_IPC_CLOSE] = "hipIpcCloseMemHandle",
                [GA_GPU_FN_PHYS_EXPORT] = "hipMemExportToShareableHandle",
                [GA_GPU_FN_PHYS_IMPORT] = "hipMemImportFromShareableHandle",
                [GA_GPU_FN_CAPTURE_INFO] = "hipStreamGetCaptureInfo_v2",
                [GA_GPU_FN_NODE_DEPS] = "hipGraphNodeGetDependencies",
                [GA_GPU_FN_HOST_REGISTER] = "hipHostRegister",
                [GA_GPU_FN_HOST_UNREGISTER] = "hipHostUnregister"},
    .init = hip_init,
    .device_count = hip_device_count,
    .device_get = hip_device_get,
    .ctx_retain = hip_ctx_retain,
    .ctx_release = hip_ctx_release,
    .ctx_get = hip_ctx_get,
    .ctx_set = hip_ctx_set,
    .mem_alloc = hip_mem_alloc,
    .mem_free = hip_mem_free,
    .mem_info = hip_mem_info,
    .granularity = hip_granularity,
    .va_reserve = hip_va_reserve,
    .va_free = hip_va_free,
    .phys_create = hip_phys_create,
    .phys_release = hip_phys_release,
    .phys_map = hip_phys_map,
    .phys_unmap = hip_phys_unmap,
    .set_access = hip_set_access,
    .event_create = hip_event_create,
    .event_destroy = hip_event_destroy,
    .event_record = hip_event_record,
    .event_query = hip_event_query,
    .event_sync = hip_event_sync,
    .stream_sync = hip_stream_sync,
    .device_sync = hip_device_sync,
    .pool_get = hip_pool_get,
    .pool_set_attr = hip_pool_set_attr,
    .pool_get_attr = hip_pool_get_attr,
    .pool_trim = hip_pool_trim,
    .malloc_async = hip_malloc_async,
    .free_async = hip_free_async,
    .host_alloc = hip_host_alloc,
    .host_free = hip_host_free,
    .copy_d2h = hip_copy_d2h,
    .copy_h2d = hip_copy_h2d,
    .peer_can_access = hip_peer_can_access,
    .peer_ctx_retain = hip_peer_ctx_retain,
    .peer_ctx_release = hip_peer_ctx_release,
    .peer_enable = hip_peer_enable,
    .ipc_get = hip_ipc_get,
    .ipc_open = hip_ipc_open,
    .ipc_close = hip_ipc_close,
    .phys_export = hip_phys_export,
    .phys_import = hip_phys_import,
    .capture_info = hip_capture_info,
    .node_deps = hip_node_deps,
    .host_register = hip_host_register,
    .host_unregister = hip_host_unregister,
    .status = hip_status,
    .describe = hip_describe,
};

static galloc_status_t hip_open(const galloc_backend_args_t *args, void **state, char *err, size_t errlen)
{
    return ga_gpu_open(&hip_vendor, args, state, err, errlen);
}

/* The file's only external symbol; registered as "hip" through backends.def. */
const galloc_backend_ops_t ga_backend_hip = {
    .struct_size = sizeof(galloc_backend_ops_t),
    .version = GALLOC_BACKEND_OPS_V1,
    .name = "hip",
    .open = hip_open,
    GA_GPU_OPS_MEMBERS,
    .vendor = GALLOC_BACKEND_VENDOR_HIP,
};

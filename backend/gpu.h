/*
 * gpu.h: the GPU device layer written once for every vendor.
 *
 * backend/gpu*.c implement the galloc_backend_ops_t members (segments, virtual
 * memory, events, the stream-ordered pool, pinned host memory and copies,
 * peer access, sharing between processes, stream capture graphs) in
 * terms of a small vendor table of driver primitives: the CUDA driver
 * (backend/vendor_cuda.c) and the HIP runtime (libamdhip64.so: hipMalloc,
 * hipMemCreate, ...; backend/vendor_hip.c), with no logic copied. A vendor
 * file holds only its tables (its library's symbols, loaded by
 * backend/dl_table.c, and its primitives), its error names and its ops table,
 * which is GA_GPU_OPS_MEMBERS plus an open that names the vendor.
 *
 * What the generic layer owns: argument and contract checks, the bookkeeping
 * of every driver resource it holds (segments, reservations with one physical
 * handle per map call, events, stream-ordered allocations, pinned host
 * blocks, other processes' memory opened here) so that close releases
 * whatever is left, the device context around
 * every call, and the messages (the vendor's function name, error name and
 * text).
 *
 * Locking: a backend state is entered under its allocator's lock only.
 */
#ifndef GA_BACKEND_GPU_H
#define GA_BACKEND_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_backend.h>
#include <galloc/galloc_status.h>
#include "backend/dl_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A vendor result code (CUresult, hipError_t); 0 is success everywhere. */
typedef int ga_gpu_rc_t;

/* Optional feature groups a vendor library may lack: the loader's optional
 * groups (backend/dl_table.h), group g as bit 1u << (g - 1). */
enum {
    GA_GPU_F_VMM = 1u << (GA_DL_VMM - 1),     /* address reservation + physical handles: expandable segments */
    GA_GPU_F_ASYNC = 1u << (GA_DL_ASYNC - 1), /* stream-ordered allocation from the default pool */
    GA_GPU_F_HOST = 1u << (GA_DL_HOST - 1),   /* pinned host memory and synchronous copies: galloc_sleep's offload */
    GA_GPU_F_PEER = 1u << (GA_DL_PEER - 1),   /* peer access between devices: enable_peer_access */
    GA_GPU_F_IPC = 1u << (GA_DL_IPC - 1),     /* sharing memory between processes: ipc_*, export_page, import_pages */
    GA_GPU_F_GRAPH = 1u << (GA_DL_GRAPH - 1), /* stream capture graphs: capture_info, node_deps */
    GA_GPU_F_HOSTREG = 1u << (GA_DL_HOSTREG - 1) /* registering malloc'd host memory: host_register */
};

/* A stream's capture status, as both vendors number it (CUstreamCaptureStatus,
 * hipStreamCaptureStatus). */
enum { GA_GPU_CAPTURE_NONE = 0, GA_GPU_CAPTURE_ACTIVE = 1, GA_GPU_CAPTURE_INVALIDATED = 2 };

/* The stream-ordered pool's attributes galloc reads or sets (values are
 * 64-bit byte counts; the vendor maps them to its own enum). */
typedef enum ga_gpu_pool_attr {
    GA_GPU_POOL_RELEASE_THRESHOLD,
    GA_GPU_POOL_RESERVED_CURRENT,
    GA_GPU_POOL_RESERVED_HIGH,
    GA_GPU_POOL_USED_CURRENT,
    GA_GPU_POOL_USED_HIGH
} ga_gpu_pool_attr_t;

/* The primitives, by id, so that a message names the vendor's function. */
/* A list of macro calls, laid out by hand. */
/* clang-format off */
#define GA_GPU_FNS(X)                                                                              \
    X(INIT) X(DEVICE_COUNT) X(DEVICE_GET) X(CTX_RETAIN) X(CTX_RELEASE) X(CTX_GET) X(CTX_SET)       \
    X(MEM_ALLOC) X(MEM_FREE) X(MEM_INFO) X(GRANULARITY) X(VA_RESERVE) X(VA_FREE) X(PHYS_CREATE)    \
    X(PHYS_RELEASE) X(PHYS_MAP) X(PHYS_UNMAP) X(SET_ACCESS) X(EVENT_CREATE) X(EVENT_DESTROY)       \
    X(EVENT_RECORD) X(EVENT_QUERY) X(EVENT_SYNC) X(STREAM_SYNC) X(DEVICE_SYNC) X(POOL_GET)         \
    X(POOL_SET_ATTR) X(POOL_GET_ATTR) X(POOL_TRIM) X(MALLOC_ASYNC) X(FREE_ASYNC) X(HOST_ALLOC)    \
    X(HOST_FREE) X(COPY_D2H) X(COPY_H2D) X(PEER_CAN_ACCESS) X(PEER_CTX_RETAIN) X(PEER_CTX_RELEASE)  \
    X(PEER_ENABLE) X(IPC_GET) X(IPC_OPEN) X(IPC_CLOSE) X(PHYS_EXPORT) X(PHYS_IMPORT)              \
    X(CAPTURE_INFO) X(NODE_DEPS) X(HOST_REGISTER) X(HOST_UNREGISTER)
/* clang-format on */

typedef enum ga_gpu_fn {
#define GA_GPU_FN_ENUM_(id) GA_GPU_FN_##id,
    GA_GPU_FNS(GA_GPU_FN_ENUM_)
#undef GA_GPU_FN_ENUM_
        GA_GPU_FN_COUNT
} ga_gpu_fn_t;

/*
 * A vendor. `vs` is the vendor state ga_dl_open created from lib for one
 * backend state: the resolved library, the device handle, the default pool
 * (lib->size bytes, a ga_dl_lib_t first, then the function pointers and
 * the vendor's own members). Every primitive
 * returns the vendor's code, 0 on success, and is called with the backend's
 * context current (except init, device_count, device_get, ctx_*), so a
 * primitive makes exactly one driver call and never switches contexts itself.
 */
typedef struct ga_gpu_vendor {
    const char *name;                     /* backend name and message prefix: "cuda" */
    const ga_dl_library_t *lib;           /* the library: default path, symbols, state size */
    const char *fn_name[GA_GPU_FN_COUNT]; /* driver function behind each primitive */

    ga_gpu_rc_t (*init)(void *vs);
    ga_gpu_rc_t (*device_count)(void *vs, int *count);
    ga_gpu_rc_t (*device_get)(void *vs, int ordinal);    /* remembers the device for later primitives */
    ga_gpu_rc_t (*ctx_retain)(void *vs, uintptr_t *ctx); /* the device's primary context */
    ga_gpu_rc_t (*ctx_release)(void *vs);
    ga_gpu_rc_t (*ctx_get)(void *vs, uintptr_t *ctx); /* the calling thread's current context, 0 = none */
    ga_gpu_rc_t (*ctx_set)(void *vs, uintptr_t ctx);

    ga_gpu_rc_t (*mem_alloc)(void *vs, size_t bytes, uintptr_t *addr);
    ga_gpu_rc_t (*mem_free)(void *vs, uintptr_t addr);
    ga_gpu_rc_t (*mem_info)(void *vs, size_t *free_bytes, size_t *total_bytes);

    /* Virtual memory (GA_GPU_F_VMM): pinned device memory of this device. */
    ga_gpu_rc_t (*granularity)(void *vs, size_t *bytes); /* the minimum */
    ga_gpu_rc_t (*va_reserve)(void *vs, size_t bytes, uintptr_t *addr);
    ga_gpu_rc_t (*va_free)(void *vs, uintptr_t addr, size_t bytes);
    ga_gpu_rc_t (*phys_create)(void *vs, size_t bytes, uint64_t *handle);
    ga_gpu_rc_t (*phys_release)(void *vs, uint64_t handle);
    ga_gpu_rc_t (*phys_map)(void *vs, uintptr_t addr, size_t bytes, uint64_t handle);
    ga_gpu_rc_t (*phys_unmap)(void *vs, uintptr_t addr, size_t bytes);
    /* read-write for the device and for each of the n_peers devices in peers
     * (ordinals), in one call: every device that may touch the memory. */
    ga_gpu_rc_t (*set_access)(void *vs, uintptr_t addr, size_t bytes, const int *peers, size_t n_peers);

    /* Events (created without timing) and synchronization. */
    ga_gpu_rc_t (*event_create)(void *vs, uintptr_t *event);
    ga_gpu_rc_t (*event_destroy)(void *vs, uintptr_t event);
    ga_gpu_rc_t (*event_record)(void *vs, uintptr_t event, uintptr_t stream);
    ga_gpu_rc_t (*event_query)(void *vs, uintptr_t event);
    ga_gpu_rc_t (*event_sync)(void *vs, uintptr_t event);
    ga_gpu_rc_t (*stream_sync)(void *vs, uintptr_t stream);
    ga_gpu_rc_t (*device_sync)(void *vs);

    /* The device's default stream-ordered pool (GA_GPU_F_ASYNC). */
    ga_gpu_rc_t (*pool_get)(void *vs); /* finds and remembers the default pool */
    ga_gpu_rc_t (*pool_set_attr)(void *vs, ga_gpu_pool_attr_t attr, uint64_t value);
    ga_gpu_rc_t (*pool_get_attr)(void *vs, ga_gpu_pool_attr_t attr, uint64_t *value);
    ga_gpu_rc_t (*pool_trim)(void *vs, size_t keep_bytes);
    ga_gpu_rc_t (*malloc_async)(void *vs, size_t bytes, uintptr_t stream, uintptr_t *addr);
    ga_gpu_rc_t (*free_async)(void *vs, uintptr_t addr, uintptr_t stream);

    /* Pinned host memory and copies (GA_GPU_F_HOST). host_alloc: page-locked
     * host memory usable by the device's copies; copy_*: synchronous, done
     * when they return (the source of copy_h2d is pinned or pageable). */
    ga_gpu_rc_t (*host_alloc)(void *vs, size_t bytes, void **ptr);
    ga_gpu_rc_t (*host_free)(void *vs, void *ptr);
    ga_gpu_rc_t (*copy_d2h)(void *vs, void *dst, uintptr_t src, size_t bytes);
    ga_gpu_rc_t (*copy_h2d)(void *vs, uintptr_t dst, const void *src, size_t bytes);

    /* Peer access (GA_GPU_F_PEER), by device ordinal. peer_can_access: *can
     * non-zero when device peer can access this device's memory (no context
     * needed). peer_ctx_retain / peer_ctx_release: device peer's primary
     * context as a context token (ctx_set takes it). peer_enable: called with
     * the peer's context current, give it access to the memory of this
     * device's context ctx; "already enabled" is success (0). The CUDA
     * primitives first turn the ordinal into a CUdevice (cuDeviceGet), the
     * one place a primitive makes two driver calls. */
    ga_gpu_rc_t (*peer_can_access)(void *vs, int peer, int *can);
    ga_gpu_rc_t (*peer_ctx_retain)(void *vs, int peer, uintptr_t *ctx);
    ga_gpu_rc_t (*peer_ctx_release)(void *vs, int peer);
    ga_gpu_rc_t (*peer_enable)(void *vs, uintptr_t ctx);

    /* Sharing between processes (GA_GPU_F_IPC). ipc_get: the IPC handle of
     * the plain allocation based at addr, GALLOC_BACKEND_IPC_BYTES bytes into
     * handle. ipc_open: map another process's allocation by its handle (with
     * lazy peer access), *addr its base. ipc_close: undo an ipc_open.
     * phys_export: a new POSIX descriptor (the caller's) of a handle
     * phys_create made (which requests that type). phys_import: a new handle
     * of this device over a descriptor's memory (the descriptor stays the
     * caller's). */
    ga_gpu_rc_t (*ipc_get)(void *vs, uintptr_t addr, void *handle);
    ga_gpu_rc_t (*ipc_open)(void *vs, const void *handle, uintptr_t *addr);
    ga_gpu_rc_t (*ipc_close)(void *vs, uintptr_t addr);
    ga_gpu_rc_t (*phys_export)(void *vs, uint64_t handle, int *fd);
    ga_gpu_rc_t (*phys_import)(void *vs, int fd, uint64_t *handle);

    /* Stream capture graphs (GA_GPU_F_GRAPH); node handles are the driver's
     * CUgraphNode / hipGraphNode_t as integers. capture_info: stream's
     * capture status (GA_GPU_CAPTURE_*) into *status, and only when it is
     * ACTIVE its capture id into *id, the first min(cap, frontier) nodes of
     * its capture frontier (the nodes work queued next would depend on) into
     * nodes and the frontier's size into *n (0 otherwise). node_deps: the
     * driver's call as it is: deps NULL puts node's number of dependencies
     * into *n; otherwise up to *n of them go into deps and *n becomes how
     * many were filled (CUDA's and HIP's documented semantics). */
    ga_gpu_rc_t (*capture_info)(void *vs, uintptr_t stream, int *status, uint64_t *id, uintptr_t *nodes, size_t cap,
                                size_t *n);
    ga_gpu_rc_t (*node_deps)(void *vs, uintptr_t node, uintptr_t *deps, size_t *n);

    /* Registering host memory (GA_GPU_F_HOSTREG): host_register page-locks
     * [ptr, ptr + bytes) of memory the caller allocated, portable to every
     * context; host_unregister undoes it. */
    ga_gpu_rc_t (*host_register)(void *vs, void *ptr, size_t bytes);
    ga_gpu_rc_t (*host_unregister)(void *vs, void *ptr);

    /* Errors: the galloc status of a code (OOM, NOT_READY, NOT_SUPPORTED map to
     * their statuses, the rest is GALLOC_E_DEVICE), and its name and text. */
    galloc_status_t (*status)(ga_gpu_rc_t rc);
    void (*describe)(void *vs, ga_gpu_rc_t rc, char *buf, size_t len);
} ga_gpu_vendor_t;

/* The vendors' libraries (vendor_cuda.c, vendor_hip.c); their symbol tables
 * are also read by the ABI tests, against the real libraries. */
extern const ga_dl_library_t ga_cuda_library;
extern const ga_dl_library_t ga_hip_library;

/* ga_gpu_open: the generic open, called by a vendor's ops->open with its table.
 * It reads the one option every vendor takes from args->options,
 * driver_path:PATH (the library to dlopen instead of v->library), and refuses
 * any other key with GALLOC_E_CONFIG. */
galloc_status_t ga_gpu_open(const ga_gpu_vendor_t *v, const galloc_backend_args_t *args, void **state, char *err,
                            size_t errlen);

/* The generic ops members (see api/galloc_backend.h for each contract). */
void ga_gpu_close(void *state);
galloc_status_t ga_gpu_segment_alloc(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr);
galloc_status_t ga_gpu_segment_free(void *state, uintptr_t addr, size_t bytes, galloc_stream_t s);
galloc_status_t ga_gpu_mem_info(void *state, size_t *free_bytes, size_t *total_bytes);
galloc_status_t ga_gpu_granularity(void *state, size_t *bytes);
galloc_status_t ga_gpu_va_reserve(void *state, size_t bytes, uintptr_t *addr);
galloc_status_t ga_gpu_va_release(void *state, uintptr_t addr, size_t bytes);
galloc_status_t ga_gpu_map(void *state, uintptr_t addr, size_t bytes);
galloc_status_t ga_gpu_unmap(void *state, uintptr_t addr, size_t bytes);
galloc_status_t ga_gpu_event_create(void *state, uintptr_t *event);
galloc_status_t ga_gpu_event_destroy(void *state, uintptr_t event);
galloc_status_t ga_gpu_event_record(void *state, uintptr_t event, galloc_stream_t s);
galloc_status_t ga_gpu_event_query(void *state, uintptr_t event);
galloc_status_t ga_gpu_event_synchronize(void *state, uintptr_t event);
void ga_gpu_error_string(void *state, char *buf, size_t len);
galloc_status_t ga_gpu_stream_synchronize(void *state, galloc_stream_t s);
galloc_status_t ga_gpu_malloc_async(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr);
galloc_status_t ga_gpu_free_async(void *state, uintptr_t addr, galloc_stream_t s);
galloc_status_t ga_gpu_pool_trim(void *state, size_t keep_bytes);
galloc_status_t ga_gpu_pool_usage(void *state, uint64_t *reserved_current, uint64_t *reserved_high,
                                  uint64_t *used_current, uint64_t *used_high);
galloc_status_t ga_gpu_pool_reset_peak(void *state);
galloc_status_t ga_gpu_device_synchronize(void *state);
galloc_status_t ga_gpu_host_alloc(void *state, size_t bytes, void **ptr);
galloc_status_t ga_gpu_host_free(void *state, void *ptr, size_t bytes);
galloc_status_t ga_gpu_copy_d2h(void *state, void *dst, uintptr_t src, size_t bytes);
galloc_status_t ga_gpu_copy_h2d(void *state, uintptr_t dst, const void *src, size_t bytes);
galloc_status_t ga_gpu_enable_peer_access(void *state, int peer);
galloc_status_t ga_gpu_ipc_export(void *state, uintptr_t addr, void *handle);
galloc_status_t ga_gpu_ipc_open(void *state, const void *handle, size_t bytes, uintptr_t *addr);
galloc_status_t ga_gpu_ipc_close(void *state, uintptr_t addr);
galloc_status_t ga_gpu_export_page(void *state, uintptr_t addr, int *fd);
galloc_status_t ga_gpu_import_pages(void *state, const int *fds, size_t n, size_t page, uintptr_t *addr);
galloc_status_t ga_gpu_capture_info(void *state, galloc_stream_t s, uint64_t *capture_id, uintptr_t *nodes, size_t cap,
                                    size_t *n);
galloc_status_t ga_gpu_node_deps(void *state, uintptr_t node, uintptr_t *deps, size_t cap, size_t *n);
galloc_status_t ga_gpu_host_register(void *state, void *ptr, size_t bytes);
galloc_status_t ga_gpu_host_unregister(void *state, void *ptr, size_t bytes);

/* Every member but open, for a vendor's designated initializer. */
#define GA_GPU_OPS_MEMBERS                                                                                             \
    .close = ga_gpu_close, .segment_alloc = ga_gpu_segment_alloc, .segment_free = ga_gpu_segment_free,                 \
    .mem_info = ga_gpu_mem_info, .granularity = ga_gpu_granularity, .va_reserve = ga_gpu_va_reserve,                   \
    .va_release = ga_gpu_va_release, .map = ga_gpu_map, .unmap = ga_gpu_unmap, .event_create = ga_gpu_event_create,    \
    .event_destroy = ga_gpu_event_destroy, .event_record = ga_gpu_event_record, .event_query = ga_gpu_event_query,     \
    .event_synchronize = ga_gpu_event_synchronize, .error_string = ga_gpu_error_string,                                \
    .stream_synchronize = ga_gpu_stream_synchronize, .malloc_async = ga_gpu_malloc_async,                              \
    .free_async = ga_gpu_free_async, .pool_trim = ga_gpu_pool_trim, .pool_usage = ga_gpu_pool_usage,                   \
    .pool_reset_peak = ga_gpu_pool_reset_peak, .device_synchronize = ga_gpu_device_synchronize,                        \
    .host_alloc = ga_gpu_host_alloc, .host_free = ga_gpu_host_free, .copy_d2h = ga_gpu_copy_d2h,                       \
    .copy_h2d = ga_gpu_copy_h2d, .enable_peer_access = ga_gpu_enable_peer_access, .ipc_export = ga_gpu_ipc_export,     \
    .ipc_open = ga_gpu_ipc_open, .ipc_close = ga_gpu_ipc_close, .export_page = ga_gpu_export_page,                     \
    .import_pages = ga_gpu_import_pages, .capture_info = ga_gpu_capture_info, .node_deps = ga_gpu_node_deps,           \
    .host_register = ga_gpu_host_register, .host_unregister = ga_gpu_host_unregister

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_GPU_H */

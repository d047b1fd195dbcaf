/*
 * galloc_backend.h: the device backend interface (one ops struct per device layer).
 *
 * A backend hands whole segments of device memory to the caching pool and, where
 * the device supports it, virtual-memory ranges (expandable segments) and
 * stream events (cross-stream frees). Backends are registered by name; a config
 * string's "device_backend:<name>" selects one at run time, and the keys of
 * the config string that no allocator key claims are that backend's own
 * options (galloc_backend_args_t.options), which it reads and checks itself.
 *
 * Versioning: struct_size and version come first. A member is used only if
 * struct_size covers it and it is non-NULL, so members are appended, never
 * inserted or reordered (model: SQLite's sqlite3_vfs iVersion).
 *
 * Locking: galloc calls every member with the owning allocator's lock held, so a
 * backend state is never entered by two threads at once through one allocator.
 * A backend must not call back into galloc.
 */
#ifndef GALLOC_BACKEND_H
#define GALLOC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device stream handle (a CUstream / hipStream_t cast to an integer); 0 is
 * the default (legacy) stream. Opaque to galloc except for ordering and
 * equality. */
typedef uintptr_t galloc_stream_t;

#define GALLOC_BACKEND_OPS_V1 1 /* bump only if an existing member changes meaning */

/* The device runtime a backend stands for (galloc_backend_ops_t.vendor): galloc's
 * messages then use the wording of that runtime's PyTorch build. */
typedef enum galloc_backend_vendor {
    GALLOC_BACKEND_VENDOR_NONE = 0, /* no GPU runtime (sim, a test double): CUDA's wording, PyTorch's default */
    GALLOC_BACKEND_VENDOR_CUDA = 1, /* NVIDIA CUDA: "CUDA out of memory", backend:cudaMallocAsync */
    GALLOC_BACKEND_VENDOR_HIP = 2   /* AMD ROCm HIP: "HIP out of memory", PYTORCH_HIP_ALLOC_CONF,
                                       backend:hipMallocAsync, as PyTorch's ROCm build says */
} galloc_backend_vendor_t;

/* The longest options string galloc hands a backend (galloc_backend_args_t.options,
 * galloc_settings_t.backend_options), NUL included. */
#define GALLOC_BACKEND_OPTIONS_MAX 1024

/* The size of a driver's IPC memory handle (CU_IPC_HANDLE_SIZE,
 * HIP_IPC_HANDLE_SIZE): what ipc_export writes and ipc_open reads. */
#define GALLOC_BACKEND_IPC_BYTES 64

/* What a backend is opened with, filled by galloc (a backend only reads it).
 * Settings of one backend's own (sim's capacity, a driver's path) are not
 * members: they come as options, which each backend reads itself. */
typedef struct galloc_backend_args {
    uint32_t struct_size; /* Required: sizeof(galloc_backend_args_t) of the caller; a backend reads a
                             member only if struct_size covers it */
    int device;           /* Required: device index, >= 0 */
    /* Optional (read only where struct_size covers it): the backend's own
     * options, "key:value,key:value": the items of the effective config string
     * that no allocator key claims, each as written (whitespace included,
     * which the grammar ignores), in the order given, a key named twice kept
     * once with its last value; e.g. "sim_capacity:1GiB,sim_backed:True".
     * NULL or "": none. Owned by galloc, valid during open only. open reads the
     * keys it takes and refuses any other key, or a bad value, with
     * GALLOC_E_CONFIG and a message ending in " (offset N)", N a byte offset
     * into options: PyTorch's "Unrecognized key '<key>' in CUDA allocator
     * config (offset N)" for a key it does not take. galloc then shows N as
     * the offset in the string the user wrote, and names that string. */
    const char *options;
} galloc_backend_args_t;

typedef struct galloc_backend_ops {
    uint32_t struct_size; /* sizeof(galloc_backend_ops_t) the backend was compiled with */
    uint32_t version;     /* GALLOC_BACKEND_OPS_V1 */
    const char *name;     /* unique; "device_backend:<name>" selects it */

    /* ---- Required. ---- */

    /* open: create a backend state for args->device. On failure return a status
     * (GALLOC_E_UNAVAILABLE when a library or device is missing, GALLOC_E_CONFIG
     * for an option it refuses, see args->options) and write a message naming
     * what is missing or wrong into err (errlen bytes, NUL-terminated). */
    galloc_status_t (*open)(const galloc_backend_args_t *args, void **state, char *err, size_t errlen);
    /* close: release everything the state still holds, then the state. */
    void (*close)(void *state);
    /* segment_alloc: bytes of device memory usable from stream s at *addr.
     * GALLOC_E_OOM when the device is out of memory (the pool then frees cache
     * and retries), any other status is a hard failure. */
    galloc_status_t (*segment_alloc)(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr);
    /* segment_free: give back a segment from segment_alloc (whole, same size). */
    galloc_status_t (*segment_free)(void *state, uintptr_t addr, size_t bytes, galloc_stream_t s);
    /* mem_info: device free and total bytes, as cudaMemGetInfo reports them. */
    galloc_status_t (*mem_info)(void *state, size_t *free_bytes, size_t *total_bytes);

    /* ---- Optional: NULL = not supported. ---- */

    /* Virtual memory (expandable segments need all five). The pool maps and
     * unmaps one page (its segment page size) per call. granularity: the
     * page size maps must be multiples of. va_reserve: reserve an address range
     * of bytes, backed by nothing. map: back [addr, addr+bytes) (inside a
     * reserved range, page aligned) with new physical memory, usable from every
     * stream; GALLOC_E_OOM when the device is full. unmap: release the physical
     * memory behind a mapped range. va_release: free a reserved range (all
     * unmapped first). */
    galloc_status_t (*granularity)(void *state, size_t *bytes);
    galloc_status_t (*va_reserve)(void *state, size_t bytes, uintptr_t *addr);
    galloc_status_t (*va_release)(void *state, uintptr_t addr, size_t bytes);
    galloc_status_t (*map)(void *state, uintptr_t addr, size_t bytes);
    galloc_status_t (*unmap)(void *state, uintptr_t addr, size_t bytes);

    /* Events (cross-stream frees need all four). event_create: a reusable event
     * handle. event_record: capture the work queued on stream s so far.
     * event_query: GALLOC_OK when complete, GALLOC_E_NOT_READY when not.
     * event_synchronize: wait until complete. */
    galloc_status_t (*event_create)(void *state, uintptr_t *event);
    galloc_status_t (*event_destroy)(void *state, uintptr_t event);
    galloc_status_t (*event_record)(void *state, uintptr_t event, galloc_stream_t s);
    galloc_status_t (*event_query)(void *state, uintptr_t event);
    galloc_status_t (*event_synchronize)(void *state, uintptr_t event);

    /* error_string: describe the last failure of this state (e.g. a CUresult's
     * name and text) into buf; optional, used to enrich galloc's messages. */
    void (*error_string)(void *state, char *buf, size_t len);
    /* stream_synchronize: wait until the work queued on stream s has completed. */
    galloc_status_t (*stream_synchronize)(void *state, galloc_stream_t s);

    /* Stream-ordered allocation from the device's default memory pool, as
     * cudaMallocAsync / cudaFreeAsync (backend:cudaMallocAsync needs all six).
     * A backend whose driver lacks the feature returns GALLOC_E_UNSUPPORTED and
     * says why through error_string. malloc_async: bytes usable on stream s
     * from its queue position on; GALLOC_E_OOM when the device is full.
     * free_async: give back an address from malloc_async, ordered on stream s.
     * pool_trim: release cached pool memory until at most keep_bytes stay
     * reserved. pool_usage: the pool's reserved and in-use bytes, current and
     * high-water (CU_MEMPOOL_ATTR_RESERVED_MEM_* / USED_MEM_*); any output may
     * be NULL. pool_reset_peak: high-water marks = current values.
     * device_synchronize: wait for all work queued on the device. */
    galloc_status_t (*malloc_async)(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr);
    galloc_status_t (*free_async)(void *state, uintptr_t addr, galloc_stream_t s);
    galloc_status_t (*pool_trim)(void *state, size_t keep_bytes);
    galloc_status_t (*pool_usage)(void *state, uint64_t *reserved_current, uint64_t *reserved_high,
                                  uint64_t *used_current, uint64_t *used_high);
    galloc_status_t (*pool_reset_peak)(void *state);
    galloc_status_t (*device_synchronize)(void *state);

    /* ---- Optional data. ---- */

    /* vendor: a galloc_backend_vendor_t. 0 (GALLOC_BACKEND_VENDOR_NONE), or a
     * table whose struct_size ends before this member: CUDA's wording. */
    uint32_t vendor;

    /* ---- Optional: NULL = not supported (appended for sleep and wake, galloc_sleep.h). ---- */

    /* Pinned host memory and copies, with which galloc_sleep offloads the
     * contents of tagged allocations and galloc_wake restores them. All four
     * are needed to offload; a pool sleeps without them only when nothing is
     * to be offloaded. host_alloc: bytes (> 0) of page-locked host memory at
     * *ptr (cuMemHostAlloc / hipHostMalloc); GALLOC_E_NOMEM when refused.
     * host_free: give back a host_alloc block (same bytes). copy_d2h: copy
     * bytes from device address src to host dst; copy_h2d: from host src to
     * device address dst. Both are complete when they return. galloc calls
     * device_synchronize (where there is one) before the first copy of a
     * sleep, so work queued on any stream that writes the memory has
     * finished. */
    galloc_status_t (*host_alloc)(void *state, size_t bytes, void **ptr);
    galloc_status_t (*host_free)(void *state, void *ptr, size_t bytes);
    galloc_status_t (*copy_d2h)(void *state, void *dst, uintptr_t src, size_t bytes);
    galloc_status_t (*copy_h2d)(void *state, uintptr_t dst, const void *src, size_t bytes);

    /* ---- Optional: NULL = not supported (appended for trace replays, galloc_sim_place). ---- */

    /* place: the device address the next segment_alloc or va_reserve takes if
     * that range is free (a replay puts segments where the traced run's driver
     * put them); used by one of them at most, 0 clears it. GALLOC_E_UNSUPPORTED
     * when the backend cannot place in its present mode (sim: any
     * sim_placement but recorded, or backed mode). galloc_sim_place calls it. */
    galloc_status_t (*place)(void *state, uintptr_t addr);

    /* ---- Optional: NULL = not supported (appended for peer access, galloc_enable_peer_access). ---- */

    /* enable_peer_access: let device peer (an ordinal other than the state's,
     * below the device count) read and write all of this state's memory:
     * segments from segment_alloc (the driver's peer access, from the peer's
     * context to this device's), every range mapped now and every range map
     * backs later (access for the peer beside the own device's). Enabling a
     * peer again is GALLOC_OK. GALLOC_E_INVAL for a bad peer;
     * GALLOC_E_UNSUPPORTED when the devices cannot reach each other or the
     * driver lacks peer access (error_string says which); any other failure
     * leaves the peer not enabled, and a later call tries again. */
    galloc_status_t (*enable_peer_access)(void *state, int peer);

    /* ---- Optional: NULL = not supported (appended for sharing memory between processes, galloc_ipc.h). ---- */

    /* Plain segments (all three, or none). ipc_export: the driver's IPC handle
     * of the segment segment_alloc returned at addr (its base), as
     * GALLOC_BACKEND_IPC_BYTES bytes into handle (cuIpcGetMemHandle /
     * hipIpcGetMemHandle). ipc_open: map into this process a segment of bytes
     * bytes that another process exported (handle: that process's ipc_export
     * bytes), at *addr (cuIpcOpenMemHandle with lazy peer access); a handle of
     * this process's own is refused by the driver (GALLOC_E_DEVICE or
     * GALLOC_E_INVAL). ipc_close: undo an ipc_open or an import_pages, by the
     * address they gave (cuIpcCloseMemHandle; for imports unmap, release and
     * free the reservation). Whatever is still open at close is closed. */
    galloc_status_t (*ipc_export)(void *state, uintptr_t addr, void *handle);
    galloc_status_t (*ipc_open)(void *state, const void *handle, size_t bytes, uintptr_t *addr);
    galloc_status_t (*ipc_close)(void *state, uintptr_t addr);
    /* Virtual memory between processes (both, and the five VMM members).
     * export_page: a new POSIX file descriptor, the caller's to close, for the
     * physical memory one map call backed at [addr, addr + its bytes)
     * (cuMemExportToShareableHandle; map creates exportable memory, as PyTorch's
     * expandable segments do). import_pages: n descriptors from another
     * process's export_page, each for page bytes, mapped in that order into a
     * fresh reservation at *addr, read-write for this device and every enabled
     * peer (cuMemImportFromShareableHandle, cuMemMap, cuMemSetAccess); the
     * descriptors stay the caller's; a failure leaves nothing behind. */
    galloc_status_t (*export_page)(void *state, uintptr_t addr, int *fd);
    galloc_status_t (*import_pages)(void *state, const int *fds, size_t n, size_t page, uintptr_t *addr);

    /* ---- Optional: NULL = not supported (appended for graph_capture_record_stream_reuse). ---- */

    /* Stream capture into a graph (both, or none), as PyTorch reads it to
     * reuse, during a capture, blocks freed with stream uses. capture_info:
     * whether stream s is being captured: *capture_id (nonzero) names the
     * capture, and the nodes that work queued next on s would depend on (its
     * capture frontier: cuStreamGetCaptureInfo_v2's / hipStreamGetCaptureInfo_v2's
     * dependencies) go into nodes, at most cap of them; *n is their number,
     * which may exceed cap (call again with more room). A stream that is not
     * capturing gives *capture_id = 0 and *n = 0. An invalidated capture is a
     * failure (GALLOC_E_DEVICE). node_deps: the nodes a node of a capture
     * graph depends on (cuGraphNodeGetDependencies /
     * hipGraphNodeGetDependencies), with the same cap and *n. Node handles
     * are the driver's, valid while the capture lasts. */
    galloc_status_t (*capture_info)(void *state, galloc_stream_t s, uint64_t *capture_id, uintptr_t *nodes, size_t cap,
                                    size_t *n);
    galloc_status_t (*node_deps)(void *state, uintptr_t node, uintptr_t *deps, size_t cap, size_t *n);

    /* ---- Optional: NULL = not supported (appended for the pinned host cache, galloc_host.h). ---- */

    /* Page-locking of host memory the caller allocated (both, or neither):
     * with pinned_use_cuda_host_register:True the host cache mallocs a block,
     * faults its pages in and registers it, as PyTorch's
     * allocWithCudaHostRegister does, instead of calling host_alloc.
     * host_register: make [ptr, ptr + bytes) (bytes > 0) pinned memory usable
     * by this device's copies (cuMemHostRegister_v2 with
     * CU_MEMHOSTREGISTER_PORTABLE, hipHostRegister with hipHostRegisterDefault,
     * which HIP makes portable); GALLOC_E_NOMEM when the driver refuses for
     * lack of memory; GALLOC_E_INVAL for a range that overlaps one registered
     * already. host_unregister: undo the host_register of that ptr and bytes
     * (cuMemHostUnregister / hipHostUnregister); the memory stays the
     * caller's to free; GALLOC_E_INVAL for a range not registered so. Whatever
     * is still registered at close is unregistered. */
    galloc_status_t (*host_register)(void *state, void *ptr, size_t bytes);
    galloc_status_t (*host_unregister)(void *state, void *ptr, size_t bytes);
    /* Append new members here; never insert or reorder. */
} galloc_backend_ops_t;

/*
 * galloc_backend_register: add a backend (e.g. a user's own device layer) to the
 * process-wide registry so that "device_backend:<ops->name>" selects it.
 * ops must stay valid until the process ends. Returns GALLOC_E_INVAL if ops is
 * NULL, struct_size/version are unknown, a required member is NULL, the name
 * is empty or longer than 31 bytes, or vendor (where struct_size covers it) is
 * not a galloc_backend_vendor_t value; GALLOC_E_CONFIG if the name is taken;
 * GALLOC_E_NOMEM if the registry is full (64 entries). Thread-safe.
 */
GALLOC_API galloc_status_t galloc_backend_register(const galloc_backend_ops_t *ops);

/*
 * galloc_backend_find: the registered backend called name, or NULL.
 * Built-in backends ("sim") are always registered. Thread-safe.
 */
GALLOC_API const galloc_backend_ops_t *galloc_backend_find(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_BACKEND_H */

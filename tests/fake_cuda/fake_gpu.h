/*
 * fake_gpu.h: the vendor-neutral core of galloc's strict fake GPU drivers.
 *
 * The core models a GPU driver in host memory and enforces its contracts;
 * a thin vendor layer (fake_cuda.c for the CUDA driver API, tests/fake_hip/
 * fake_hip.c for the HIP runtime API) exports the vendor's symbols, converts its structs
 * and result codes, and calls these functions. So both fakes share one set of
 * contract checks, counters and fault injection, with no renamed copies.
 *
 * Model. Devices (default 2 x 80 GiB, granularity 2 MiB) have a primary
 * context with a reference count and a per-thread current context. Device
 * memory is real host memory: linear allocations and pool chunks are private
 * mmaps aligned to the granularity; a physical handle is a shared anonymous
 * mapping aliased into a reservation at map time (mremap), made accessible
 * only by set_access; an unmapped or released range is PROT_NONE again, so a
 * use after unmap faults as on a GPU. Capacity is charged per granularity
 * page (linear allocations and pool chunks round up), per handle size.
 *
 * Contracts enforced (a refusal returns the vendor's code for the FG_* value,
 * counts a violation and records a message naming the function):
 *   - init before anything; a live context current for memory, VMM, event,
 *     stream and pool-allocation calls; resources used only from their
 *     device's context; device ordinals in range;
 *   - linear memory: no size 0, free only live allocations (no double free);
 *   - VMM: sizes, addresses and offsets multiples of the granularity; maps
 *     only inside one reservation, never overlapping a mapping; unmap covers
 *     whole mappings; set_access only on mapped ranges; a reservation is freed
 *     whole and only once nothing is mapped in it ("unmap before release");
 *     a handle is released once (release while mapped is deferred, as CUDA's);
 *   - events and streams: handles must be live (0 is the default stream);
 *   - pools: stream-ordered frees only of live stream-ordered allocations;
 *     high-water marks may only be reset (set to 0); current values are read-only.
 *
 * Stream-ordered pool: each allocation gets its own chunk (size rounded to the
 * granularity); "used" counts allocations rounded to 512 bytes, "reserved" the
 * chunks; a freed chunk stays reserved and is reused (smallest fit) by an
 * allocation on the freeing stream or once that stream has completed the
 * free; synchronization releases free chunks down to the release threshold
 * (default 0), trim down to the given size.
 *
 * Streams complete their work immediately unless manual mode is on, where an
 * event recorded (or a free queued) on a stream completes only when the
 * stream is synchronized, a later event on it is waited for, the context is
 * synchronized, or the test completes it (fg_stream_complete).
 *
 * Contents: device memory holds bytes (it is host memory), so what one call
 * writes another reads back. A new physical handle is not zeroed, as a real
 * driver's is not: the first FAKE_GPU_GARBAGE_RUN bytes of every granularity
 * page (from its start) hold FAKE_GPU_GARBAGE, the rest is zero (writing
 * only those keeps the host from backing every page of a mapping no test
 * reads). So a test tells contents that were restored from
 * contents that were discarded when a page was released and a new one
 * mapped; the handle's bytes stay with it across unmap and map again, and
 * are gone once it is released. Linear allocations start zeroed.
 *
 * Pinned host memory (host_alloc / host_free, cuMemHostAlloc-style) is real
 * host memory tracked per block; host_register (cuMemHostRegister-style)
 * page-locks a range of the caller's memory (it reads the range's first and
 * last byte, so a bogus pointer faults as the driver's page walk would), and
 * refuses, as a violation, a range that is device memory, overlaps a pinned
 * block or a registered range (FG_HOST_ALREADY_REGISTERED), or is empty;
 * host_unregister takes the exact start of a live range, else
 * FG_HOST_NOT_REGISTERED (a violation); ranges are tracked per context, and
 * one left when the context goes is a leak; copies (copy_d2h / copy_h2d, synchronous)
 * need a live context and a device range of its device that is live linear
 * memory or mapped with the access the copy needs (read for d2h, read-write
 * for h2d), and a host range that is no device memory and, where it starts in
 * a pinned block, stays inside it. Host memory that is not pinned is allowed
 * (the driver copies pageable memory too).
 *
 * Between processes (IPC). ipc_get gives the base of a live linear allocation
 * as 64 bytes (fg_ipc_wire_t: magic, the exporter's pid, the number of the
 * memfd the exporter keeps open while the allocation lives, the device, the
 * size, and the memfd's inode and st_dev as the cookie); ipc_open in another
 * process of the same user opens /proc/<pid>/fd/<n>, checks that the file is
 * still that inode (a freed allocation's reused fd number is refused) and
 * maps it at a fresh address of its own, in the current context, charged to
 * no device's capacity (the exporter's device pays), live until ipc_close
 * (live_ipc_opens, counted in leaks; a context destroyed with opens leaks
 * them). Opening a handle of one's own process is FG_INVALID_CONTEXT (not a
 * violation: CUDA refuses it too, and a caller may try); opening the same
 * handle twice in a process is a violation (CUDA refcounts it, galloc must
 * not rely on that). export_fd gives a new descriptor (a dup of the memfd,
 * the caller's to close) of a live handle created with the POSIX
 * file-descriptor type requested (phys_create's exportable), else a
 * violation; import_fd makes a new handle of the current device over that
 * file's pages, with its contents as they are (no garbage), charged to no
 * device (the exporter's pays), released by phys_release like any other; the
 * caller keeps its descriptor. Mapped, both processes see each other's writes.
 * After fork() the child inherits a copy of the fake's tables and mappings
 * that still share memfd pages with the parent: it must call the fake's reset
 * control before using it (as a CUDA process cannot use a context created
 * before fork); the reset unmaps only the child's copies.
 *
 * Capture (fake_gpu_graph.c): a model of stream capture into a graph, driven
 * by the test (no kernel exists to launch): capture_begin starts a capture on
 * a test-owned stream (new nonzero id, new graph, empty frontier);
 * capture_launch adds a kernel node depending on the stream's frontier,
 * which becomes that node; capture_join is cudaEventRecord(e, from) +
 * cudaStreamWaitEvent(to, e): to's frontier becomes the union of both (a
 * stream that was not capturing joins from's capture with from's frontier);
 * capture_end, on the stream that began the capture, ends it for every
 * stream in it (real CUDA also requires each joined stream to have been
 * joined back into the origin, CUDA_ERROR_STREAM_CAPTURE_UNJOINED: the fake
 * does not check that); capture_invalidate marks it invalidated, as a
 * refused operation would. The graph and its nodes stay valid (node_deps)
 * until reset, as a graph outlives its capture. The driver's side reads it:
 * capture_info, node_deps. Refused as the real drivers refuse them, each a
 * violation: synchronizing a capturing stream (FG_CAPTURE_UNSUPPORTED, and
 * the capture is invalidated), querying or waiting for an event last recorded
 * on a capturing stream (FG_CAPTURED_EVENT; recording it again outside a
 * capture clears that). The legacy stream (0) never captures.
 *
 * Leaks: when a primary context's last reference goes, everything still
 * allocated on its device (linear and pool allocations not freed, handles,
 * mappings, reservations, events, pinned host blocks allocated in it) is counted as leaked and freed. fg_stats'
 * leaks = those + everything live now + context references still held.
 *
 * Fault injection: rules name a function (or "*" for every call) and fail its
 * nth call from when the rule was set, or every call from the nth on, with a
 * given vendor code; the injected failure changes nothing.
 *
 * Thread-safety: one process-wide mutex; every function may be called from
 * any thread.
 */
#ifndef GA_TESTS_FAKE_GPU_H
#define GA_TESTS_FAKE_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAKE_GPU_MAX_DEVICES 8
/* What a new physical handle holds (see Contents). */
#define FAKE_GPU_GARBAGE 0xDB
#define FAKE_GPU_GARBAGE_RUN 256

/* What the fake has seen since the last reset (fake_*_stats). */
typedef struct fake_gpu_stats {
    uint64_t calls;              /* exported driver calls */
    uint64_t faults;             /* of those, failed by injection */
    uint64_t violations;         /* of those, refused for breaking a contract */
    uint64_t leaks;              /* leaked_at_destroy + live resources + ctx_refs */
    uint64_t leaked_at_destroy;  /* resources alive when their context was destroyed */
    uint64_t live_segments;      /* linear allocations (cuMemAlloc) */
    uint64_t live_segment_bytes; /* their requested sizes */
    uint64_t live_async;         /* stream-ordered allocations not freed */
    uint64_t live_async_bytes;   /* their requested sizes */
    uint64_t live_handles;       /* physical handles not released */
    uint64_t live_handle_bytes;
    uint64_t live_mappings; /* map calls not unmapped */
    uint64_t live_mapped_bytes;
    uint64_t live_reservations; /* address ranges not freed */
    uint64_t live_events;
    uint64_t events_with_timing;                /* events ever created without DISABLE_TIMING */
    uint64_t live_streams;                      /* streams created through the control API */
    uint64_t ctx_refs;                          /* primary-context references held, all devices */
    uint64_t device_used[FAKE_GPU_MAX_DEVICES]; /* bytes charged against each device's capacity */
    uint64_t live_host_blocks;                  /* pinned host blocks not freed (counted in leaks) */
    uint64_t live_host_bytes;                   /* their requested sizes */
    uint64_t peak_host_bytes;                   /* high-water of live_host_bytes since the reset */
    uint64_t copied_d2h_bytes;                  /* bytes copied device to host since the reset */
    uint64_t copied_h2d_bytes;                  /* bytes copied host to device since the reset */
    uint64_t live_ipc_opens;                    /* ipc_open mappings not closed (counted in leaks) */
    uint64_t live_reserved_bytes;               /* the sizes of the address ranges not freed */
    uint64_t last_reserved_bytes;               /* the size of the last address range reserved (0: none yet) */
    uint64_t live_host_registered;              /* host_register ranges not unregistered (counted in leaks) */
    uint64_t live_registered_bytes;             /* their sizes */
    uint64_t peak_registered_bytes;             /* high-water of live_registered_bytes since the reset */
} fake_gpu_stats_t;

/* The bytes of an IPC handle (CU_IPC_HANDLE_SIZE, HIP_IPC_HANDLE_SIZE). */
#define FAKE_GPU_IPC_BYTES 64

/* Neutral results; a vendor layer maps each to its own code. */
typedef enum fg_rc {
    FG_OK,
    FG_INVALID_VALUE,
    FG_OUT_OF_MEMORY,
    FG_NOT_INITIALIZED,
    FG_INVALID_DEVICE,
    FG_INVALID_CONTEXT,
    FG_INVALID_HANDLE,
    FG_NOT_READY,
    FG_NOT_SUPPORTED,
    FG_PEER_UNSUPPORTED,        /* CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, hipErrorPeerAccessUnsupported */
    FG_PEER_ALREADY_ENABLED,    /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, hipErrorPeerAccessAlreadyEnabled */
    FG_CAPTURE_UNSUPPORTED,     /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, hipErrorStreamCaptureUnsupported */
    FG_CAPTURED_EVENT,          /* CUDA_ERROR_CAPTURED_EVENT, hipErrorCapturedEvent */
    FG_HOST_ALREADY_REGISTERED, /* CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, hipErrorHostMemoryAlreadyRegistered */
    FG_HOST_NOT_REGISTERED      /* CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, hipErrorHostMemoryNotRegistered */
} fg_rc_t;

/* A stream's capture status, as both vendors number it. */
enum { FG_CAPTURE_NONE = 0, FG_CAPTURE_ACTIVE = 1, FG_CAPTURE_INVALIDATED = 2 };

/* Pool attributes (values are 64-bit; the reuse flags 0 or 1). */
typedef enum fg_pool_attr {
    FG_POOL_REUSE_FOLLOW_EVENTS,
    FG_POOL_REUSE_OPPORTUNISTIC,
    FG_POOL_REUSE_INTERNAL_DEPS,
    FG_POOL_RELEASE_THRESHOLD,
    FG_POOL_RESERVED_CURRENT,
    FG_POOL_RESERVED_HIGH,
    FG_POOL_USED_CURRENT,
    FG_POOL_USED_HIGH
} fg_pool_attr_t;

/* ---- Called at the top of every exported driver function. ---- */

/* Count the call of fn (a static string), trace it and apply fault rules:
 * true and *code = the injected vendor code when this call must fail. */
bool fg_enter(const char *fn, int *code);
/* A contract refusal the vendor layer detected itself (a bad struct): counts
 * a violation, records the message, returns rc. */
fg_rc_t fg_violation(fg_rc_t rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- The driver model (stream 0 is the current context's default stream). ---- */

fg_rc_t fg_init(unsigned flags);
fg_rc_t fg_device_count(int *count);
fg_rc_t fg_device_get(int *device, int ordinal);
fg_rc_t fg_ctx_retain(void **ctx, int device);
fg_rc_t fg_ctx_release(int device);
fg_rc_t fg_ctx_get(void **ctx);
fg_rc_t fg_ctx_set(void *ctx);
fg_rc_t fg_ctx_synchronize(void);

/* A runtime API's implicit contexts (HIP): the runtime retains a device's
 * primary context the first time a thread uses the device and holds it for
 * the process, so those references are not counted in ctx_refs or leaks
 * (everything allocated still is). The current device is per thread, device 0
 * until set. All three require init. */
fg_rc_t fg_rt_set_device(int device);
fg_rc_t fg_rt_get_device(int *device);
/* Before a call that needs a context: a thread that never chose a device gets
 * device 0's context current, as the runtime does. No-op before init. */
void fg_rt_bind(void);

fg_rc_t fg_mem_alloc(uint64_t *addr, size_t bytes);
fg_rc_t fg_mem_free(uint64_t addr);
fg_rc_t fg_mem_info(size_t *free_bytes, size_t *total_bytes);

fg_rc_t fg_granularity(int device, size_t *bytes);
fg_rc_t fg_va_reserve(uint64_t *addr, size_t size, size_t alignment, uint64_t hint, unsigned long long flags);
fg_rc_t fg_va_free(uint64_t addr, size_t size);
/* exportable: the caller requested the POSIX file-descriptor handle type,
 * which export_fd needs. */
fg_rc_t fg_phys_create(uint64_t *handle, size_t size, int device, unsigned long long flags, bool exportable);
fg_rc_t fg_phys_release(uint64_t handle);
fg_rc_t fg_map(uint64_t addr, size_t size, size_t offset, uint64_t handle, unsigned long long flags);
fg_rc_t fg_unmap(uint64_t addr, size_t size);
/* prot: 0 none, 1 read, 3 read-write, for device. Every mapping in the
 * range records each device's access; the host mapping takes the access of
 * the device the memory lives on (the handle's). A device that cannot reach
 * that device (fg_peer_block) is refused (a violation, FG_INVALID_DEVICE). */
fg_rc_t fg_set_access(uint64_t addr, size_t size, int device, int prot);

/* Peer access (fake_gpu_peer.c). Devices reach each other unless a test
 * blocked the pair. can_access_peer: whether device may access peer's memory.
 * peer_enable_ctx: the current context gains access to the memory of
 * peer_ctx's device (cuCtxEnablePeerAccess); peer_enable_device: the same by
 * ordinal (hipDeviceEnablePeerAccess, current device). A second enable of a
 * pair is FG_PEER_ALREADY_ENABLED, a blocked pair FG_PEER_UNSUPPORTED, the
 * current device itself FG_INVALID_DEVICE. Access lasts until either
 * context is destroyed. */
fg_rc_t fg_can_access_peer(int *can, int device, int peer);
fg_rc_t fg_peer_enable_ctx(void *peer_ctx);
fg_rc_t fg_peer_enable_device(int peer);

/* Between processes (fake_gpu_ipc.c; see IPC above). ipc_get: the handle of
 * the linear allocation based at addr into FAKE_GPU_IPC_BYTES bytes at out.
 * ipc_open: flags 0 or 1 (lazy peer access). fd_export: a new descriptor of
 * handle's memory. fd_import: a new handle over fd's memory. */
fg_rc_t fg_ipc_get(uint64_t addr, void *out);
fg_rc_t fg_ipc_open(uint64_t *addr, const void *in, unsigned flags);
fg_rc_t fg_ipc_close(uint64_t addr);
fg_rc_t fg_export_fd(uint64_t handle, int *fd);
fg_rc_t fg_import_fd(uint64_t *handle, int fd);

fg_rc_t fg_event_create(void **event, bool timing);
/* fg_event_create for a vendor's call with flags, which both vendors number
 * alike (blocking sync 0x1, disable timing 0x2, interprocess 0x4, which needs
 * disable timing): a flag outside allowed is a violation. */
fg_rc_t fg_event_create_flags(void **event, unsigned flags, unsigned allowed);
fg_rc_t fg_event_destroy(void *event);
fg_rc_t fg_event_record(void *event, uintptr_t stream);
fg_rc_t fg_event_query(void *event);
fg_rc_t fg_event_synchronize(void *event);
fg_rc_t fg_stream_synchronize(uintptr_t stream);

/* Stream capture (fake_gpu_graph.c; see Capture above). capture_info:
 * stream's status (FG_CAPTURE_*) into *status (required); when ACTIVE, the
 * capture's id, its graph and the stream's frontier (the core's array, valid
 * until the next call on the stream) into those that are not NULL, else 0 /
 * NULL. node_deps: deps NULL: node's dependency count into *n; otherwise
 * min(*n, count) of them into deps, the rest of the *n entries NULL, and *n
 * the number filled (CUDA's documented semantics). An unknown node is a
 * violation (FG_INVALID_HANDLE). */
fg_rc_t fg_capture_info(uintptr_t stream, int *status, uint64_t *id, void **graph, void *const **deps, size_t *n);
fg_rc_t fg_node_deps(void *node, void **deps, size_t *n);

fg_rc_t fg_pool_default(void **pool, int device);
fg_rc_t fg_pool_set(void *pool, fg_pool_attr_t attr, uint64_t value);
fg_rc_t fg_pool_get(void *pool, fg_pool_attr_t attr, uint64_t *value);
/* The same with the vendor's attribute number, as cuMemPoolSetAttribute and
 * hipMemPoolSetAttribute take it (CUmemPool_attribute and hipMemPoolAttr
 * agree: 1..8, the core's attribute + 1): value points at an int for the
 * reuse flags (1..3), at a 64-bit value for the rest. An unknown number or a
 * NULL value is a violation. */
fg_rc_t fg_pool_set_number(void *pool, int attr, void *value);
fg_rc_t fg_pool_get_number(void *pool, int attr, void *value);
fg_rc_t fg_pool_trim(void *pool, size_t keep_bytes);
fg_rc_t fg_malloc_async(uint64_t *addr, size_t bytes, uintptr_t stream);
fg_rc_t fg_free_async(uint64_t addr, uintptr_t stream);

/* Pinned host memory and synchronous copies (see Pinned host memory). */
fg_rc_t fg_host_alloc(void **ptr, size_t bytes);
/* fg_host_alloc for a vendor's call with flags: a flag outside allowed (the
 * bits the vendor defines) is a violation. */
fg_rc_t fg_host_alloc_flags(void **ptr, size_t bytes, unsigned flags, unsigned allowed);
fg_rc_t fg_host_free(void *ptr);
/* Registering the caller's host memory (see Pinned host memory); flags
 * outside allowed (the bits the vendor defines) are a violation. */
fg_rc_t fg_host_register(void *ptr, size_t bytes, unsigned flags, unsigned allowed);
fg_rc_t fg_host_unregister(void *ptr);
fg_rc_t fg_copy_d2h(void *dst, uint64_t src, size_t bytes);
fg_rc_t fg_copy_h2d(uint64_t dst, const void *src, size_t bytes);

/* ---- Control, for tests (the vendor layer exports them under its prefix). ---- */

/* Free everything, forget all counters, rules and the trace, and go back to
 * the defaults (2 devices of 80 GiB, 2 MiB granularity, automatic streams,
 * not initialized). Whatever was still live is not counted anywhere. */
void fg_reset(void);
/* Devices, capacity each and granularity (a power of two); -1 while a context
 * is retained or for bad values. */
int fg_configure(int devices, uint64_t bytes_per_device, uint64_t granularity);
/* Add a fault rule (up to 16): fn ("*" = any), nth (0 = off) and from (0 =
 * off) count fn's calls from now on, 1-based; code is the vendor code to return. */
int fg_fail(const char *fn, uint64_t nth, uint64_t from, int code);
void fg_fail_clear(void);
/* Calls of fn since the reset ("*": all calls). */
uint64_t fg_calls(const char *fn);
void fg_stats(fake_gpu_stats_t *out);
/* The functions called since the last trace clear, comma-separated (a full
 * buffer keeps the first 64 KiB); returns the length. */
size_t fg_trace(char *buf, size_t len);
void fg_trace_clear(void);
/* The last violation's message; returns its length (0 if none). */
size_t fg_last_violation(char *buf, size_t len);
void fg_set_manual_streams(bool on);
/* Streams owned by the test (not by a context; no driver call is counted). */
int fg_stream_create(int device, uintptr_t *stream);
int fg_stream_destroy(uintptr_t stream);
/* Complete the work queued so far on stream (0: the device's default stream). */
int fg_stream_complete(int device, uintptr_t stream);
/* Read a device's default-pool attribute, by the vendor's number (1..8, see
 * fg_pool_set_number), without a context. */
int fg_pool_attr(int device, int attr, uint64_t *value);
/* The access device has to the mapped page at addr (0 none, 1 read, 3
 * read-write), -1 when addr is not mapped. */
int fg_access(uint64_t addr, int device);
/* Live mappings whose access for device is not read-write (0: device can
 * read and write every mapped page). */
int fg_mappings_without(int device);
/* Whether from's context has peer access to to's memory (enabled, both alive). */
int fg_peer_enabled(int from, int to);
/* Make devices a and b unable (blocked != 0) or able to reach each other,
 * both ways; -1 for a bad ordinal. Reset unblocks every pair. */
int fg_peer_block(int a, int b, bool blocked);
/* Stream capture (see Capture; no driver call is counted). Streams are
 * test-owned streams (fg_stream_create). capture_begin: -1 if the stream is
 * not one or already captures. capture_launch: the new node's handle into
 * *node; -1 unless the stream's capture is active. capture_join: -1 unless
 * from's capture is active, or if to takes part in another capture.
 * capture_end: -1 unless stream began a capture not yet ended (an
 * invalidated one ends too). capture_invalidate: -1 if stream is not
 * capturing. */
int fg_capture_begin(uintptr_t stream);
int fg_capture_launch(uintptr_t stream, uintptr_t *node);
int fg_capture_join(uintptr_t from, uintptr_t to);
int fg_capture_end(uintptr_t stream);
int fg_capture_invalidate(uintptr_t stream);

/*
 * The controls every fake exports under its prefix (fake_cuda_configure,
 * fake_hip_configure, ...): each is the core's function of the same name
 * (fg_configure, ...), with an int for a bool. A fake's control header
 * declares them (FAKE_GPU_DECLARE_CONTROLS(fake_cuda)) beside its own
 * <prefix>_reset, and its vendor layer defines them
 * (FAKE_GPU_DEFINE_CONTROLS(fake_cuda)). FAKE_GPU_CONTROLS(R, V, P) gives
 * R(type, name, params, call) for each control that returns a value and
 * V(name, params, call) for each that does not. fail's fn is an exported
 * name ("cuMemAlloc_v2", "hipMemCreate") or "*", and code the vendor's
 * result to return; pool_attr's attr is the vendor's number (1..8).
 */
#define FAKE_GPU_CONTROLS(R, V, P)                                                                                     \
    R(int, P##_configure, (int devices, uint64_t bytes_per_device, uint64_t granularity),                              \
      fg_configure(devices, bytes_per_device, granularity))                                                            \
    R(int, P##_fail, (const char *fn, uint64_t nth, uint64_t from, int code), fg_fail(fn, nth, from, code))            \
    V(P##_fail_clear, (void), fg_fail_clear())                                                                         \
    R(uint64_t, P##_calls, (const char *fn), fg_calls(fn))                                                             \
    V(P##_stats, (fake_gpu_stats_t * out), fg_stats(out))                                                              \
    R(size_t, P##_trace, (char *buf, size_t len), fg_trace(buf, len))                                                  \
    V(P##_trace_clear, (void), fg_trace_clear())                                                                       \
    R(size_t, P##_last_violation, (char *buf, size_t len), fg_last_violation(buf, len))                                \
    V(P##_set_manual_streams, (int on), fg_set_manual_streams(on != 0))                                                \
    R(int, P##_stream_create, (int device, uintptr_t *stream), fg_stream_create(device, stream))                       \
    R(int, P##_stream_destroy, (uintptr_t stream), fg_stream_destroy(stream))                                          \
    R(int, P##_stream_complete, (int device, uintptr_t stream), fg_stream_complete(device, stream))                    \
    R(int, P##_pool_attr, (int device, int attr, uint64_t *value), fg_pool_attr(device, attr, value))                  \
    R(int, P##_access, (uint64_t addr, int device), fg_access(addr, device))                                           \
    R(int, P##_mappings_without, (int device), fg_mappings_without(device))                                            \
    R(int, P##_peer_enabled, (int from, int to), fg_peer_enabled(from, to))                                            \
    R(int, P##_peer_block, (int a, int b, int blocked), fg_peer_block(a, b, blocked != 0))                             \
    R(int, P##_capture_begin, (uintptr_t stream), fg_capture_begin(stream))                                            \
    R(int, P##_capture_launch, (uintptr_t stream, uintptr_t * node), fg_capture_launch(stream, node))                  \
    R(int, P##_capture_join, (uintptr_t from, uintptr_t to), fg_capture_join(from, to))                                \
    R(int, P##_capture_end, (uintptr_t stream), fg_capture_end(stream))                                                \
    R(int, P##_capture_invalidate, (uintptr_t stream), fg_capture_invalidate(stream))

#define FAKE_GPU_DECLARE_R_(type, name, params, call) type name params;
#define FAKE_GPU_DECLARE_V_(name, params, call) void name params;
#define FAKE_GPU_DECLARE_CONTROLS(P) FAKE_GPU_CONTROLS(FAKE_GPU_DECLARE_R_, FAKE_GPU_DECLARE_V_, P)

#define FAKE_GPU_DEFINE_R_(type, name, params, call)                                                                   \
    __attribute__((visibility("default"))) type name params                                                            \
    {                                                                                                                  \
        return call;                                                                                                   \
    }
#define FAKE_GPU_DEFINE_V_(name, params, call)                                                                         \
    __attribute__((visibility("default"))) void name params                                                            \
    {                                                                                                                  \
        call;                                                                                                          \
    }
#define FAKE_GPU_DEFINE_CONTROLS(P) FAKE_GPU_CONTROLS(FAKE_GPU_DEFINE_R_, FAKE_GPU_DEFINE_V_, P)

#ifdef __cplusplus
}
#endif
#endif /* GA_TESTS_FAKE_GPU_H */

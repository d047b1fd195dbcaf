/*
 * galloc_allocator.h: create a device allocator, allocate and free device memory.
 *
 * A galloc_allocator_t owns one device (a backend state) and one allocator
 * implementation behind an ops table, chosen at create: the native caching
 * pool, which reproduces PyTorch's CUDA caching allocator exactly; the
 * stream-ordered driver pool (backend:cudaMallocAsync); or, through
 * galloc_allocator_create_user, the caller's own allocator. Every call is
 * thread-safe: the allocator serializes calls with its own lock.
 *
 * Errors: every call returns a galloc_status_t; on failure the allocator's
 * last-error message (galloc_last_error) says what happened with figures. A
 * failed call changes no allocator state except what PyTorch itself changes on
 * that path (an OOM counts num_ooms and may have released cached segments).
 */
#ifndef GALLOC_ALLOCATOR_H
#define GALLOC_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_backend.h>
#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct galloc_allocator galloc_allocator_t;

/* Size of the per-allocator error message buffer, NUL included. */
#define GALLOC_ERROR_MAX 1024

/*
 * galloc_allocator_create: open device `device` of backend `backend` and create
 * a caching allocator on it, configured by `conf`.
 *   backend: a registered backend name ("sim"), or NULL to take the config's
 *            device_backend (default "sim").
 *   device:  device index >= 0.
 *   conf:    a PYTORCH_CUDA_ALLOC_CONF-style string, e.g.
 *            "max_split_size_mb:512,roundup_power2_divisions:4", or NULL/"" for
 *            PyTorch's defaults. galloc's own allocator keys (device_backend,
 *            retry_pool_after_sync) are accepted in the same string; any other
 *            key is the device backend's (sim_capacity:80GiB, driver_path:PATH,
 *            a registered backend's own), handed to it as
 *            galloc_backend_args_t.options, and a key the backend does not take
 *            fails the creation. It is applied on top of the environment:
 *            PYTORCH_ALLOC_CONF (or, if unset, PYTORCH_CUDA_ALLOC_CONF), then
 *            GALLOC_CONF, then conf; each overrides only the keys it names
 *            (galloc_allocator_create_ex with GALLOC_CREATE_NO_ENV reads none).
 *   out:     receives the allocator; set to NULL on failure.
 *   err:     if non-NULL, receives a message on failure (errlen bytes, NUL-terminated).
 * Returns GALLOC_OK; GALLOC_E_INVAL (NULL out, device < 0); GALLOC_E_CONFIG (bad
 * conf string, or a backend option the backend refuses: the message names the
 * source string, key, value and offset in that string); GALLOC_E_UNAVAILABLE
 * (unknown backend, or its library/device missing); GALLOC_E_NOMEM.
 */
GALLOC_API galloc_status_t galloc_allocator_create(const char *backend, int device, const char *conf,
                                                   galloc_allocator_t **out, char *err, size_t errlen);

/* Flags of galloc_allocator_create_ex. */
#define GALLOC_CREATE_NO_ENV                                                                                           \
    0x1u /* read no environment variable: conf alone (over PyTorch's defaults)
                                     configures the allocator, whatever the process's environment */

/*
 * galloc_allocator_create_ex: galloc_allocator_create with flags (a bitwise
 * OR of GALLOC_CREATE_*; 0 is exactly galloc_allocator_create). With
 * GALLOC_CREATE_NO_ENV, PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF and
 * GALLOC_CONF are not read: a tool that replays a traced job under settings
 * it names (galloc replay, galloc fit) gets the same answer whatever its
 * shell exports. Returns what galloc_allocator_create returns, and
 * GALLOC_E_INVAL for an unknown flag bit.
 */
GALLOC_API galloc_status_t galloc_allocator_create_ex(const char *backend, int device, const char *conf, uint32_t flags,
                                                      galloc_allocator_t **out, char *err, size_t errlen);

/*
 * galloc_allocator_destroy: release every segment back to the device and free
 * the allocator. Blocks still allocated become invalid. NULL is a no-op. Must
 * not race with other calls on the same allocator.
 * After destroy, every call through the handle returns GALLOC_E_DESTROYED
 * (galloc_allocator_backend returns NULL, a second destroy does nothing) for
 * as long as galloc keeps the handle's header: the 64 most recently destroyed
 * are kept. A call through an older handle is undefined, as free() twice is:
 * set your copy to NULL.
 */
GALLOC_API void galloc_allocator_destroy(galloc_allocator_t *a);

/*
 * galloc_malloc: allocate `size` bytes usable on `stream` and store the device
 * address in *ptr. size 0 stores NULL and changes nothing (as PyTorch).
 * Returns GALLOC_OK; GALLOC_E_INVAL (NULL a or ptr); GALLOC_E_OOM with PyTorch's
 * "CUDA out of memory. Tried to allocate ..." message (also for size >= 2^60,
 * "Tried to allocate more than 1EB memory."); GALLOC_E_DEVICE if the device
 * failed otherwise, including a failed poll of, or wait for, a block freed on
 * another stream (that block stays pending); GALLOC_E_NOMEM if host memory for
 * bookkeeping ran out.
 * On failure *ptr is NULL. Addresses from the sim backend are not
 * dereferenceable unless it runs in backed mode (sim_backed:True).
 */
GALLOC_API galloc_status_t galloc_malloc(galloc_allocator_t *a, size_t size, galloc_stream_t stream, void **ptr);

/*
 * galloc_free: return a block from galloc_malloc on this allocator to its pool.
 * NULL is a no-op (GALLOC_OK). Returns GALLOC_E_NOT_OWNED for a pointer this
 * allocator did not hand out or already freed (including interior pointers),
 * leaving the allocator untouched; GALLOC_E_INVAL for a NULL allocator.
 */
GALLOC_API galloc_status_t galloc_free(galloc_allocator_t *a, void *ptr);

/*
 * galloc_record_stream: mark the block at ptr as used on `stream` as well as on
 * the stream it was allocated for (PyTorch's Tensor.record_stream). When the
 * block is freed, it is only reused after the work queued on every such stream
 * up to the free has completed (an event is recorded on each). Returns
 * GALLOC_OK; GALLOC_E_NOT_OWNED for a pointer that is not a live block of this
 * allocator; GALLOC_E_UNSUPPORTED if the backend has no events.
 */
GALLOC_API galloc_status_t galloc_record_stream(galloc_allocator_t *a, void *ptr, galloc_stream_t stream);

/*
 * galloc_stream_synchronize: wait until the work queued on `stream` has
 * completed (cuStreamSynchronize; on the sim device with manual events, this
 * is what completes them). Blocks waiting on that work become reusable at the
 * next allocation. Returns GALLOC_OK, GALLOC_E_INVAL, GALLOC_E_UNSUPPORTED.
 */
GALLOC_API galloc_status_t galloc_stream_synchronize(galloc_allocator_t *a, galloc_stream_t stream);

/*
 * galloc_empty_cache: release every cached segment that holds no live block
 * back to the device (PyTorch's torch.cuda.empty_cache: counts
 * num_sync_all_streams once). Returns GALLOC_OK, GALLOC_E_INVAL, or
 * GALLOC_E_DEVICE if waiting for a block freed on another stream failed (as
 * PyTorch throws): nothing is released then, and that block and those freed
 * after it stay pending (not reused) until a later wait or poll succeeds.
 * Also GALLOC_E_DEVICE if the device refused to free a segment or unmap a
 * page: every other one is released, the refused ones stay cached (and
 * counted in reserved memory), and the message names the first refusal and
 * how many more there were. A later empty_cache tries them again.
 */
GALLOC_API galloc_status_t galloc_empty_cache(galloc_allocator_t *a);

/*
 * galloc_set_memory_fraction: cap this allocator's reserved memory at
 * fraction * device total (PyTorch's set_per_process_memory_fraction; new
 * segments beyond the cap fail as out of memory, cached blocks are still reused).
 * Returns GALLOC_E_INVAL unless 0 <= fraction <= 1.
 */
GALLOC_API galloc_status_t galloc_set_memory_fraction(galloc_allocator_t *a, double fraction);

/*
 * galloc_set_expandable_reserve_class: the reserve class of stream, which
 * picks the virtual range each NEW expandable segment of that stream
 * reserves (PyTorch's setExpandableSegmentReserveClassForStream): the
 * class's entry of expandable_segments_reserve_by_class, else
 * expandable_segments_reserve, else 9/8 of the device's memory; capped at
 * that 9/8 and rounded up to whole pages. Segments that exist keep their
 * range. A request larger than its stream's reserve can never be served (an
 * allocation cannot span segments): it fails with GALLOC_E_OOM after the
 * free-and-retry chain, and the message names the reserve and the keys. name
 * NULL or "" clears the stream's class. A class the configuration does not
 * list is allowed (it takes the global reserve). Unlike PyTorch's
 * process-wide map, the class is this allocator's (one device). Returns
 * GALLOC_OK; GALLOC_E_INVAL for a NULL allocator or a name that is not 1 to
 * 31 printable bytes without ',', ':', '[', ']', quotes or backslashes (the
 * config list could not name it); GALLOC_E_UNSUPPORTED for an allocator
 * without expandable segments (backend:cudaMallocAsync, a user allocator);
 * GALLOC_E_NOMEM. Thread-safe.
 */
GALLOC_API galloc_status_t galloc_set_expandable_reserve_class(galloc_allocator_t *a, galloc_stream_t stream,
                                                               const char *name);

/*
 * galloc_oom_rejection_fn: told of each allocation throw_on_cudamalloc_oom
 * refused (PyTorch's OomRejectionObserver): the allocator's device index, the
 * segment size the request needed (alloc_size), the bytes the allocator
 * held from the device before it (total_allocated) and the device's total
 * memory (device_total).
 */
typedef void (*galloc_oom_rejection_fn)(void *ctx, int device, size_t alloc_size, size_t total_allocated,
                                        size_t device_total);

/*
 * galloc_set_oom_rejection_observer: call fn(ctx, ...) for every galloc_malloc
 * that throw_on_cudamalloc_oom refuses (the malloc returns GALLOC_E_OOM with
 * "... Allocation was preemptively rejected because it would exceed
 * per_process_memory_fraction limit. Requested size: ..." and counts
 * num_oom_rejections). One observer per allocator: a call replaces the
 * previous one; fn NULL removes it. fn runs on the thread that called
 * galloc_malloc, after the allocator's lock is released and before
 * galloc_malloc returns, so it may call galloc, this allocator included
 * (PyTorch runs its observers on a new detached thread). The ordinary OOM
 * path (num_ooms) does not call it. Returns GALLOC_OK; GALLOC_E_UNSUPPORTED
 * for an allocator that never refuses ahead of the device
 * (backend:cudaMallocAsync, a user allocator: PyTorch's cudaMallocAsync
 * backend and pluggable allocators refuse attachOomRejectionObserver too).
 * Thread-safe.
 */
GALLOC_API galloc_status_t galloc_set_oom_rejection_observer(galloc_allocator_t *a, galloc_oom_rejection_fn fn,
                                                             void *ctx);

/*
 * galloc_memory_info: the device's free and total bytes (cudaMemGetInfo).
 * Returns GALLOC_OK, GALLOC_E_INVAL for NULL arguments, or the backend's status.
 */
GALLOC_API galloc_status_t galloc_memory_info(galloc_allocator_t *a, size_t *free_bytes, size_t *total_bytes);

/*
 * galloc_memory_stats: copy every stat into *out (out->struct_size must be set,
 * see galloc_stats_t). Returns GALLOC_OK or GALLOC_E_INVAL.
 */
GALLOC_API galloc_status_t galloc_memory_stats(galloc_allocator_t *a, galloc_stats_t *out);

/*
 * galloc_memory_reserved: reserved_bytes.all.current alone (PyTorch's
 * torch.cuda.memory_reserved()), cheap enough to ask after every malloc: on
 * the caching pool it takes no lock at all (reserved memory changes only
 * under the allocator's lock, a segment made, mapped, unmapped or released,
 * and each such call leaves the figure where this reads it), where
 * galloc_memory_stats takes every per-stream stripe's lock. From the
 * allocating thread it is exact after its own calls; another thread's call
 * in progress may not be counted yet. Returns GALLOC_OK with *bytes set,
 * GALLOC_E_INVAL (NULL a or bytes; *bytes 0). Thread-safe.
 */
GALLOC_API galloc_status_t galloc_memory_reserved(galloc_allocator_t *a, int64_t *bytes);

/*
 * galloc_fragmentation: where the cached memory is and how usable it is, per
 * pool (a walk over every segment: O(blocks), meant for peaks and OOMs, not
 * the hot path). out->struct_size must be sizeof(galloc_fragmentation_t).
 * Returns GALLOC_OK, GALLOC_E_INVAL, or GALLOC_E_UNSUPPORTED for an allocator
 * implementation without a pool (cudaMallocAsync).
 */
GALLOC_API galloc_status_t galloc_fragmentation(galloc_allocator_t *a, galloc_fragmentation_t *out);

/*
 * galloc_enable_peer_access: let device peer_device read and write all of this
 * allocator's memory, what it holds now and what it maps later, as PyTorch's
 * enablePeerAccess with expandable segments does. Plain segments (cudaMalloc)
 * get the driver's peer access: the peer's primary context enables access to
 * this device's (cuCtxEnablePeerAccess / hipDeviceEnablePeerAccess;
 * "already enabled", by anyone, counts as done). Expandable segments and
 * tags' segments (virtual memory) get cuMemSetAccess for the peer on every
 * page mapped now, and every page mapped later (growth, a wake after
 * galloc_sleep) is mapped with the peer's access beside the device's own.
 * Access lasts until the allocator is destroyed; stats do not change.
 * Returns GALLOC_OK (also when the peer was enabled before: idempotent);
 * GALLOC_E_INVAL for a NULL allocator, peer_device equal to the allocator's
 * device or not a device of the driver; GALLOC_E_UNSUPPORTED when the two
 * devices cannot reach each other (cuDeviceCanAccessPeer says no), the driver
 * lacks peer access, or the allocator has none (the sim backend, the
 * stream-ordered and user allocators), each with a message; a driver failure
 * (GALLOC_E_DEVICE, ...) leaves the peer not enabled, with the allocator
 * consistent, and a later call completes the steps still missing. Thread-safe.
 */
GALLOC_API galloc_status_t galloc_enable_peer_access(galloc_allocator_t *a, int peer_device);

/* galloc_stats_reset_peak: every peak = current (PyTorch's reset_peak_memory_stats). */
GALLOC_API galloc_status_t galloc_stats_reset_peak(galloc_allocator_t *a);

/* galloc_stats_reset_accumulated: zero every allocated/freed total and the
 * num_* counters (PyTorch's reset_accumulated_memory_stats). */
GALLOC_API galloc_status_t galloc_stats_reset_accumulated(galloc_allocator_t *a);

/*
 * galloc_last_error: copy the allocator's last failure message into buf
 * (len bytes, NUL-terminated, truncated if needed). Returns the status of that
 * last failure (GALLOC_OK and "" if nothing failed yet), or GALLOC_E_INVAL for
 * NULL arguments. Taken under the lock: never a pointer another thread rewrites.
 */
GALLOC_API galloc_status_t galloc_last_error(galloc_allocator_t *a, char *buf, size_t len);

/*
 * galloc_check: walk every segment and verify the invariants: blocks tile their
 * segments, no two free neighbours are left unmerged, free blocks are exactly
 * those in the best-fit trees, the pointer map holds exactly the live blocks,
 * and every stat's current value equals a recount. Returns GALLOC_OK or
 * GALLOC_E_CORRUPT with the first violation in the last-error message. O(n).
 */
GALLOC_API galloc_status_t galloc_check(galloc_allocator_t *a);

/* The effective settings, as a struct (see galloc_settings_string for the
 * string). Filled by galloc_settings_get; every member is an output, named
 * after the config key that sets it. */
typedef struct galloc_settings {
    uint32_t struct_size;                             /* in: sizeof(galloc_settings_t) the caller was compiled with */
    int backend;                                      /* backend: 0 native, 1 cudaMallocAsync (or hipMallocAsync) */
    uint64_t max_split_size;                          /* max_split_size_mb, in bytes; UINT64_MAX = unlimited */
    uint64_t max_non_split_rounding_size;             /* max_non_split_rounding_mb, in bytes */
    uint64_t large_segment_size;                      /* large_segment_size_mb, in bytes (kLargeBuffer) */
    double garbage_collection_threshold;              /* garbage_collection_threshold; 0 = off */
    double per_process_memory_fraction;               /* per_process_memory_fraction; 1.0 = no cap at start */
    uint32_t roundup_power2_divisions[16];            /* per interval [2^(20+i), 2^(21+i)) bytes; 0 = off */
    bool expandable_segments;                         /* expandable_segments */
    bool release_lock_on_cudamalloc;                  /* release_lock_on_cudamalloc (or _hipmalloc) */
    bool pinned_use_cuda_host_register;               /* pinned_use_cuda_host_register: the host cache pins with
                                                malloc + register (galloc_host.h) */
    bool pinned_use_background_threads;               /* pinned_use_background_threads (recorded: galloc runs no
                                                background thread, galloc_host.h) */
    uint32_t pinned_num_register_threads;             /* pinned_num_register_threads */
    char device_backend[32];                          /* device_backend: the backend the config names ("sim" by
                                                default; galloc_allocator_backend says which one runs) */
    bool retry_pool_after_sync;                       /* galloc's retry_pool_after_sync (off = PyTorch's OOM path) */
    char backend_options[GALLOC_BACKEND_OPTIONS_MAX]; /* the device backend's options, as it received them
                                                (galloc_backend_args_t.options) less whitespace, e.g.
                                                "sim_capacity:1GiB,sim_backed:True"; "" = none */
    bool graph_capture_record_stream_reuse;           /* graph_capture_record_stream_reuse (galloc_mempool.h) */
    bool throw_on_cudamalloc_oom;                     /* throw_on_cudamalloc_oom (galloc_set_oom_rejection_observer) */
    double expandable_segments_reserve;               /* expandable_segments_reserve's number; 0 = not given
                                                (each segment reserves 9/8 of device memory) */
    bool expandable_segments_reserve_gib;             /* it is GiB ("40G"), else a fraction of device memory */
    char expandable_segments_reserve_by_class[400];   /* expandable_segments_reserve_by_class as the normalized
                                                string writes it, e.g. "[capture:0.25,serving:40G]"; "" = none */
    /* The pinned host cache's (galloc_host.h). */
    uint64_t pinned_reserve_segment_size; /* pinned_reserve_segment_size_mb, in bytes; 0 = no reserve */
    uint64_t pinned_max_round_threshold;  /* pinned_max_round_threshold_mb, in bytes; UINT64_MAX = always round */
    uint64_t pinned_max_cached_size;      /* pinned_max_cached_size_mb, in bytes; UINT64_MAX = no cap */
} galloc_settings_t;

/* galloc_settings_get: copy the effective settings into *out (out->struct_size
 * must be set; fields past it are not written). GALLOC_OK or GALLOC_E_INVAL. */
GALLOC_API galloc_status_t galloc_settings_get(galloc_allocator_t *a, galloc_settings_t *out);

/*
 * galloc_settings_string: the allocator's effective settings as a normalized
 * config string (fixed key order, canonical values, only keys that were given
 * or differ from PyTorch's defaults, then the backend's options as given, less
 * whitespace), e.g. "max_split_size_mb:512,expandable_segments:True,
 * sim_capacity:80GiB". Parsing it again gives the same settings. Writes at most len bytes (NUL-terminated, truncated if
 * short); *needed (if non-NULL) receives the full length. Returns GALLOC_OK or
 * GALLOC_E_INVAL.
 */
GALLOC_API galloc_status_t galloc_settings_string(galloc_allocator_t *a, char *buf, size_t len, size_t *needed);

/*
 * galloc_allocator_backend: the name of the backend the allocator runs on
 * (static string), or NULL for a NULL allocator.
 */
GALLOC_API const char *galloc_allocator_backend(const galloc_allocator_t *a);

/*
 * galloc_sim_place: on the sim backend opened with sim_placement:recorded,
 * the device address the next segment allocation or address reservation
 * (expandable segments) takes (a trace replay tells it the address the traced
 * run's driver returned), if that range is free (a reservation's address
 * must be a multiple of the 2 MiB granularity); it is used by one of them at
 * most, and 0 clears it. Without such an address, or when the range is
 * taken, sim places the range itself (descending). GALLOC_E_UNSUPPORTED on
 * another placement, or on a backend without a place op
 * (galloc_backend_ops_t.place: every backend but sim).
 */
GALLOC_API galloc_status_t galloc_sim_place(galloc_allocator_t *a, uint64_t addr);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_ALLOCATOR_H */

/*
 * allocator_ops.h: the allocator ops table, the vtable behind galloc_malloc &
 * co. The front end (front/allocator.c) picks one table per allocator and calls
 * only through it; each implementation defines one const table and nothing
 * else external:
 *   ga_allocator_native  the caching pool (pool/pool_ops.c, declared in pool/pool.h)
 *   ga_allocator_async   the stream-ordered allocator, backend:cudaMallocAsync
 *                        (allocators/async/)
 *   ga_allocator_user    a caller's malloc/free (allocators/user/)
 * It lives here, not in front/, so that implementations do not depend on the
 * front end's private header.
 *
 * Locking: the front end holds the allocator's lock around every member call
 * (create and destroy run before the allocator is shared and after it is
 * retired), so members need no lock of their own, except the optional
 * stripe_malloc, stripe_free and stripe_usable_size, called without it: an
 * implementation that has them brings its own locking, and quiesce/resume,
 * called right after the allocator's lock is taken and right before it is
 * released, keep them out of every other member call.
 */
#ifndef GA_ALLOCATORS_ALLOCATOR_OPS_H
#define GA_ALLOCATORS_ALLOCATOR_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_hooks.h>
#include <galloc/galloc_inspect.h>
#include <galloc/galloc_ipc.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_sleep.h>
#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>
#include <galloc/galloc_trace.h>
#include "backend/backend.h"
#include "conf/conf.h"
#include "util/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The figures of a malloc throw_on_cudamalloc_oom refused (PyTorch's
 * OomRejectionInfo, passed to its OOM-rejection observers). */
typedef struct ga_oom_rejection {
    size_t alloc_size;      /* the segment the request needed */
    size_t total_allocated; /* reserved bytes before it */
    size_t device_total;    /* the device's total memory */
} ga_oom_rejection_t;

struct ga_host; /* host/host.h: the allocator's pinned host cache */

/* One allocator implementation. impl is the state create made. Every failure
 * is recorded in the err sink given to create (util/err.h). */
typedef struct ga_allocator_ops {
    const char *name; /* "native", "cudaMallocAsync", "user" */
    /* NULL where the front end builds the state another way (the user allocator). */
    galloc_status_t (*create)(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err, void **impl);
    void (*destroy)(void *impl);
    galloc_status_t (*malloc)(void *impl, size_t size, galloc_stream_t stream, void **ptr);
    galloc_status_t (*free)(void *impl, void *ptr);
    galloc_status_t (*empty_cache)(void *impl);
    galloc_status_t (*record_stream)(void *impl, void *ptr, galloc_stream_t stream);
    galloc_status_t (*stream_synchronize)(void *impl, galloc_stream_t stream);
    galloc_status_t (*set_fraction)(void *impl, double fraction);
    galloc_status_t (*memory_info)(void *impl, size_t *free_bytes, size_t *total_bytes);
    void (*stats)(void *impl, galloc_stats_t *out);
    void (*reset_peak)(void *impl);
    void (*reset_accumulated)(void *impl);
    galloc_status_t (*check)(void *impl);
    void (*fragmentation)(void *impl, galloc_fragmentation_t *out); /* NULL: no pool */
    /* History and snapshots; NULL where the implementation has none. */
    galloc_status_t (*record_history)(void *impl, const galloc_history_options_t *opt);
    galloc_status_t (*snapshot)(void *impl, const char *path, galloc_snapshot_format_t format);
    galloc_status_t (*annotate)(void *impl, const char *stage, const char *name);
    galloc_status_t (*snapshot_entry)(void *impl); /* galloc_record_snapshot_entry */
    void (*set_frames)(void *impl, galloc_frames_fn fn, void *ctx);
    galloc_status_t (*set_trace_source)(void *impl, const galloc_trace_source_t *src);
    /* Private pools; NULL where the implementation has none. */
    galloc_status_t (*mempool_create)(void *impl, galloc_mempool_id_t *id);
    galloc_status_t (*mempool_create_id)(void *impl, galloc_mempool_id_t id);
    galloc_status_t (*mempool_begin)(void *impl, galloc_mempool_id_t id, galloc_route_t route, galloc_stream_t s);
    galloc_status_t (*mempool_end)(void *impl, galloc_mempool_id_t id);
    galloc_status_t (*mempool_release)(void *impl, galloc_mempool_id_t id);
    galloc_status_t (*mempool_set_flags)(void *impl, galloc_mempool_id_t id, unsigned flags);
    /* Sleep and wake (galloc_sleep.h); NULL where the implementation has none. */
    galloc_status_t (*tag_begin)(void *impl, const char *tag);
    galloc_status_t (*tag_end)(void *impl, const char *tag);
    galloc_status_t (*mempool_set_tag)(void *impl, galloc_mempool_id_t id, const char *tag);
    galloc_status_t (*sleep)(void *impl, const char *tags, const char *offload_tags);
    galloc_status_t (*wake)(void *impl, const char *tags);
    galloc_status_t (*sleep_prepare)(void *impl, const char *tags, const char *offload_tags);
    galloc_status_t (*sleep_stats)(void *impl, galloc_sleep_stats_t *out);
    galloc_status_t (*tag_asleep)(void *impl, const char *tag, int *asleep);
    /* Peer access (galloc_enable_peer_access); NULL where the implementation
     * has none (the stream-ordered pool would need cuMemPoolSetAccess, the
     * user allocator's memory is the caller's). */
    galloc_status_t (*enable_peer_access)(void *impl, int peer);
    /* Sharing with other processes (galloc_ipc.h); NULL where the
     * implementation cannot share (PyTorch's cudaMallocAsync and pluggable
     * allocators cannot either). */
    galloc_status_t (*ipc_export)(void *impl, const void *ptr, galloc_ipc_handle_t *handle);
    galloc_status_t (*ipc_send)(void *impl, int sock, const galloc_ipc_handle_t *handle);
    galloc_status_t (*ipc_recv)(void *impl, int sock, galloc_ipc_handle_t *handle, void **ptr);
    galloc_status_t (*ipc_open)(void *impl, const galloc_ipc_handle_t *handle, void **ptr);
    galloc_status_t (*ipc_close)(void *impl, void *ptr);
    galloc_status_t (*ipc_revoke)(void *impl, const galloc_ipc_handle_t *handle);
    galloc_status_t (*ipc_collect)(void *impl, size_t *freed);
    galloc_status_t (*ipc_stats)(void *impl, galloc_ipc_stats_t *out);
    /* Optional (NULL: every call takes the allocator's lock): a malloc or free
     * without the allocator's lock, true when done, false when the call must
     * go to malloc/free under the lock (nothing changed); and the brackets of
     * every locked call. The caching pool's are its stripe path
     * (pool/stripe.h: ga_pool_stripe_malloc, ga_pool_stripe_free) and
     * ga_pool_quiesce / ga_pool_resume (pool/ops.h). */
    bool (*stripe_malloc)(void *impl, size_t size, galloc_stream_t stream, void **ptr);
    bool (*stripe_free)(void *impl, void *ptr);
    void (*quiesce)(void *impl);
    void (*resume)(void *impl);
    /* Inspection (galloc_inspect.h). usable_size: required (NULL is not
     * allowed: every implementation knows its live pointers); the bytes
     * allocated_bytes counts for the live block at ptr, GALLOC_E_NOT_OWNED
     * (recorded in err) when ptr is none; under the allocator's lock.
     * stripe_usable_size: optional (NULL: every call takes the allocator's
     * lock), tried first without it, as stripe_free is: true with *size set
     * when it found the block, false when the call must go to usable_size
     * under the lock (nothing changed; not found on the stripe path, or the
     * stripe path is closed); the caching pool's takes one stripe's lock at a
     * time (ga_pool_stripe_usable_size, pool/ops.h). segments_visit: optional
     * (NULL: the allocator has no segments of its own, GALLOC_E_UNSUPPORTED);
     * galloc_segments_visit's walk, under the allocator's lock, fn called
     * with it held. */
    galloc_status_t (*usable_size)(void *impl, const void *ptr, size_t *size);
    bool (*stripe_usable_size)(void *impl, const void *ptr, size_t *size);
    galloc_status_t (*segments_visit)(void *impl, galloc_segment_visit_fn fn, void *ctx);
    /* Optional (NULL: galloc_memory_reserved reads every stat under the
     * lock and the quiesce): reserved_bytes.all.current, called WITHOUT the
     * allocator's lock, from any thread: it must read a figure that every
     * locked call leaves up to date atomically (the caching pool's is stored
     * by ga_pool_resume; a stripe call never makes or releases a segment). */
    int64_t (*memory_reserved)(void *impl);
    /* Device-memory hooks (galloc_hooks.h); NULL where the implementation
     * has none (GALLOC_E_UNSUPPORTED: the stream-ordered and user
     * allocators). Under the allocator's lock; the implementation calls the
     * hooks with it held, from the member call that caused each event. */
    galloc_status_t (*hook_add)(void *impl, const galloc_hook_t *hook, galloc_hook_id_t *id);
    galloc_status_t (*hook_remove)(void *impl, galloc_hook_id_t id);
    galloc_status_t (*hook_stats)(void *impl, galloc_hook_id_t id, galloc_hook_stats_t *out);
    /* Optional (NULL: the implementation never refuses ahead of the device,
     * and galloc_set_oom_rejection_observer is unsupported): after a malloc
     * that failed, under the allocator's lock, whether throw_on_cudamalloc_oom
     * refused it, with the figures; each refusal is taken once. */
    bool (*take_rejection)(void *impl, ga_oom_rejection_t *out);
    /* Optional (NULL: no expandable segments, galloc_set_expandable_reserve_class
     * is unsupported): the expandable reserve class of stream, under the
     * allocator's lock; name NULL or "" clears it. */
    galloc_status_t (*set_reserve_class)(void *impl, galloc_stream_t stream, const char *name);
    /* Optional (NULL: the implementation pins nothing of its own): the
     * allocator's pinned host cache (host/host.h), handed over once after
     * create and valid until destroy returns; the caching pool takes its
     * sleep offload's pinned copies from it (pool/pinned.c). */
    void (*attach_host)(void *impl, struct ga_host *host);
} ga_allocator_ops_t;

#ifdef __cplusplus
}
#endif
#endif /* GA_ALLOCATORS_ALLOCATOR_OPS_H */

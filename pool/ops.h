/*
 * ops.h: the pool's operations, the members of its allocator ops table
 * ga_allocator_native (pool_ops.c, allocators/allocator_ops.h). Each has its
 * member's signature, impl being the ga_pool_t that ga_pool_create made, so
 * the table points at them directly. Declared here for the table and for
 * tests/pool/, which calls them without the front end; nothing else outside
 * the pool sees them.
 *
 * Locking: the front end (front/) holds the allocator's lock around every call
 * except the stripe path (ga_pool_stripe_malloc, ga_pool_stripe_free,
 * ga_pool_stripe_usable_size), and
 * brackets each locked call with ga_pool_quiesce and ga_pool_resume, which
 * keep the stripe path out while it runs. A caller that never uses the
 * stripe path (tests/pool/) calls the rest single-threaded per pool and
 * needs neither.
 */
#ifndef GA_POOL_OPS_H
#define GA_POOL_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_inspect.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_sleep.h>
#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>
#include <galloc/galloc_trace.h>
#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ga_pool_create: a caching pool (*impl, a ga_pool_t) on an opened backend
 * (not owned: the caller closes it after ga_pool_destroy). conf is copied.
 * err receives messages for this and every later call. Returns GALLOC_OK,
 * GALLOC_E_NOMEM, or GALLOC_E_UNSUPPORTED for settings the backend or pool
 * cannot honour.
 */
galloc_status_t ga_pool_create(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err, void **impl);
/* ga_pool_destroy: give every segment back to the backend and free the pool. */
void ga_pool_destroy(void *impl);
galloc_status_t ga_pool_malloc(void *impl, size_t size, galloc_stream_t stream, void **out);
galloc_status_t ga_pool_free(void *impl, void *ptr);
galloc_status_t ga_pool_empty_cache(void *impl);
galloc_status_t ga_pool_record_stream(void *impl, void *ptr, galloc_stream_t stream);
galloc_status_t ga_pool_stream_synchronize(void *impl, galloc_stream_t stream);
galloc_status_t ga_pool_set_fraction(void *impl, double fraction);
galloc_status_t ga_pool_memory_info(void *impl, size_t *free_bytes, size_t *total_bytes);
/* The backend's enable_peer_access, its failure recorded with the backend's reason. */
galloc_status_t ga_pool_enable_peer_access(void *impl, int peer);
void ga_pool_stats(void *impl, galloc_stats_t *out);
void ga_pool_reset_peak(void *impl);
void ga_pool_reset_accumulated(void *impl);
galloc_status_t ga_pool_check(void *impl);
/* Fragmentation metrics (galloc_fragmentation); out->struct_size is honoured. */
void ga_pool_fragmentation(void *impl, galloc_fragmentation_t *out);

/* Inspection (galloc_inspect.h; inspect.c). usable_size: the allocated
 * block's size, a sleeping tag's too; GALLOC_E_NOT_OWNED otherwise.
 * segments_visit: galloc_segments_visit's walk (walk.h's runs, sleeping
 * tags' segments left out); GALLOC_E_NOMEM when the block list could not
 * grow. */
galloc_status_t ga_pool_usable_size(void *impl, const void *ptr, size_t *size);
/* memory_reserved: reserved_bytes.all.current as the last locked call left
 * it (reserved_seen: the stripe path never changes it), without a lock. */
int64_t ga_pool_memory_reserved(void *impl);
galloc_status_t ga_pool_segments_visit(void *impl, galloc_segment_visit_fn fn, void *ctx);

/* History and snapshots (trace/). */
galloc_status_t ga_pool_record_history(void *impl, const galloc_history_options_t *opt);
galloc_status_t ga_pool_snapshot(void *impl, const char *path, galloc_snapshot_format_t format);
galloc_status_t ga_pool_annotate(void *impl, const char *stage, const char *name);
galloc_status_t ga_pool_snapshot_entry(void *impl);
void ga_pool_set_frames(void *impl, galloc_frames_fn fn, void *ctx);
galloc_status_t ga_pool_set_trace_source(void *impl, const galloc_trace_source_t *src);

/* Private pools (private.c). A thread route is the calling thread's. */
galloc_status_t ga_pool_mempool_create(void *impl, galloc_mempool_id_t *id);
galloc_status_t ga_pool_mempool_create_id(void *impl, galloc_mempool_id_t id);
galloc_status_t ga_pool_mempool_begin(void *impl, galloc_mempool_id_t id, galloc_route_t route, galloc_stream_t stream);
galloc_status_t ga_pool_mempool_end(void *impl, galloc_mempool_id_t id);
galloc_status_t ga_pool_mempool_release(void *impl, galloc_mempool_id_t id);
galloc_status_t ga_pool_mempool_set_flags(void *impl, galloc_mempool_id_t id, unsigned flags);

/* Sleep and wake (galloc_sleep.h; tags.c, sleep.c). A tag's scope is the
 * calling thread's, as a thread route. */
galloc_status_t ga_pool_tag_begin(void *impl, const char *tag);
galloc_status_t ga_pool_tag_end(void *impl, const char *tag);
galloc_status_t ga_pool_mempool_set_tag(void *impl, galloc_mempool_id_t id, const char *tag);
galloc_status_t ga_pool_sleep(void *impl, const char *tags, const char *offload_tags);
galloc_status_t ga_pool_wake(void *impl, const char *tags);
/* pinned.c: the pinned reserve ahead of a sleep. */
galloc_status_t ga_pool_sleep_prepare(void *impl, const char *tags, const char *offload_tags);
/* Always GALLOC_OK. */
galloc_status_t ga_pool_sleep_stats(void *impl, galloc_sleep_stats_t *out);
galloc_status_t ga_pool_tag_asleep(void *impl, const char *tag, int *asleep);

/*
 * The stripe path (stripe.h): a cache-hit malloc and a plain free under the
 * lock of the stream's stripe only, without the allocator's lock. They
 * return true when done (malloc: *out set) and false, having changed
 * nothing, when the call needs the locked path (ga_pool_malloc /
 * ga_pool_free): a miss, a block with stream uses, recording on, and so on.
 */
bool ga_pool_stripe_malloc(void *impl, size_t size, galloc_stream_t stream, void **out);
bool ga_pool_stripe_free(void *impl, void *ptr);
/* The size of the allocated block at ptr from its stripe's map, under that
 * stripe's lock only (*size set, true); false when not found there or the
 * stripe path is closed: ga_pool_usable_size then answers. */
bool ga_pool_stripe_usable_size(void *impl, const void *ptr, size_t *size);
/* With the allocator's lock held, before and after every other call: quiesce
 * takes every stripe's lock (when the stripe path may run) and folds the
 * stripes' counters into the stats; resume hands out headroom below the
 * peaks and lets the stripe path run again, if the pool's state allows it. */
void ga_pool_quiesce(void *impl);
void ga_pool_resume(void *impl);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_OPS_H */

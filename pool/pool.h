/*
 * pool.h: the pool layer's interface: PyTorch's native caching allocator
 * policy (DeviceCachingAllocator in pytorch/pytorch
 * c10/cuda/CUDACachingAllocator.cpp) over one opened device backend. The
 * front end (api/) reaches it through ga_allocator_native, the ops table over
 * these calls (pool_ops.c); tests/pool/ calls them directly.
 *
 * Locking: api/ holds the allocator's lock around every call except the
 * stripe path (ga_pool_malloc_fast, ga_pool_free_fast), and brackets each
 * locked call with ga_pool_quiesce and ga_pool_resume, which keep the stripe
 * path out while it runs. A caller that never uses the stripe path (the
 * tools, tests/pool/) calls the rest single-threaded per pool and needs neither.
 */
#ifndef GA_POOL_H
#define GA_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_trace.h>
#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>
#include "allocators/allocator_ops.h"
#include "backend/backend.h"
#include "conf/conf.h"
#include "util/err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The caching pool behind the allocator ops table (pool_ops.c): the table
 * api/ picks unless the config asks for backend:cudaMallocAsync. */
extern const ga_allocator_ops_t ga_allocator_native;

typedef struct ga_pool ga_pool_t;

/*
 * ga_pool_create: a caching pool on an opened backend (not owned: the caller
 * closes it after ga_pool_destroy). conf is copied. err receives messages for
 * this and every later call. Returns GALLOC_OK, GALLOC_E_NOMEM, or
 * GALLOC_E_UNSUPPORTED for settings the backend or pool cannot honour.
 */
galloc_status_t ga_pool_create(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err,
                               ga_pool_t **out);

/* ga_pool_destroy: give every segment back to the backend and free the pool. */
void ga_pool_destroy(ga_pool_t *p);

galloc_status_t ga_pool_malloc(ga_pool_t *p, size_t size, galloc_stream_t stream, void **out);
/*
 * The stripe path (issue 19; pool/stripe.h): a cache-hit malloc and a plain
 * free under the lock of the stream's stripe only, without the allocator's
 * lock. They return true when done (malloc: *out set) and false, having
 * changed nothing, when the call needs the locked path (ga_pool_malloc /
 * ga_pool_free): a miss, a block with stream uses, recording on, and so on.
 */
bool ga_pool_malloc_fast(ga_pool_t *p, size_t size, galloc_stream_t stream, void **out);
bool ga_pool_free_fast(ga_pool_t *p, void *ptr);
/* With the allocator's lock held, before and after every other call: quiesce
 * takes every stripe's lock (when the stripe path may run) and folds the
 * stripes' counters into the stats; resume hands out headroom below the
 * peaks and lets the stripe path run again, if the pool's state allows it. */
void ga_pool_quiesce(ga_pool_t *p);
void ga_pool_resume(ga_pool_t *p);
galloc_status_t ga_pool_free(ga_pool_t *p, void *ptr);
galloc_status_t ga_pool_empty_cache(ga_pool_t *p);
galloc_status_t ga_pool_record_stream(ga_pool_t *p, void *ptr, galloc_stream_t stream);
galloc_status_t ga_pool_stream_synchronize(ga_pool_t *p, galloc_stream_t stream);
galloc_status_t ga_pool_set_fraction(ga_pool_t *p, double fraction);
galloc_status_t ga_pool_memory_info(ga_pool_t *p, size_t *free_bytes, size_t *total_bytes);
void ga_pool_stats(const ga_pool_t *p, galloc_stats_t *out);
void ga_pool_reset_peak(ga_pool_t *p);
void ga_pool_reset_accumulated(ga_pool_t *p);
galloc_status_t ga_pool_check(ga_pool_t *p);
/* Fragmentation metrics (galloc_fragmentation); out->struct_size is honoured. */
void ga_pool_fragmentation(const ga_pool_t *p, galloc_fragmentation_t *out);
galloc_status_t ga_pool_record_history(ga_pool_t *p, const galloc_history_options_t *opt);
galloc_status_t ga_pool_snapshot(ga_pool_t *p, const char *path, galloc_snapshot_format_t format);
galloc_status_t ga_pool_annotate(ga_pool_t *p, const char *stage, const char *name);
void ga_pool_set_frames(ga_pool_t *p, galloc_frames_fn fn, void *ctx);
galloc_status_t ga_pool_set_trace_source(ga_pool_t *p, const galloc_trace_source_t *src);
galloc_status_t ga_pool_mempool_create(ga_pool_t *p, uint64_t *id_a, uint64_t *id_b);
galloc_status_t ga_pool_mempool_begin(ga_pool_t *p, uint64_t id_a, uint64_t id_b, int route, galloc_stream_t stream,
                                      uintptr_t thread);
galloc_status_t ga_pool_mempool_end(ga_pool_t *p, uint64_t id_a, uint64_t id_b);
galloc_status_t ga_pool_mempool_release(ga_pool_t *p, uint64_t id_a, uint64_t id_b);
/* Sleep and wake (galloc_sleep.h; pool/tags.c, pool/sleep.c). thread: the
 * caller's thread, as for ga_pool_mempool_begin. */
galloc_status_t ga_pool_tag_begin(ga_pool_t *p, const char *tag, uintptr_t thread);
galloc_status_t ga_pool_tag_end(ga_pool_t *p, const char *tag);
galloc_status_t ga_pool_mempool_set_tag(ga_pool_t *p, uint64_t id_a, uint64_t id_b, const char *tag);
galloc_status_t ga_pool_sleep(ga_pool_t *p, const char *tags, const char *offload_tags);
galloc_status_t ga_pool_wake(ga_pool_t *p, const char *tags);
void ga_pool_sleep_stats(const ga_pool_t *p, galloc_sleep_stats_t *out);
galloc_status_t ga_pool_tag_asleep(ga_pool_t *p, const char *tag, int *asleep);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_H */

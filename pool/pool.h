/*
 * pool.h: the pool layer's interface: PyTorch's native caching allocator
 * policy (DeviceCachingAllocator in pytorch/pytorch
 * c10/cuda/CUDACachingAllocator.cpp) over one opened device backend. The
 * front end (api/) reaches it through ga_allocator_native, the ops table over
 * these calls (pool_ops.c); tests/pool/ calls them directly.
 *
 * Locking: the pool has no lock of its own. api/ holds the allocator's lock
 * around every call, so all functions here run single-threaded per pool.
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

/*
 * pinned.h: the pinned host memory of sleep's copies (pinned.c): blocks of
 * the allocator's host cache (host/host.h), of each device block's exact
 * size; a wake keeps them there for the next sleep, galloc_sleep_prepare
 * pins them ahead of a sleep, and a refused give-back is retried. sleep.c
 * takes and keeps; tags.c drops; pool.c gives the kept ones back
 * (empty_cache, destroy).
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_PINNED_H
#define GA_POOL_PINNED_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ga_host;

/* ga_pool_host_init: at pool create, a host cache of the pool's own
 * (GALLOC_E_NOMEM), used until ga_pool_attach_host hands it the allocator's
 * (the front end always does; a pool made alone, as the pool's white-box
 * tests make one, keeps its own). ga_pool_host_fini: at destroy, after the
 * tags are gone: the pool's own cache is destroyed. */
galloc_status_t ga_pool_host_init(ga_pool_t *p);
void ga_pool_attach_host(void *impl, struct ga_host *host);
void ga_pool_host_fini(ga_pool_t *p);

/* A copy's block of exactly `bytes`: one kept for a next sleep, else a new
 * one pinned (the host cache's status and message). */
galloc_status_t ga_pool_host_take(ga_pool_t *p, size_t bytes, void **host);
/* Back to the cache, kept for the next sleep (a wake's copies, a freed
 * sleeping block's). */
void ga_pool_host_keep(ga_pool_t *p, void *host);
/* Back to the driver now; a refusal keeps it for ga_pool_host_retry. */
void ga_pool_host_drop(ga_pool_t *p, void *host);
void ga_pool_host_retry(ga_pool_t *p);
/* Give every kept block back (galloc_empty_cache, destroy). */
void ga_pool_host_spare_release(ga_pool_t *p);
/* The kept blocks' bytes (galloc_sleep_stats_t.bytes_host_cached). */
uint64_t ga_pool_host_kept_bytes(const ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_PINNED_H */

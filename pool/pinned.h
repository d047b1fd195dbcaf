/*
 * pinned.h: the pinned host blocks of sleep's copies (pinned.c): the keep
 * store that holds them between a wake and the next sleep, the reserve that
 * galloc_sleep_prepare pins into it ahead of a sleep, and the copies whose
 * host_free was refused. sleep.c takes from the store and keeps into it;
 * pool.c gives it back (empty_cache, destroy).
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_PINNED_H
#define GA_POOL_PINNED_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Give a host copy back; a refused free is kept and retried (ga_pool_host_retry). */
void ga_pool_host_drop(ga_pool_t *p, void *host, size_t bytes);
void ga_pool_host_retry(ga_pool_t *p);
/* Pinned host blocks kept for the next sleep: init (pool create), keep one
 * (given back at once when the map cannot grow), take one of exactly
 * `bytes` (NULL if none), give them all back (galloc_empty_cache, destroy). */
void ga_pool_host_spare_init(ga_pool_t *p);
void ga_pool_host_keep(ga_pool_t *p, void *host, size_t bytes);
void *ga_pool_host_take(ga_pool_t *p, size_t bytes);
void ga_pool_host_spare_release(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_PINNED_H */

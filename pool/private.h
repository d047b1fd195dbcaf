/*
 * private.h: private pools (private.c, PyTorch's PrivatePool behind MemPools
 * and graphs): routing a malloc to one, releasing them, and their pool ids.
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_PRIVATE_H
#define GA_POOL_PRIVATE_H

#include <galloc/galloc_mempool.h>
#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The private pool with id, or NULL. */
ga_private_pool_t *ga_pool_private_find(const ga_pool_t *p, galloc_mempool_id_t id);
/* The live private pool with id (use count above 0), or NULL with
 * "<call>: no live memory pool (a, b)" recorded as GALLOC_E_INVAL. */
ga_private_pool_t *ga_pool_private_find_live(ga_pool_t *p, galloc_mempool_id_t id, const char *call);
/* ga_pool_get_pool while some route is active (a MemPool or graph capture). */
ga_blockpool_t *ga_pool_get_routed_pool(ga_pool_t *p, size_t rounded, galloc_stream_t stream);
/* MemPool use_on_oom: a free block of a use_on_oom pool for a default-pool
 * request the device refused (private.c). True with ap->block and ap->pool
 * set; false with ap unchanged. */
bool ga_pool_use_on_oom(ga_pool_t *p, ga_alloc_params_t *ap);
/* Whole free segments of freeable pools back; an empty freeable pool is deleted. */
void ga_pool_release_private_pools(ga_pool_t *p);
/* Free cached bytes of the private pools that are awake (PyTorch's message adds them to "allocated"). */
size_t ga_pool_private_free_bytes(const ga_pool_t *p);
/* Destroy: every private pool's sets and record (segments are the caller's). */
void ga_pool_private_destroy(ga_pool_t *p);

/* PyTorch's get_pool: the first active route whose filter accepts the
 * allocation decides (private.c); with none, the default pools by the
 * rounded size. */
static inline ga_blockpool_t *ga_pool_get_pool(ga_pool_t *p, size_t rounded, galloc_stream_t stream)
{
    if (__builtin_expect(p->n_routes == 0, 1))
        return rounded <= GA_SMALL_SIZE ? &p->small : &p->large;
    return ga_pool_get_routed_pool(p, rounded, stream);
}

/* The trace's pool id of a block pool: NULL for the default pools ((0, 0)
 * in the trace), else buf filled with the private pool's. */
static inline const int64_t *ga_pool_id_of(const ga_blockpool_t *bp, int64_t buf[2])
{
    if (bp->owner == NULL)
        return NULL;
    buf[0] = (int64_t)bp->owner->id_a;
    buf[1] = (int64_t)bp->owner->id_b;
    return buf;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_PRIVATE_H */

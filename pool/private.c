/*
 * private.c: private pools (PyTorch's PrivatePool behind torch.cuda.MemPool and
 * CUDA graphs): create/incref, routing between begin and end, release, and
 * freeing a released pool's cached segments (release_cached_blocks'
 * graph_pools_freeable loop in c10/cuda/CUDACachingAllocator.cpp).
 */
#include <pthread.h>
#include <stdlib.h>

#include "pool/capture.h"
#include "pool/blockpool.h"
#include "pool/ops.h"
#include "pool/private.h"
#include "pool/release.h"
#include "pool/tags.h"
#include "util/assert.h"

ga_private_pool_t *ga_pool_private_find(const ga_pool_t *p, galloc_mempool_id_t id)
{
    for (ga_private_pool_t *pp = p->private_pools; pp != NULL; pp = pp->next)
        if (pp->id_a == id.a && pp->id_b == id.b)
            return pp;
    return NULL;
}

ga_private_pool_t *ga_pool_private_find_live(ga_pool_t *p, galloc_mempool_id_t id, const char *call)
{
    ga_private_pool_t *pp = ga_pool_private_find(p, id);
    if (pp == NULL || pp->use_count == 0) {
        (void)ga_fail(p->err, GALLOC_E_INVAL, "%s: no live memory pool (%llu, %llu)", call, (unsigned long long)id.a,
                      (unsigned long long)id.b);
        return NULL;
    }
    return pp;
}

static size_t route_of(const ga_pool_t *p, const ga_private_pool_t *pp)
{
    for (size_t i = 0; i < p->n_routes; i++)
        if (p->routes[i].pool == pp)
            return i;
    return SIZE_MAX;
}

/* PyTorch's get_pool with routes active (ga_pool_get_pool, inline, handles
 * none): the first route whose filter accepts this allocation decides;
 * otherwise the default pools. The decision uses the rounded size, as for
 * the default pools. */
ga_blockpool_t *ga_pool_get_routed_pool(ga_pool_t *p, size_t rounded, galloc_stream_t stream)
{
    bool small = rounded <= GA_SMALL_SIZE;
    uintptr_t self = (uintptr_t)pthread_self();
    for (size_t i = 0; i < p->n_routes; i++) {
        const ga_route_t *r = &p->routes[i];
        if (r->kind == GALLOC_ROUTE_STREAM ? r->stream == stream : r->thread == self) {
            if (__builtin_expect(r->pool->asleep, 0)) {
                /* A sleeping tag's: a pool without sets, which malloc's
                 * prepare refuses (ga_pool_prepare_failed names the tag). */
                p->asleep_bp.owner = r->pool;
                return &p->asleep_bp;
            }
            return small ? &r->pool->small : &r->pool->large;
        }
    }
    return small ? &p->small : &p->large;
}

/* A new pool of id (not in use) with use count 1. */
static galloc_status_t create(ga_pool_t *p, galloc_mempool_id_t id)
{
    ga_private_pool_t *pp = calloc(1, sizeof(*pp));
    if (pp == NULL)
        return ga_fail(p->err, GALLOC_E_NOMEM, "out of host memory creating a memory pool");
    pp->id_a = id.a;
    pp->id_b = id.b;
    pp->use_count = 1;
    ga_pool_blockpool_init(&pp->small, true);
    ga_pool_blockpool_init(&pp->large, false);
    pp->small.owner = pp->large.owner = pp;
    pp->next = p->private_pools;
    p->private_pools = pp;
    return GALLOC_OK;
}

galloc_status_t ga_pool_mempool_create(void *impl, galloc_mempool_id_t *id)
{
    ga_pool_t *p = impl;
    galloc_mempool_id_t next = {0, p->next_pool_id + 1};
    while (ga_pool_private_find(p, next) != NULL) /* one of galloc_mempool_create_id's */
        next.b++;
    galloc_status_t st = create(p, next);
    if (st == GALLOC_OK) {
        p->next_pool_id = next.b;
        *id = next;
    }
    return st;
}

galloc_status_t ga_pool_mempool_create_id(void *impl, galloc_mempool_id_t id)
{
    ga_pool_t *p = impl;
    if ((id.a == 0 && id.b == 0) || ga_pool_private_find(p, id) != NULL)
        return ga_fail(p->err, GALLOC_E_INVAL, "mempool_create_id: (%llu, %llu) is %s", (unsigned long long)id.a,
                       (unsigned long long)id.b, id.a == 0 && id.b == 0 ? "the default pool's id" : "in use");
    galloc_status_t st = create(p, id);
    if (st == GALLOC_OK && id.a == 0 && id.b > p->next_pool_id)
        p->next_pool_id = id.b; /* later ids count on from above it */
    return st;
}

galloc_status_t ga_pool_mempool_begin(void *impl, galloc_mempool_id_t id, galloc_route_t route, galloc_stream_t stream)
{
    ga_pool_t *p = impl;
    ga_private_pool_t *pp = ga_pool_private_find_live(p, id, "begin_allocate");
    if (pp == NULL)
        return GALLOC_E_INVAL;
    if (route != GALLOC_ROUTE_STREAM && route != GALLOC_ROUTE_THREAD)
        return ga_fail(p->err, GALLOC_E_INVAL, "begin_allocate: unknown route %d", (int)route);
    if (route_of(p, pp) != SIZE_MAX)
        return ga_fail(p->err, GALLOC_E_INVAL, "beginAllocateToPool: already recording to mempool_id (%llu, %llu)",
                       (unsigned long long)id.a, (unsigned long long)id.b);
    if (p->n_routes == GA_MAX_ROUTES)
        return ga_fail(p->err, GALLOC_E_INVAL, "begin_allocate: more than %d pools routed to at once", GA_MAX_ROUTES);
    /* A thread route is the calling thread's (ga_pool_get_routed_pool compares with it). */
    p->routes[p->n_routes++] =
        (ga_route_t){.pool = pp, .kind = (int)route, .stream = stream, .thread = (uintptr_t)pthread_self()};
    return GALLOC_OK;
}

galloc_status_t ga_pool_mempool_end(void *impl, galloc_mempool_id_t id)
{
    ga_pool_t *p = impl;
    ga_private_pool_t *pp = ga_pool_private_find(p, id);
    size_t i = pp ? route_of(p, pp) : SIZE_MAX;
    if (i == SIZE_MAX)
        return ga_fail(p->err, GALLOC_E_INVAL, "endAllocatePool: not currently recording to mempool_id (%llu, %llu)",
                       (unsigned long long)id.a, (unsigned long long)id.b);
    for (; i + 1 < p->n_routes; i++)
        p->routes[i] = p->routes[i + 1];
    if (--p->n_routes == 0)
        ga_pool_capture_forget(p); /* PyTorch drops a capture's walks at its endAllocateToPool */
    return GALLOC_OK;
}

galloc_status_t ga_pool_mempool_release(void *impl, galloc_mempool_id_t id)
{
    ga_pool_t *p = impl;
    ga_private_pool_t *pp = ga_pool_private_find_live(p, id, "release");
    if (pp == NULL)
        return GALLOC_E_INVAL;
    if (route_of(p, pp) != SIZE_MAX)
        return ga_fail(p->err, GALLOC_E_INVAL, "release: memory pool (%llu, %llu) is still being allocated to",
                       (unsigned long long)id.a, (unsigned long long)id.b);
    pp->use_count--;
    return GALLOC_OK;
}

galloc_status_t ga_pool_mempool_set_flags(void *impl, galloc_mempool_id_t id, unsigned flags)
{
    ga_pool_t *p = impl;
    ga_private_pool_t *pp = ga_pool_private_find_live(p, id, "set_flags");
    if (pp == NULL)
        return GALLOC_E_INVAL;
    if ((flags & ~(GALLOC_MEMPOOL_USE_ON_OOM | GALLOC_MEMPOOL_NO_SPLIT)) != 0)
        return ga_fail(p->err, GALLOC_E_INVAL, "set_flags: unknown flags 0x%x", flags);
    pp->use_on_oom = (flags & GALLOC_MEMPOOL_USE_ON_OOM) != 0;
    pp->small.no_split = pp->large.no_split = (flags & GALLOC_MEMPOOL_NO_SPLIT) != 0;
    return GALLOC_OK;
}

/* PyTorch main's try_mempool_fallback (MemPool use_on_oom): a default-pool
 * request the device just refused may take a free cached block of a live
 * use_on_oom pool, found as the default pool's would be, never growing that
 * pool. Pools routed to, released, or a sleep tag's are passed over. On
 * success ap names the block and its pool; else ap is unchanged. */
bool ga_pool_use_on_oom(ga_pool_t *p, ga_alloc_params_t *ap)
{
    ga_alloc_params_t saved = *ap;
    for (ga_private_pool_t *pp = p->private_pools; pp != NULL; pp = pp->next) {
        if (!pp->use_on_oom || pp->use_count == 0 || pp->tag != NULL || route_of(p, pp) != SIZE_MAX)
            continue;
        ap->pool = saved.pool->is_small ? &pp->small : &pp->large;
        /* Only a set that exists: one made here would outlive a miss. */
        ap->set = ga_pool_blockpool_lookup(ap->pool, ap->stream);
        if (ap->set != NULL && ga_pool_get_free_block(p, ap))
            return true;
    }
    *ap = saved;
    return false;
}

/* Whole free segments of freeable pools go back; an empty freeable pool is deleted. */
void ga_pool_release_private_pools(ga_pool_t *p)
{
    ga_private_pool_t **link = &p->private_pools;
    while (*link != NULL) {
        ga_private_pool_t *pp = *link;
        if (pp->use_count > 0) {
            link = &pp->next;
            continue;
        }
        /* As empty_cache's walk: a sleep tag's pool may hold expandable
         * segments, and a sleeping one's segments stay. */
        ga_pool_release_blocks(p, &pp->small);
        ga_pool_release_blocks(p, &pp->large);
        if (pp->segments == 0) {
            *link = pp->next;
            /* A sleeping tag keeps its segments: a pool without any is awake. */
            GA_ASSERT(pp->tag == NULL || (!pp->tag->asleep && ga_addrmap_count(&pp->tag->held) == 0));
            if (pp->tag != NULL)
                ga_pool_tag_forget(p, pp->tag);
            ga_pool_blockpool_destroy(&pp->small);
            ga_pool_blockpool_destroy(&pp->large);
            free(pp);
        } else {
            link = &pp->next;
        }
    }
}

/* Free cached bytes in private pools: what PyTorch's OOM message calls
 * "allocated in private pools". */
size_t ga_pool_private_free_bytes(const ga_pool_t *p)
{
    size_t n = 0;
    for (ga_private_pool_t *pp = p->private_pools; pp != NULL; pp = pp->next)
        for (int half = 0; half < 2 && !pp->asleep; half++) /* a sleeping pool's free blocks hold no memory */
            for (ga_block_t *b = ga_pool_blockpool_first(half ? &pp->large : &pp->small); b != NULL;
                 b = ga_pool_blockpool_next(b))
                n += b->size;
    return n;
}

void ga_pool_private_destroy(ga_pool_t *p)
{
    while (p->private_pools != NULL) {
        ga_private_pool_t *pp = p->private_pools;
        p->private_pools = pp->next;
        ga_pool_blockpool_destroy(&pp->small);
        ga_pool_blockpool_destroy(&pp->large);
        free(pp);
    }
}

/*
 * pinned.c: the pinned host memory of sleep's copies (pinned.h).
 *
 * The keep store: a wake keeps its copies' pinned blocks, by size, for the
 * next sleep, which takes one of the same size before it pins a new one; on
 * a GPU pinning (cuMemHostAlloc) is most of a first sleep's time. The
 * reserve: galloc_sleep_prepare (ga_pool_sleep_prepare) pins, ahead of a
 * sleep, the blocks that sleep would pin, into the same store, so that the
 * sleep itself pins nothing and runs at copy speed. galloc_empty_cache and
 * destroy give the store back whichever way its blocks came.
 *
 * Invariants: p->host_spare_bytes is the sum of the store's block sizes; a
 * block is in at most one of the store, a tag's held map and the orphans; a
 * failed prepare leaves the store as it found it.
 */
#include <stdlib.h>

#include "pool/ops.h"
#include "pool/pinned.h"
#include "pool/tags.h"
#include "util/assert.h"

/* A host copy whose free was refused: its first bytes (a block is >= 512)
 * link it to the others, so keeping it needs no allocation. */
typedef struct orphan {
    struct orphan *next;
    size_t bytes;
} orphan_t;

void ga_pool_host_drop(ga_pool_t *p, void *host, size_t bytes)
{
    if (ga_backend_host_free(p->backend, host, bytes) == GALLOC_OK)
        return;
    orphan_t *o = host;
    o->next = p->host_orphans;
    o->bytes = bytes;
    p->host_orphans = o;
}

void ga_pool_host_retry(ga_pool_t *p)
{
    orphan_t *o = p->host_orphans;
    p->host_orphans = NULL;
    while (o != NULL) {
        orphan_t *next = o->next;
        ga_pool_host_drop(p, o, o->bytes);
        o = next;
    }
}

/* Pinned host blocks kept after a wake for the next sleep, as PyTorch's host
 * caching allocator keeps vLLM's pinned backups: pinning is most of a
 * sleep's cost on a GPU (0.4 to 0.5 s per GiB on an H200) and an RL loop
 * sleeps the same tensors every iteration, so the next sleep takes a block
 * of the same size instead. Keyed by size; the blocks of one size are linked
 * through their own first bytes (orphan_t), so keeping one allocates nothing
 * once its size is known. */
typedef struct spare {
    uintptr_t bytes; /* the key */
    orphan_t *head;  /* blocks of that size */
} spare_t;

void ga_pool_host_spare_init(ga_pool_t *p)
{
    ga_addrmap_init(&p->host_spare, sizeof(spare_t));
    p->host_spare_bytes = 0;
}

void ga_pool_host_keep(ga_pool_t *p, void *host, size_t bytes)
{
    spare_t *e = ga_addrmap_find(&p->host_spare, bytes);
    if (e == NULL) {
        if (ga_addrmap_reserve(&p->host_spare, 1) != GALLOC_OK) {
            ga_pool_host_drop(p, host, bytes); /* no room to remember it: give it back */
            return;
        }
        e = ga_addrmap_insert(&p->host_spare, bytes);
        e->head = NULL;
    }
    orphan_t *o = host;
    o->next = e->head;
    o->bytes = bytes;
    e->head = o;
    p->host_spare_bytes += bytes;
}

void *ga_pool_host_take(ga_pool_t *p, size_t bytes)
{
    spare_t *e = ga_addrmap_find(&p->host_spare, bytes);
    if (e == NULL)
        return NULL;
    orphan_t *o = e->head;
    e->head = o->next;
    if (e->head == NULL)
        ga_addrmap_remove(&p->host_spare, e);
    p->host_spare_bytes -= bytes;
    return o;
}

void ga_pool_host_spare_release(ga_pool_t *p)
{
    for (size_t i = 0; i < p->host_spare.cap; i++) {
        spare_t *e = ga_addrmap_slot(&p->host_spare, i);
        for (orphan_t *o = e != NULL ? e->head : NULL, *next; o != NULL; o = next) {
            next = o->next;
            ga_pool_host_drop(p, o, o->bytes);
        }
    }
    ga_addrmap_destroy(&p->host_spare);
    p->host_spare_bytes = 0;
}

/* The blocks a sleep of the marked tags would copy: the allocated blocks of
 * every tag selected, offloaded and awake. */
#define FOR_PREPARED_BLOCKS(p, t, b)                                                                                   \
    for (ga_tag_t *t = (p)->tags; t != NULL; t = t->next)                                                              \
        if (t->sel && t->offload && !t->asleep)                                                                        \
            for (ga_segment_t *s_ = (p)->segments; s_ != NULL; s_ = s_->next)                                          \
                if (s_->pool->owner == t->pool)                                                                        \
                    for (ga_block_t *b = s_->head; b != NULL; b = b->next)                                             \
                        if (b->allocated)

/* Hand back a chain of blocks: to the store (`keep`) or to the backend. */
static void chain_release(ga_pool_t *p, orphan_t *o, bool keep)
{
    for (orphan_t *next; o != NULL; o = next) {
        next = o->next;
        if (keep)
            ga_pool_host_keep(p, o, o->bytes);
        else
            ga_pool_host_drop(p, o, o->bytes);
    }
}

galloc_status_t ga_pool_sleep_prepare(void *impl, const char *tags, const char *offload_tags)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_tag_select_sleep(p, tags, offload_tags, "sleep_prepare", NULL);
    if (st != GALLOC_OK)
        return st;
    ga_pool_host_retry(p);
    size_t n = 0;
    FOR_PREPARED_BLOCKS(p, t, b)
    n++;
    /* Room for every block to come back under a size of its own, so that
     * keeping them at the end cannot fail. */
    if (n > 0 && ga_addrmap_reserve(&p->host_spare, n) != GALLOC_OK)
        return ga_fail(p->err, GALLOC_E_NOMEM,
                       "sleep_prepare: out of host memory for the pinned reserve's bookkeeping");
    /* Each block takes one of its size from the store, or pins one: a block
     * already waiting there (kept by a wake, or pinned by an earlier
     * prepare) is not pinned twice. Both chains go back to the store at the
     * end; on a refused pin the new one is given back (a failed call changes
     * nothing). */
    orphan_t *taken = NULL, *pinned = NULL;
    FOR_PREPARED_BLOCKS(p, t, b)
    {
        void *h = ga_pool_host_take(p, b->size);
        orphan_t **chain = &taken;
        if (h == NULL) {
            st = ga_backend_host_alloc(p->backend, b->size, &h);
            if (st != GALLOC_OK) {
                char buf[256];
                const char *why = ga_backend_why(p->backend, st, buf, sizeof(buf)); /* before the undo's calls */
                chain_release(p, pinned, false);
                chain_release(p, taken, true);
                return ga_fail(p->err, st, "sleep_prepare: tag \"%s\": pinned host memory for %zu bytes refused: %s",
                               t->name, b->size, why);
            }
            chain = &pinned;
        }
        orphan_t *o = h;
        o->bytes = b->size;
        o->next = *chain;
        *chain = o;
    }
    chain_release(p, taken, true);
    chain_release(p, pinned, true);
    return GALLOC_OK;
}

/*
 * pinned.c: the pinned host memory of sleep's copies (pinned.h), on the
 * allocator's host cache (host/host.h, docs/host.md).
 *
 * A copy takes a block of exactly its device block's size (ga_host_take_exact:
 * not rounded to a power of two, never a larger block): PyTorch's host cache
 * would round a vLLM backup up to twice its size (vllm-project/vllm#56410).
 * A wake keeps its copies' blocks in the cache, marked kept, for the next
 * sleep, which takes one of the same size before it pins a new one: on a GPU
 * pinning (cuMemHostAlloc) is most of a first sleep's time (0.4 to 0.5 s per
 * GiB on an H200) and an RL loop sleeps the same tensors every iteration.
 * galloc_sleep_prepare (ga_pool_sleep_prepare) pins, ahead of a sleep, the
 * blocks that sleep would pin, kept the same way, so the sleep itself pins
 * nothing and runs at copy speed. galloc_empty_cache and destroy give the
 * kept blocks back whichever way they came; galloc_host_empty_cache gives
 * them back with every other cached block. Sharing the cache, a kept block
 * may serve a galloc_host_malloc (it is then no longer kept) and
 * pinned_max_cached_size_mb bounds what a wake keeps (a larger block goes
 * back to the driver), and host_memory_stats() counts every pinned byte.
 *
 * The prepare skips a block above pinned_max_cached_size_mb (the cache would
 * give it back as soon as it was kept). A failed prepare gives back what it
 * pinned, but the host cache's accumulated counters (num_host_alloc,
 * num_host_free, the timing) and peaks saw the pins: they count driver calls
 * made, as PyTorch's do.
 *
 * Invariants: a copy is in at most one of a tag's held map (allocated in the
 * cache) and the cache's free lists; a failed prepare leaves the kept blocks
 * as it found them.
 */
#include "host/host.h"
#include "pool/ops.h"
#include "pool/pinned.h"
#include "pool/tags.h"
#include "util/assert.h"

galloc_status_t ga_pool_host_init(ga_pool_t *p)
{
    p->own_host = true;
    return ga_host_create(&p->conf, p->backend, p->err, &p->host);
}

void ga_pool_attach_host(void *impl, struct ga_host *host)
{
    ga_pool_t *p = impl;
    if (p->own_host)
        ga_host_destroy(p->host); /* empty: nothing runs between create and attach */
    p->host = host;
    p->own_host = false;
}

void ga_pool_host_fini(ga_pool_t *p)
{
    if (p->own_host)
        ga_host_destroy(p->host);
    p->host = NULL;
}

galloc_status_t ga_pool_host_take(ga_pool_t *p, size_t bytes, void **host)
{
    bool fresh;
    return ga_host_take_exact(p->host, bytes, host, &fresh);
}

void ga_pool_host_keep(ga_pool_t *p, void *host)
{
    galloc_status_t st = ga_host_free_kept(p->host, host);
    GA_ASSERT(st == GALLOC_OK);
    (void)st;
}

void ga_pool_host_drop(ga_pool_t *p, void *host)
{
    galloc_status_t st = ga_host_free_release(p->host, host);
    GA_ASSERT(st == GALLOC_OK);
    (void)st;
}

void ga_pool_host_retry(ga_pool_t *p)
{
    ga_host_retry_orphans(p->host);
}

void ga_pool_host_spare_release(ga_pool_t *p)
{
    (void)ga_host_release_kept(p->host); /* a refusal is an orphan, retried later */
}

uint64_t ga_pool_host_kept_bytes(const ga_pool_t *p)
{
    return ga_host_kept_bytes(p->host);
}

/* A chain of the blocks one prepare took, linked through their own first
 * bytes (a copy is a device block: >= 512 bytes). */
typedef struct link {
    struct link *next;
} link_t;

/* The blocks a sleep of the marked tags would copy: the allocated blocks of
 * every tag selected, offloaded and awake. */
#define FOR_PREPARED_BLOCKS(p, t, b)                                                                                   \
    for (ga_tag_t *t = (p)->tags; t != NULL; t = t->next)                                                              \
        if (t->sel && t->offload && !t->asleep)                                                                        \
            for (ga_segment_t *s_ = (p)->segments; s_ != NULL; s_ = s_->next)                                          \
                if (s_->pool->owner == t->pool)                                                                        \
                    for (ga_block_t *b = s_->head; b != NULL; b = b->next)                                             \
                        if (b->allocated)

/* Hand back a chain of blocks: kept (`keep`) or to the driver. */
static void chain_release(ga_pool_t *p, link_t *l, bool keep)
{
    for (link_t *next; l != NULL; l = next) {
        next = l->next;
        if (keep)
            ga_pool_host_keep(p, l);
        else
            ga_pool_host_drop(p, l);
    }
}

galloc_status_t ga_pool_sleep_prepare(void *impl, const char *tags, const char *offload_tags)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_tag_select_sleep(p, tags, offload_tags, "sleep_prepare", NULL);
    if (st != GALLOC_OK)
        return st;
    ga_pool_host_retry(p);
    /* Each block takes one of its size from the kept ones, or pins one: a
     * block already waiting (kept by a wake, or pinned by an earlier
     * prepare) is not pinned twice. Both chains are kept at the end; on a
     * refused pin the new ones go back to the driver and the taken ones are
     * kept again (a failed call changes nothing). */
    link_t *taken = NULL, *pinned = NULL;
    FOR_PREPARED_BLOCKS(p, t, b)
    {
        /* Above pinned_max_cached_size_mb the cache would give the block
         * back the moment it is kept: pinning it now would be wasted, and
         * the sleep pins it as it would have without a prepare. */
        if ((uint64_t)b->size > p->conf.pinned_max_cached_size)
            continue;
        void *h = NULL;
        bool fresh = false;
        st = ga_host_take_exact(p->host, b->size, &h, &fresh);
        if (st != GALLOC_OK) {
            char buf[256];
            const char *why = ga_backend_why(p->backend, st, buf, sizeof(buf)); /* before the undo's calls */
            chain_release(p, pinned, false);
            chain_release(p, taken, true);
            return ga_fail(p->err, st, "sleep_prepare: tag \"%s\": pinned host memory for %zu bytes refused: %s",
                           t->name, b->size, why);
        }
        link_t *l = h;
        link_t **chain = fresh ? &pinned : &taken;
        l->next = *chain;
        *chain = l;
    }
    chain_release(p, taken, true);
    chain_release(p, pinned, true);
    return GALLOC_OK;
}

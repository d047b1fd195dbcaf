/*
 * split.h: split and merge, the steps of a cache-hit malloc and of a free
 * that the locked path (malloc.c, free.c) and the stripe path
 * (stripe_path.c) share: PyTorch's should_split, the split of a found block,
 * the merge with free neighbours, and the change each makes to
 * inactive_split, worked out before anything changes (the stripe path must
 * know it has the headroom first).
 *
 * Locking: a split or a merge stays inside one segment, so inside one
 * stream: the stripe's lock or the locked path covers it (stripe.h).
 */
#ifndef GA_POOL_SPLIT_H
#define GA_POOL_SPLIT_H

#include "pool/blockpool.h"
#include "pool/records.h"
#include "util/assert.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's should_split: a no_split pool's blocks never; small-pool
 * remainders of 512 B are worth keeping; large-pool ones only above 1 MiB and
 * never for an oversize request.
 * Expandable segments: the default pools' under expandable_segments, and a
 * sleep tag's (the only private pool that may have them). */
static inline bool ga_pool_should_split(const ga_pool_t *p, const ga_block_t *b, size_t size)
{
    if (__builtin_expect(b->pool->no_split, 0)) /* a no_split MemPool's, small or large */
        return false;
    size_t remaining = b->size - size;
    if (b->pool->is_small || (p->conf.expandable_segments && (b->pool->owner == NULL || b->seg->expandable)))
        return remaining >= GA_MIN_BLOCK_SIZE;
    return size < p->conf.max_split_size && remaining > GA_SMALL_SIZE;
}

/* A change to inactive_split: blocks and bytes. */
typedef struct ga_split_change {
    int64_t count, bytes;
} ga_split_change_t;

/* What alloc_found_block does to inactive_split when it hands out `size`
 * bytes of the free block b (split or whole). PyTorch keeps expandable
 * segments out of inactive_split: their free pages can always be released. */
GA_HOT ga_split_change_t ga_pool_alloc_split_change(const ga_block_t *b, size_t size, bool split)
{
    ga_split_change_t c = {0, 0};
    if (b->seg->expandable)
        return c;
    bool already_split = ga_block_is_split(b);
    if (split && already_split) {
        c.bytes = -(int64_t)size; /* an inactive split piece shrinks by what is handed out */
    } else if (split) {
        c.count = 1; /* a whole segment split for the first time: its rest is a new inactive split block */
        c.bytes = (int64_t)(b->size - size);
    } else if (already_split) {
        c.count = -1; /* a free split piece becomes active whole */
        c.bytes = -(int64_t)b->size;
    }
    return c;
}

/* Split the free block `rest` (out of its set): a new record from r becomes
 * the front of `size` bytes, returned; `rest` keeps the tail and goes back
 * into bp's free set. */
GA_HOT ga_block_t *ga_pool_split_front(ga_records_t *r, ga_blockpool_t *bp, ga_block_t *rest, size_t size)
{
    GA_ASSERT(!rest->allocated && rest->mapped && rest->event_count == 0);
    GA_ASSERT(size > 0 && size < rest->size && size % GA_MIN_BLOCK_SIZE == 0);
    ga_block_t *b = ga_pool_records_get_block(r);
    *b = *rest;
    b->size = size;
    b->next = rest;
    if (b->prev != NULL)
        b->prev->next = b;
    else
        b->seg->head = b;
    rest->prev = b;
    rest->addr += size;
    rest->size -= size;
    GA_ASSERT(b->addr + b->size == rest->addr && b->seg == rest->seg);
    ga_pool_blockpool_insert(bp, rest);
    return b;
}

/* PyTorch's try_merge_blocks condition: only free neighbours in the same
 * mapped state merge (an unmapped expandable range never joins a mapped block). */
GA_HOT bool ga_pool_can_merge(const ga_block_t *dst, const ga_block_t *src)
{
    return src != NULL && !src->allocated && src->event_count == 0 && src->mapped == dst->mapped;
}

/* What free_block does to inactive_split when it returns b. With k
 * neighbours merged (absorbing A bytes) PyTorch adds -k, -A to inactive_split
 * and its bytes, then +1 and the merged size if the result is still split:
 * net 1 - k blocks and +b->size bytes when split, -k blocks and -A bytes when
 * the segment is whole again. */
GA_HOT ga_split_change_t ga_pool_free_split_change(const ga_block_t *b)
{
    ga_split_change_t c = {0, 0};
    if (b->seg->expandable)
        return c;
    bool mp = ga_pool_can_merge(b, b->prev), mn = ga_pool_can_merge(b, b->next);
    const ga_block_t *before = mp ? b->prev->prev : b->prev, *after = mn ? b->next->next : b->next;
    int64_t merged = (int64_t)mp + (int64_t)mn;
    if (before != NULL || after != NULL) {
        c.count = 1 - merged;
        c.bytes = (int64_t)b->size;
    } else {
        c.count = -merged;
        c.bytes = -(int64_t)((mp ? b->prev->size : 0) + (mn ? b->next->size : 0));
    }
    return c;
}

/* Absorb src into dst if ga_pool_can_merge; its record goes to r. Returns
 * the bytes absorbed (0 if not merged). */
GA_HOT size_t ga_pool_merge(ga_records_t *r, ga_block_t *dst, ga_block_t *src)
{
    if (!ga_pool_can_merge(dst, src))
        return 0;
    /* src is dst's neighbour in one segment, and the two touch. */
    GA_ASSERT(src->seg == dst->seg && src->stream == dst->stream && !dst->allocated);
    GA_ASSERT(dst->prev == src ? src->addr + src->size == dst->addr
                               : dst->next == src && dst->addr + dst->size == src->addr);
    if (dst->prev == src) {
        dst->addr = src->addr;
        dst->prev = src->prev;
        if (dst->prev != NULL)
            dst->prev->next = dst;
        else
            dst->seg->head = dst;
    } else {
        dst->next = src->next;
        if (dst->next != NULL)
            dst->next->prev = dst;
    }
    size_t absorbed = src->size;
    dst->size += absorbed;
    if (src->mapped)
        ga_pool_blockpool_remove(src->pool, src);
    else
        ga_pool_blockpool_remove_unmapped(src->pool, src);
    ga_pool_records_put_block(r, src);
    return absorbed;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_SPLIT_H */

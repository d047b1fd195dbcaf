/*
 * blockpool.c: a block pool's free set, ordered as PyTorch's CUDA allocator
 * orders it (BlockComparatorSize in c10/cuda/CUDACachingAllocator.cpp): by
 * stream, then size, then address. lower_bound on (stream, size, 0) is then
 * best fit: the smallest free block of the same stream that is large enough,
 * lowest address on ties. (The templated CachingDeviceAllocator.h used by XPU
 * orders size before stream; CUDA's allocator, which galloc reproduces, does not.)
 */
#include "pool/pool_int.h"

#define BLOCK_OF(n) ((ga_block_t *)((char *)(n) - offsetof(ga_block_t, node)))

static int cmp_blocks(const ga_avl_node_t *na, const ga_avl_node_t *nb)
{
    const ga_block_t *a = BLOCK_OF(na), *b = BLOCK_OF(nb);
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->size != b->size)
        return a->size < b->size ? -1 : 1;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return 0;
}

/* PyTorch's BlockComparatorAddress for the unmapped set: stream, then address. */
static int cmp_unmapped(const ga_avl_node_t *na, const ga_avl_node_t *nb)
{
    const ga_block_t *a = BLOCK_OF(na), *b = BLOCK_OF(nb);
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return 0;
}

void ga_pool_blockpool_init(ga_blockpool_t *bp, bool is_small)
{
    ga_pool_avl_init(&bp->free, cmp_blocks);
    ga_pool_avl_init(&bp->unmapped, cmp_unmapped);
    bp->is_small = is_small;
    bp->owner = NULL;
    bp->stat = is_small ? GALLOC_STAT_SMALL_POOL : GALLOC_STAT_LARGE_POOL;
    bp->get_free_blocks_call_count = 0;
}

void ga_pool_blockpool_insert(ga_blockpool_t *bp, ga_block_t *b)
{
    b->gc_count_base = bp->get_free_blocks_call_count;
    ga_pool_avl_insert(&bp->free, &b->node);
}

void ga_pool_blockpool_remove(ga_blockpool_t *bp, ga_block_t *b)
{
    ga_pool_avl_remove(&bp->free, &b->node);
}

ga_block_t *ga_pool_blockpool_lower_bound(ga_blockpool_t *bp, galloc_stream_t stream, size_t size)
{
    /* Only the compared fields matter; the initializer keeps the rest defined. */
    ga_block_t key = {.addr = 0, .size = size, .stream = stream};
    ga_avl_node_t *n = ga_pool_avl_lower_bound(&bp->free, &key.node);
    return n ? BLOCK_OF(n) : NULL;
}

ga_block_t *ga_pool_blockpool_first(ga_blockpool_t *bp)
{
    ga_avl_node_t *n = ga_pool_avl_first(&bp->free);
    return n ? BLOCK_OF(n) : NULL;
}

ga_block_t *ga_pool_blockpool_last(ga_blockpool_t *bp)
{
    ga_avl_node_t *n = ga_pool_avl_last(&bp->free);
    return n ? BLOCK_OF(n) : NULL;
}

ga_block_t *ga_pool_blockpool_next(ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_next(&b->node);
    return n ? BLOCK_OF(n) : NULL;
}

ga_block_t *ga_pool_blockpool_prev(ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_prev(&b->node);
    return n ? BLOCK_OF(n) : NULL;
}

void ga_pool_blockpool_insert_unmapped(ga_blockpool_t *bp, ga_block_t *b)
{
    ga_pool_avl_insert(&bp->unmapped, &b->node);
}

void ga_pool_blockpool_remove_unmapped(ga_blockpool_t *bp, ga_block_t *b)
{
    ga_pool_avl_remove(&bp->unmapped, &b->node);
}

ga_block_t *ga_pool_blockpool_unmapped_first(ga_blockpool_t *bp, galloc_stream_t stream)
{
    ga_block_t key = {.addr = 0, .stream = stream};
    ga_avl_node_t *n = ga_pool_avl_lower_bound(&bp->unmapped, &key.node);
    return n ? BLOCK_OF(n) : NULL;
}

ga_block_t *ga_pool_blockpool_unmapped_next(ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_next(&b->node);
    return n ? BLOCK_OF(n) : NULL;
}

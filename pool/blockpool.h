/*
 * blockpool.h: the block pools' free sets (blockpool.c): each block pool
 * keeps one stream set per stream, in an array sorted by stream. The hot
 * operations (prepare a stream's set, PyTorch's best fit, insert, remove)
 * are inline below, for malloc's and free's cache hits on both paths, with
 * best fit's rule for expandable segments; walks, the cross-stream
 * lower_bound and the check are out of line.
 *
 * Locking: a stream set is its stream's: the stripe's lock or the locked
 * path covers it; the set array changes on the locked path only (stripe.h).
 */
#ifndef GA_POOL_BLOCKPOOL_H
#define GA_POOL_BLOCKPOOL_H

#include "pool/types.h"
#include "util/assert.h"

#ifdef __cplusplus
extern "C" {
#endif

void ga_pool_blockpool_init(ga_blockpool_t *bp, bool is_small);
/* Frees the per-stream sets (the blocks are the records' to free). */
void ga_pool_blockpool_destroy(ga_blockpool_t *bp);
/* The set of `stream`, or NULL; changes nothing (a stripe call's lookup). */
ga_stream_set_t *ga_pool_blockpool_lookup(const ga_blockpool_t *bp, galloc_stream_t stream);
/* Free mapped blocks in all its sets. */
size_t ga_pool_blockpool_count(const ga_blockpool_t *bp);
/* ga_pool_blockpool_prepare when `stream` is not the set used last. */
ga_stream_set_t *ga_pool_blockpool_prepare_slow(ga_blockpool_t *bp, galloc_stream_t stream);
/* The set of a stream that must have one (a segment's, at its creation). */
ga_stream_set_t *ga_pool_blockpool_set_of(ga_blockpool_t *bp, galloc_stream_t stream);
/* Every bin tree well formed and in its bin, the bitmaps mirroring the bins,
 * the sets sorted by stream, the counts agreeing: for the invariant check. */
bool ga_pool_blockpool_trees_ok(const ga_blockpool_t *bp);
/* a orders before b in PyTorch's (stream, size, address) order. */
bool ga_pool_blockpool_before(const ga_block_t *a, const ga_block_t *b);
void ga_pool_blockpool_insert_unmapped(ga_blockpool_t *bp, ga_block_t *b);
void ga_pool_blockpool_remove_unmapped(ga_blockpool_t *bp, ga_block_t *b);
/* First unmapped block of `stream` (lowest address), and its successor. */
ga_block_t *ga_pool_blockpool_unmapped_first(ga_blockpool_t *bp, galloc_stream_t stream);
ga_block_t *ga_pool_blockpool_unmapped_next(ga_block_t *b);
/* First free block not ordered before (stream, size, address 0), or NULL:
 * the next stream's smallest when `stream` has none that large, as in
 * PyTorch's single set (release_available_cached_blocks walks back from it). */
ga_block_t *ga_pool_blockpool_lower_bound(ga_blockpool_t *bp, galloc_stream_t stream, size_t size);
ga_block_t *ga_pool_blockpool_first(ga_blockpool_t *bp);
ga_block_t *ga_pool_blockpool_last(ga_blockpool_t *bp);
/* The next free block of b's own set in (size, address) order, or NULL:
 * reads nothing of another stream's (the stripe path may call it). */
ga_block_t *ga_pool_blockpool_next_in_set(const ga_block_t *b);
/* Neighbours in (stream, size, address) order across the streams' sets. */
ga_block_t *ga_pool_blockpool_next(ga_block_t *b);
ga_block_t *ga_pool_blockpool_prev(ga_block_t *b);

#define GA_BLOCK_OF_NODE(n) ((ga_block_t *)((char *)(n)-offsetof(ga_block_t, node)))

/* (size, address) order inside one stream's set, compared inline. */
static inline bool ga_block_size_addr_before(const ga_block_t *a, const ga_block_t *b)
{
    return a->size < b->size || (a->size == b->size && a->addr < b->addr);
}

/* Make sure `stream` has a free set in bp before any block of that stream can
 * be inserted (malloc calls it first: insert cannot fail); returns it, or
 * NULL when out of host memory. */
static inline ga_stream_set_t *ga_pool_blockpool_prepare(ga_blockpool_t *bp, galloc_stream_t stream)
{
    ga_stream_set_t *last = bp->last;
    if (__builtin_expect(last != NULL && last->stream == stream, 1))
        return last;
    return ga_pool_blockpool_prepare_slow(bp, stream);
}

/* PyTorch's get_free_block search within one stream: the smallest free
 * block of at least `size` bytes, lowest address among equals, or NULL,
 * starting from `bin`, the first bin that can hold such a block. An exact
 * bin holds one size, so its leftmost block is the answer; a class bin holds
 * several, so the one class the request falls in is searched by size, and
 * every later bin holds only larger blocks (sizeidx.h). */
GA_HOT ga_block_t *ga_pool_blockpool_fit_from(ga_stream_set_t *set, unsigned bin, size_t size)
{
    ga_sizeidx_t *x = &set->idx;
    if (bin >= GA_SIZEIDX_EXACT && bin < GA_SIZEIDX_BINS && x->bins[bin] != NULL) {
        ga_avl_node_t *n = x->bins[bin], *best = NULL;
        while (n != NULL) {
            if (GA_BLOCK_OF_NODE(n)->size >= size) {
                best = n;
                n = n->left;
            } else {
                n = n->right;
            }
        }
        if (best != NULL)
            return GA_BLOCK_OF_NODE(best);
        bin++;
    }
    bin = ga_sizeidx_find_ge(x, bin);
    return bin != GA_SIZEIDX_NONE ? GA_BLOCK_OF_NODE(ga_pool_avl_leftmost(x->bins[bin])) : NULL;
}

/* Best fit for any size (a search key need not be a block size). */
GA_HOT ga_block_t *ga_pool_blockpool_fit(ga_stream_set_t *set, size_t size)
{
    return ga_pool_blockpool_fit_from(set, ga_sizeidx_key_bin(size), size);
}

/* Best fit for a rounded request (a multiple of 512, >= 512): malloc's. */
GA_HOT ga_block_t *ga_pool_blockpool_fit_rounded(ga_stream_set_t *set, size_t size)
{
    return ga_pool_blockpool_fit_from(set, ga_sizeidx_bin(size), size);
}

/* Into its segment's set (b->size, b->addr fixed while it is in). */
GA_HOT void ga_pool_blockpool_insert(ga_blockpool_t *bp, ga_block_t *b)
{
    /* Only a free, mapped, settled block, into the set of its own stream. */
    GA_ASSERT(!b->allocated && b->mapped && b->event_count == 0 && b->size > 0);
    GA_ASSERT(b->seg->set != NULL && b->seg->set->stream == b->stream && b->seg->pool == b->pool);
    ga_sizeidx_t *x = &b->seg->set->idx;
    unsigned bin = ga_sizeidx_bin(b->size);
    ga_avl_node_t **root = &x->bins[bin], **link = root, *parent = NULL;
    if (*root == NULL) {
        /* The hot path's case: a bin of its own. */
    } else if (bin < GA_SIZEIDX_EXACT) {
        /* One size in the bin: the address alone orders it. */
        uintptr_t addr = b->addr;
        do {
            parent = *link;
            link = addr < GA_BLOCK_OF_NODE(parent)->addr ? &parent->left : &parent->right;
        } while (*link != NULL);
    } else {
        do {
            parent = *link;
            link = ga_block_size_addr_before(b, GA_BLOCK_OF_NODE(parent)) ? &parent->left : &parent->right;
        } while (*link != NULL);
    }
    ga_pool_avl_link(root, parent, link, &b->node);
    ga_sizeidx_set(x, bin);
    b->gc_count_base = bp->get_free_blocks_call_count;
    b->seg->set->n_free++;
}

GA_HOT void ga_pool_blockpool_remove(ga_blockpool_t *bp, ga_block_t *b)
{
    GA_ASSERT(!b->allocated && b->seg->set->stream == b->stream && b->seg->set->n_free > 0);
    ga_sizeidx_t *x = &b->seg->set->idx;
    unsigned bin = ga_sizeidx_bin(b->size);
    ga_pool_avl_erase(&x->bins[bin], &b->node);
    if (x->bins[bin] == NULL)
        ga_sizeidx_clear(x, bin);
    b->seg->set->n_free--;
    (void)bp;
}

/* For best fit an expandable block counts as the size it can grow to: itself
 * plus the unmapped range after it. */
static inline size_t ga_pool_expandable_size(const ga_block_t *b)
{
    return b->size + (b->next != NULL && !b->next->mapped ? b->next->size : 0);
}

/* PyTorch's get_free_block after its lower_bound, for expandable segments: a
 * later block of the stream that can grow less may be the better choice.
 * Walks the stream's own set only. */
static inline ga_block_t *ga_pool_expandable_best(ga_block_t *b)
{
    ga_block_t *next = ga_pool_blockpool_next_in_set(b);
    while (b->seg->expandable && next != NULL && ga_pool_expandable_size(next) < ga_pool_expandable_size(b)) {
        b = next;
        next = ga_pool_blockpool_next_in_set(b);
    }
    return b;
}

/* PyTorch's get_free_block: lower_bound on (stream, size); no further search.
 * Inline into malloc, whose every call makes it; also MemPool use_on_oom's
 * search (private.c). */
GA_HOT bool ga_pool_get_free_block(ga_pool_t *p, ga_alloc_params_t *ap)
{
    ga_blockpool_t *bp = ap->pool;
    uint64_t mss = p->conf.max_split_size;
    if (p->set_fraction && p->conf.garbage_collection_threshold > 0.0)
        bp->get_free_blocks_call_count++; /* the GC clock ticks per search */
    /* Only this stream's set: PyTorch's lower_bound may land on another
     * stream's block, which it then rejects; the answer is the same. */
    ga_block_t *b = ga_pool_blockpool_fit_rounded(ap->set, ap->size);
    if (b == NULL)
        return false;
    if (b->seg->expandable)
        b = ga_pool_expandable_best(b);
    /* A normal request never takes an oversize cached block. */
    if (ap->size < mss && b->size >= mss)
        return false;
    /* An oversize request takes an oversize block only within the rounding tolerance. */
    if (ap->size >= mss && b->size >= ap->size + p->conf.max_non_split_rounding_size)
        return false;
    ga_pool_blockpool_remove(bp, b);
    ap->block = b;
    return true;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_BLOCKPOOL_H */

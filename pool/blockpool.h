/*
 * blockpool.h: the free sets' hot operations, inline for malloc's and free's
 * cache hits (both paths): prepare a stream's set, PyTorch's best fit, and
 * insert and remove. The rest of the free sets is in blockpool.c
 * (declared in pool_int.h).
 */
#ifndef GA_POOL_BLOCKPOOL_H
#define GA_POOL_BLOCKPOOL_H

#include "pool/pool_int.h"

#ifdef __cplusplus
extern "C" {
#endif

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
    ga_sizeidx_t *x = &b->seg->set->idx;
    unsigned bin = ga_sizeidx_bin(b->size);
    ga_pool_avl_erase(&x->bins[bin], &b->node);
    if (x->bins[bin] == NULL)
        ga_sizeidx_clear(x, bin);
    b->seg->set->n_free--;
    (void)bp;
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_BLOCKPOOL_H */

/*
 * blockpool.c: a block pool's free set, in the order PyTorch's CUDA allocator
 * keeps it (BlockComparatorSize in c10/cuda/CUDACachingAllocator.cpp): by
 * stream, then size, then address. lower_bound on (stream, size, 0) is then
 * best fit: the smallest free block of the same stream that is large enough,
 * lowest address on ties. (The templated CachingDeviceAllocator.h used by XPU
 * orders size before stream; CUDA's allocator, which galloc reproduces, does not.)
 *
 * PyTorch holds that order in one std::set, so every block cached on another
 * stream makes each search, insert and remove deeper. galloc holds one AVL
 * tree per stream, by (size, address), in an array of trees sorted by stream:
 * the first tree a malloc looks at is the one it used last (its stream), so
 * a single-stream workload costs the same however many other streams hold
 * cached blocks, and other streams cost a binary search over a few entries.
 * first/last/next/prev walk the trees in stream order, so callers see exactly
 * PyTorch's single order.
 *
 * A tree is created by ga_pool_blockpool_prepare, which malloc calls before it
 * can insert a block of that stream (a block is freed into the pool and onto
 * the stream it was allocated on): insert never allocates and cannot fail.
 * Trees stay until the block pool goes; there is one per stream ever used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/pool_int.h"

#define BLOCK_OF(n) ((ga_block_t *)((char *)(n) - offsetof(ga_block_t, node)))

/* Within one stream's tree: size, then address. */
static int cmp_size_addr(const ga_avl_node_t *na, const ga_avl_node_t *nb)
{
    const ga_block_t *a = BLOCK_OF(na), *b = BLOCK_OF(nb);
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

bool ga_pool_blockpool_before(const ga_block_t *a, const ga_block_t *b)
{
    if (a->stream != b->stream)
        return a->stream < b->stream;
    return cmp_size_addr(&a->node, &b->node) < 0;
}

void ga_pool_blockpool_init(ga_blockpool_t *bp, bool is_small)
{
    bp->sets = NULL;
    bp->n_sets = bp->cap_sets = 0;
    bp->last = NULL;
    bp->n_free = 0;
    ga_pool_avl_init(&bp->unmapped, cmp_unmapped);
    bp->is_small = is_small;
    bp->owner = NULL;
    bp->stat = is_small ? GALLOC_STAT_SMALL_POOL : GALLOC_STAT_LARGE_POOL;
    bp->get_free_blocks_call_count = 0;
}

void ga_pool_blockpool_destroy(ga_blockpool_t *bp)
{
    for (size_t i = 0; i < bp->n_sets; i++)
        free(bp->sets[i]);
    free(bp->sets);
    bp->sets = NULL;
    bp->n_sets = bp->cap_sets = 0;
    bp->last = NULL;
}

/* The index of the first set whose stream is not below `stream` (binary
 * search); *found says whether it is that stream's, which then becomes
 * `last`. Callers on the hot path check `last` first. */
static size_t find_set(ga_blockpool_t *bp, galloc_stream_t stream, bool *found)
{
    size_t lo = 0, hi = bp->n_sets;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bp->sets[mid]->stream < stream)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < bp->n_sets && bp->sets[lo]->stream == stream;
    if (*found)
        bp->last = bp->sets[lo];
    return lo;
}

galloc_status_t ga_pool_blockpool_prepare(ga_blockpool_t *bp, galloc_stream_t stream)
{
    if (bp->last != NULL && bp->last->stream == stream)
        return GALLOC_OK;
    bool found;
    size_t at = find_set(bp, stream, &found);
    if (found)
        return GALLOC_OK;
    if (bp->n_sets == bp->cap_sets) {
        size_t cap = bp->cap_sets ? 2 * bp->cap_sets : 4;
        ga_stream_set_t **sets = realloc(bp->sets, cap * sizeof(*sets));
        if (sets == NULL)
            return GALLOC_E_NOMEM;
        bp->sets = sets;
        bp->cap_sets = cap;
    }
    ga_stream_set_t *set = malloc(sizeof(*set));
    if (set == NULL)
        return GALLOC_E_NOMEM;
    set->stream = stream;
    ga_pool_avl_init(&set->tree, cmp_size_addr);
    memmove(&bp->sets[at + 1], &bp->sets[at], (bp->n_sets - at) * sizeof(*bp->sets));
    bp->sets[at] = set;
    bp->n_sets++;
    bp->last = set;
    return GALLOC_OK;
}

/* A block inserted on a stream malloc never prepared: a bug in the pool, and
 * continuing would lose the block. */
static void __attribute__((noinline, noreturn)) no_set(galloc_stream_t stream)
{
    fprintf(stderr, "galloc: internal error: no free set for stream %#lx\n", (unsigned long)stream);
    abort();
}

/* The tree of a stream that must have one (prepared by malloc). */
static inline ga_avl_t *tree_of(ga_blockpool_t *bp, galloc_stream_t stream)
{
    ga_stream_set_t *last = bp->last;
    if (last != NULL && last->stream == stream)
        return &last->tree;
    bool found;
    size_t at = find_set(bp, stream, &found);
    if (!found)
        no_set(stream);
    return &bp->sets[at]->tree;
}

void ga_pool_blockpool_insert(ga_blockpool_t *bp, ga_block_t *b)
{
    b->gc_count_base = bp->get_free_blocks_call_count;
    ga_pool_avl_insert(tree_of(bp, b->stream), &b->node);
    bp->n_free++;
}

void ga_pool_blockpool_remove(ga_blockpool_t *bp, ga_block_t *b)
{
    ga_pool_avl_remove(tree_of(bp, b->stream), &b->node);
    bp->n_free--;
}

/* The smallest block of the first non-empty set at index >= i, or NULL. */
static ga_block_t *first_from(const ga_blockpool_t *bp, size_t i)
{
    for (; i < bp->n_sets; i++) {
        ga_avl_node_t *n = ga_pool_avl_first(&bp->sets[i]->tree);
        if (n != NULL)
            return BLOCK_OF(n);
    }
    return NULL;
}

/* The largest block of the last non-empty set at index < i, or NULL. */
static ga_block_t *last_before(const ga_blockpool_t *bp, size_t i)
{
    while (i-- > 0) {
        ga_avl_node_t *n = ga_pool_avl_last(&bp->sets[i]->tree);
        if (n != NULL)
            return BLOCK_OF(n);
    }
    return NULL;
}

/* The smallest block of a stream's tree not ordered before (size, address
 * 0): the first one of at least `size` bytes. A direct descent: no key record
 * to build and no comparator call per level. */
static ga_block_t *tree_lower_bound(const ga_avl_t *t, size_t size)
{
    ga_avl_node_t *n = t->root, *best = NULL;
    while (n != NULL) {
        if (BLOCK_OF(n)->size >= size) {
            best = n;
            n = n->left;
        } else {
            n = n->right;
        }
    }
    return best != NULL ? BLOCK_OF(best) : NULL;
}

ga_block_t *ga_pool_blockpool_lower_bound(ga_blockpool_t *bp, galloc_stream_t stream, size_t size)
{
    if (bp->last != NULL && bp->last->stream == stream) {
        ga_block_t *b = tree_lower_bound(&bp->last->tree, size);
        if (b != NULL)
            return b;
    }
    bool found;
    size_t at = find_set(bp, stream, &found);
    if (found) {
        ga_block_t *b = tree_lower_bound(&bp->sets[at]->tree, size);
        if (b != NULL)
            return b;
        at++;
    }
    return first_from(bp, at); /* the next stream's smallest, as in one ordered set */
}

ga_block_t *ga_pool_blockpool_first(ga_blockpool_t *bp)
{
    return first_from(bp, 0);
}

ga_block_t *ga_pool_blockpool_last(ga_blockpool_t *bp)
{
    return last_before(bp, bp->n_sets);
}

ga_block_t *ga_pool_blockpool_next(ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_next(&b->node);
    if (n != NULL)
        return BLOCK_OF(n);
    bool found;
    size_t at = find_set(b->pool, b->stream, &found);
    return first_from(b->pool, at + 1);
}

ga_block_t *ga_pool_blockpool_prev(ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_prev(&b->node);
    if (n != NULL)
        return BLOCK_OF(n);
    bool found;
    size_t at = find_set(b->pool, b->stream, &found);
    return last_before(b->pool, at);
}

bool ga_pool_blockpool_trees_ok(const ga_blockpool_t *bp)
{
    size_t n = 0;
    for (size_t i = 0; i < bp->n_sets; i++) {
        if (!ga_pool_avl_check(&bp->sets[i]->tree) || (i > 0 && bp->sets[i - 1]->stream >= bp->sets[i]->stream))
            return false;
        n += bp->sets[i]->tree.count;
    }
    return n == bp->n_free && ga_pool_avl_check(&bp->unmapped);
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

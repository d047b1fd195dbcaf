/*
 * blockpool.c: a block pool's free set, in the order PyTorch's CUDA allocator
 * keeps it (BlockComparatorSize in c10/cuda/CUDACachingAllocator.cpp): by
 * stream, then size, then address. lower_bound on (stream, size, 0) is then
 * best fit: the smallest free block of the same stream that is large enough,
 * lowest address on ties. (The templated CachingDeviceAllocator.h used by XPU
 * orders size before stream; CUDA's allocator, which galloc reproduces, does not.)
 *
 * PyTorch holds that order in one std::set, so every block cached on another
 * stream makes each search, insert and remove deeper. galloc holds one exact
 * size index per stream (sizeidx.h: a bin per size up to 2 MiB, TLSF classes
 * above, a bitmap of the non-empty bins, a small tree per bin), in an array
 * sorted by stream: the first set a call looks at is the one used last (its
 * stream), so a single-stream workload costs the same however many other
 * streams hold cached blocks, and other streams cost a binary search over a
 * few entries. A best-fit search is a bitmap scan and a descent of one bin's
 * tree, whose size is the number of free blocks of one size (or one class):
 * on the hot path one node, so splitting off a block and merging it back
 * never rebalances anything. first/last/next/prev walk the sets in stream
 * order, each set's bins in size order, each bin's tree in order, so callers
 * see exactly PyTorch's single order.
 *
 * A set is created by ga_pool_blockpool_prepare, which malloc calls before it
 * can insert a block of that stream (a block is freed into the pool and onto
 * the stream it was allocated on): insert never allocates and cannot fail.
 * Sets stay until the block pool goes; there is one per stream ever used.
 *
 * Locking: a stream set is its stream's stripe's to change, the set array
 * the locked path's (blockpool.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/blockpool.h"

#define BLOCK_OF(n) GA_BLOCK_OF_NODE(n)

/* The same order as a comparator, for the invariant check's tree walk. */
static int cmp_size_addr(const ga_avl_node_t *na, const ga_avl_node_t *nb)
{
    const ga_block_t *a = BLOCK_OF(na), *b = BLOCK_OF(nb);
    return ga_block_size_addr_before(a, b) ? -1 : ga_block_size_addr_before(b, a) ? 1 : 0;
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
    return ga_block_size_addr_before(a, b);
}

void ga_pool_blockpool_init(ga_blockpool_t *bp, bool is_small)
{
    bp->sets = NULL;
    bp->n_sets = bp->cap_sets = 0;
    bp->last = NULL;
    ga_pool_avl_init(&bp->unmapped, cmp_unmapped);
    bp->is_small = is_small;
    bp->no_split = false;
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

/* The index of the first set whose stream is not below `stream` (binary search). */
static size_t search_set(const ga_blockpool_t *bp, galloc_stream_t stream)
{
    size_t lo = 0, hi = bp->n_sets;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (bp->sets[mid]->stream < stream)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* search_set; *found says whether the set is that stream's, which then
 * becomes `last`. Callers on the hot path check `last` first. */
static size_t find_set(ga_blockpool_t *bp, galloc_stream_t stream, bool *found)
{
    size_t lo = search_set(bp, stream);
    *found = lo < bp->n_sets && bp->sets[lo]->stream == stream;
    if (*found)
        bp->last = bp->sets[lo];
    return lo;
}

ga_stream_set_t *ga_pool_blockpool_lookup(const ga_blockpool_t *bp, galloc_stream_t stream)
{
    size_t at = search_set(bp, stream);
    return at < bp->n_sets && bp->sets[at]->stream == stream ? bp->sets[at] : NULL;
}

size_t ga_pool_blockpool_count(const ga_blockpool_t *bp)
{
    size_t n = 0;
    for (size_t i = 0; i < bp->n_sets; i++)
        n += bp->sets[i]->n_free;
    return n;
}

ga_stream_set_t *ga_pool_blockpool_prepare_slow(ga_blockpool_t *bp, galloc_stream_t stream)
{
    if (bp->owner != NULL && bp->owner->asleep)
        return NULL; /* a route to a sleeping tag (ga_pool_get_routed_pool, ga_pool_prepare_failed) */
    bool found;
    size_t at = find_set(bp, stream, &found);
    if (found)
        return bp->sets[at];
    if (bp->n_sets == bp->cap_sets) {
        size_t cap = bp->cap_sets ? 2 * bp->cap_sets : 4;
        ga_stream_set_t **sets = realloc(bp->sets, cap * sizeof(*sets));
        if (sets == NULL)
            return NULL;
        bp->sets = sets;
        bp->cap_sets = cap;
    }
    ga_stream_set_t *set = calloc(1, sizeof(*set)); /* every bin empty */
    if (set == NULL)
        return NULL;
    set->stream = stream;
    memmove(&bp->sets[at + 1], &bp->sets[at], (bp->n_sets - at) * sizeof(*bp->sets));
    bp->sets[at] = set;
    bp->n_sets++;
    /* One set per stream, sorted by stream: find_set's binary search. */
    GA_ASSERT((at == 0 || bp->sets[at - 1]->stream < stream) &&
              (at + 1 == bp->n_sets || bp->sets[at + 1]->stream > stream));
    bp->last = set;
    return set;
}

/* A segment on a stream malloc never prepared: a bug in the pool, and
 * continuing would lose its blocks. */
static void __attribute__((noinline, noreturn)) no_set(galloc_stream_t stream)
{
    fprintf(stderr, "galloc: internal error: no free set for stream %#lx\n", (unsigned long)stream);
    abort();
}

ga_stream_set_t *ga_pool_blockpool_set_of(ga_blockpool_t *bp, galloc_stream_t stream)
{
    bool found;
    size_t at = find_set(bp, stream, &found);
    if (!found)
        no_set(stream);
    return bp->sets[at];
}

/* The smallest block of a non-empty bin at or after `bin` (in size order), or NULL. */
static ga_block_t *first_at(ga_sizeidx_t *x, unsigned bin)
{
    bin = ga_sizeidx_find_ge(x, bin);
    return bin != GA_SIZEIDX_NONE ? BLOCK_OF(ga_pool_avl_leftmost(x->bins[bin])) : NULL;
}

/* The largest block of a non-empty bin at or before `bin`, or NULL. */
static ga_block_t *last_at(ga_sizeidx_t *x, unsigned bin)
{
    bin = ga_sizeidx_find_le(x, bin);
    return bin != GA_SIZEIDX_NONE ? BLOCK_OF(ga_pool_avl_rightmost(x->bins[bin])) : NULL;
}

/* The smallest block of the first non-empty set at index >= i, or NULL. */
static ga_block_t *first_from(const ga_blockpool_t *bp, size_t i)
{
    for (; i < bp->n_sets; i++) {
        ga_block_t *b = first_at(&bp->sets[i]->idx, 0);
        if (b != NULL)
            return b;
    }
    return NULL;
}

/* The largest block of the last non-empty set at index < i, or NULL. */
static ga_block_t *last_before(const ga_blockpool_t *bp, size_t i)
{
    while (i-- > 0) {
        ga_block_t *b = last_at(&bp->sets[i]->idx, GA_SIZEIDX_BINS - 1);
        if (b != NULL)
            return b;
    }
    return NULL;
}

ga_block_t *ga_pool_blockpool_lower_bound(ga_blockpool_t *bp, galloc_stream_t stream, size_t size)
{
    bool found;
    size_t at = find_set(bp, stream, &found);
    if (found) {
        ga_block_t *b = ga_pool_blockpool_fit(bp->sets[at], size);
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

ga_block_t *ga_pool_blockpool_next_in_set(const ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_next((ga_avl_node_t *)&b->node);
    return n != NULL ? BLOCK_OF(n) : first_at(&b->seg->set->idx, ga_sizeidx_bin(b->size) + 1);
}

ga_block_t *ga_pool_blockpool_next(ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_next(&b->node);
    if (n != NULL)
        return BLOCK_OF(n);
    bool found;
    size_t at = find_set(b->pool, b->stream, &found);
    ga_block_t *c = first_at(&b->pool->sets[at]->idx, ga_sizeidx_bin(b->size) + 1);
    return c != NULL ? c : first_from(b->pool, at + 1);
}

ga_block_t *ga_pool_blockpool_prev(ga_block_t *b)
{
    ga_avl_node_t *n = ga_pool_avl_prev(&b->node);
    if (n != NULL)
        return BLOCK_OF(n);
    bool found;
    size_t at = find_set(b->pool, b->stream, &found);
    unsigned bin = ga_sizeidx_bin(b->size);
    ga_block_t *c = bin > 0 ? last_at(&b->pool->sets[at]->idx, bin - 1) : NULL;
    return c != NULL ? c : last_before(b->pool, at);
}

/* One set's index: the bitmaps cover the bins, every tree is well formed
 * and holds only blocks of its bin (one size in an exact bin). Returns the
 * number of blocks, or SIZE_MAX if anything is wrong. Walks only the set bins
 * (a block in a bin whose bit is clear is missed, and the caller's count
 * against n_free catches it); the walk's searches may clear stale top bits. */
static size_t idx_check(ga_sizeidx_t *x)
{
    for (unsigned w = 0; w < GA_SIZEIDX_WORDS; w++)
        if (x->words[w] != 0 && !((x->top[w >> 6] >> (w & 63u)) & 1u))
            return SIZE_MAX;
    size_t total = 0;
    for (unsigned bin = ga_sizeidx_find_ge(x, 0); bin != GA_SIZEIDX_NONE; bin = ga_sizeidx_find_ge(x, bin + 1)) {
        size_t count;
        if (x->bins[bin] == NULL || !ga_pool_avl_check_root(x->bins[bin], cmp_size_addr, &count))
            return SIZE_MAX;
        ga_avl_node_t *n = ga_pool_avl_leftmost(x->bins[bin]);
        size_t first_size = BLOCK_OF(n)->size;
        for (; n != NULL; n = ga_pool_avl_next(n)) {
            const ga_block_t *b = BLOCK_OF(n);
            if (ga_sizeidx_bin(b->size) != bin || (b->size & 511u) != 0 ||
                (bin < GA_SIZEIDX_EXACT && b->size != first_size))
                return SIZE_MAX;
        }
        total += count;
    }
    return total;
}

bool ga_pool_blockpool_trees_ok(const ga_blockpool_t *bp)
{
    size_t n = 0;
    for (size_t i = 0; i < bp->n_sets; i++) {
        size_t in_set = idx_check(&bp->sets[i]->idx);
        if (in_set == SIZE_MAX || (i > 0 && bp->sets[i - 1]->stream >= bp->sets[i]->stream))
            return false;
        n += in_set;
    }
    return n == ga_pool_blockpool_count(bp) && ga_pool_avl_check(&bp->unmapped);
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

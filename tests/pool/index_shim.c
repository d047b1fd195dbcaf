/* index_shim.c: see index_shim.h. */
#include "tests/pool/index_shim.h"

#include <stdlib.h>

#include "pool/blockpool.h"

struct index_shim {
    ga_blockpool_t bp;
    ga_segment_t *segs; /* one per stream, in the order given */
    size_t n_streams;
    ga_block_t *blocks; /* the slots */
    size_t slots;
};

index_shim_t *index_shim_new(int small, size_t slots, const uintptr_t *streams, size_t n)
{
    index_shim_t *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return NULL;
    ga_pool_blockpool_init(&x->bp, small != 0);
    x->segs = calloc(n, sizeof(*x->segs));
    x->blocks = calloc(slots, sizeof(*x->blocks));
    x->n_streams = n;
    x->slots = slots;
    if (x->segs == NULL || x->blocks == NULL) {
        index_shim_delete(x);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (ga_pool_blockpool_prepare(&x->bp, streams[i]) == NULL) {
            index_shim_delete(x);
            return NULL;
        }
        x->segs[i].stream = streams[i];
        x->segs[i].pool = &x->bp;
    }
    for (size_t i = 0; i < n; i++)
        x->segs[i].set = ga_pool_blockpool_set_of(&x->bp, streams[i]);
    return x;
}

void index_shim_delete(index_shim_t *x)
{
    if (x == NULL)
        return;
    ga_pool_blockpool_destroy(&x->bp);
    free(x->segs);
    free(x->blocks);
    free(x);
}

static long slot_of(const index_shim_t *x, const ga_block_t *b)
{
    return b != NULL ? (long)(b - x->blocks) : -1;
}

void index_shim_insert(index_shim_t *x, size_t i, uintptr_t stream, size_t size, uintptr_t addr)
{
    ga_segment_t *seg = NULL;
    for (size_t s = 0; s < x->n_streams; s++)
        if (x->segs[s].stream == stream)
            seg = &x->segs[s];
    if (seg == NULL)
        abort();
    ga_block_t *b = &x->blocks[i];
    *b = (ga_block_t){.addr = addr, .size = size, .stream = stream, .pool = &x->bp, .seg = seg, .mapped = true};
    ga_pool_blockpool_insert(&x->bp, b);
}

void index_shim_remove(index_shim_t *x, size_t i)
{
    ga_pool_blockpool_remove(&x->bp, &x->blocks[i]);
}

long index_shim_lower_bound(index_shim_t *x, uintptr_t stream, size_t size)
{
    return slot_of(x, ga_pool_blockpool_lower_bound(&x->bp, stream, size));
}

long index_shim_fit(index_shim_t *x, uintptr_t stream, size_t size)
{
    return slot_of(x, ga_pool_blockpool_fit(ga_pool_blockpool_prepare(&x->bp, stream), size));
}

long index_shim_fit_rounded(index_shim_t *x, uintptr_t stream, size_t size)
{
    return slot_of(x, ga_pool_blockpool_fit_rounded(ga_pool_blockpool_prepare(&x->bp, stream), size));
}

long index_shim_first(index_shim_t *x)
{
    return slot_of(x, ga_pool_blockpool_first(&x->bp));
}

long index_shim_last(index_shim_t *x)
{
    return slot_of(x, ga_pool_blockpool_last(&x->bp));
}

long index_shim_next(index_shim_t *x, size_t i)
{
    return slot_of(x, ga_pool_blockpool_next(&x->blocks[i]));
}

long index_shim_prev(index_shim_t *x, size_t i)
{
    return slot_of(x, ga_pool_blockpool_prev(&x->blocks[i]));
}

int index_shim_ok(index_shim_t *x)
{
    return ga_pool_blockpool_trees_ok(&x->bp);
}

size_t index_shim_count(index_shim_t *x)
{
    return ga_pool_blockpool_count(&x->bp);
}

unsigned index_shim_bin(size_t size)
{
    return ga_sizeidx_bin(size);
}

unsigned index_shim_key_bin(size_t size)
{
    return ga_sizeidx_key_bin(size);
}

unsigned index_shim_bins(void)
{
    return GA_SIZEIDX_BINS;
}

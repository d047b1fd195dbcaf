/*
 * inspect.c: galloc_inspect.h on the caching pool, the locked path's part:
 * the size of a live block (the stripe path tries first without the
 * allocator's lock: ga_pool_stripe_usable_size, stripe_path.c) and the walk
 * over segments and blocks, the pool's one walk (walk.h) as the snapshot
 * writer sees it, less the sleeping tags' segments (they hold no device
 * memory, and reserved_bytes does not count them).
 *
 * Memory: the walk's block list is a scratch array grown on this cold path
 * and freed before it returns.
 */
#include <stdlib.h>

#include "pool/ops.h"
#include "pool/stripe.h"
#include "pool/tags.h"
#include "pool/walk.h"
#include "util/grow.h"

galloc_status_t ga_pool_usable_size(void *impl, const void *ptr, size_t *size)
{
    ga_pool_t *p = impl;
    const ga_block_t *b = ga_pool_allocated_block(p, (uintptr_t)ptr);
    if (b == NULL) /* a sleeping tag's block is out of the pointer map, still allocated */
        b = ga_pool_held_block(p, (uintptr_t)ptr);
    if (b == NULL)
        return ga_fail(p->err, GALLOC_E_NOT_OWNED,
                       "usable_size: invalid device pointer: %p (not allocated by this allocator, "
                       "already freed, or not the start of a block)",
                       ptr);
    *size = b->size;
    return GALLOC_OK;
}

/* A walk under way. */
typedef struct visit {
    ga_pool_t *p;                /* the pool walked (its err sink) */
    galloc_segment_visit_fn fn;  /* the caller's */
    void *ctx;                   /* its argument */
    galloc_block_view_t *blocks; /* scratch: the run's blocks */
    size_t cap;                  /* of blocks */
    galloc_status_t st;          /* GALLOC_E_NOMEM when the walk stopped for it */
} visit_t;

static int visit_run(void *ctx, const ga_pool_run_t *run)
{
    visit_t *v = ctx;
    while (v->cap < run->n_blocks) {
        galloc_block_view_t *t = ga_grow(v->blocks, &v->cap, v->cap, sizeof(*t), 64);
        if (t == NULL) {
            v->st = ga_fail(v->p->err, GALLOC_E_NOMEM, "segments_visit: out of host memory for a list of %zu blocks",
                            run->n_blocks);
            return 1;
        }
        v->blocks = t;
    }
    size_t n = 0;
    for (const ga_block_t *b = run->first; b != run->end; b = b->next)
        v->blocks[n++] =
            (galloc_block_view_t){.address = b->addr,
                                  .size = b->size,
                                  .requested = ga_pool_block_state(b) == GALLOC_BLOCK_FREE ? 0 : b->requested,
                                  .state = ga_pool_block_state(b)};
    const ga_segment_t *seg = run->seg;
    const galloc_segment_view_t view = {
        .struct_size = sizeof(view),
        .address = run->addr,
        .size = run->size,
        .stream = seg->stream,
        .small = seg->pool->is_small,
        .expandable = seg->expandable,
        .pool = ga_pool_segment_pool_id(seg),
        .blocks = v->blocks,
        .n_blocks = n,
    };
    return v->fn(v->ctx, &view) != 0;
}

galloc_status_t ga_pool_segments_visit(void *impl, galloc_segment_visit_fn fn, void *ctx)
{
    visit_t v = {.p = impl, .fn = fn, .ctx = ctx, .st = GALLOC_OK};
    (void)ga_pool_walk(v.p, GA_WALK_AWAKE_ONLY, visit_run, &v);
    free(v.blocks);
    return v.st;
}

/*
 * walk.c: the walk over segments and their mapped runs (walk.h). A plain
 * segment's blocks are all mapped, so it is one run; an expandable segment
 * has one run per contiguous mapped range, split at its unmapped blocks. A
 * sleeping tag's segment keeps its blocks' `mapped` flags as they were
 * before the sleep (sleep_int.h), so shown as before, it has the runs it had.
 */
#include "pool/walk.h"

int ga_pool_walk(const ga_pool_t *p, ga_pool_walk_sleep_t sleeping, ga_pool_run_fn fn, void *ctx)
{
    for (const ga_segment_t *seg = p->segments; seg != NULL; seg = seg->next) {
        if (seg->slept != NULL && sleeping == GA_WALK_AWAKE_ONLY)
            continue;
        const ga_block_t *b = seg->head;
        while (b != NULL) {
            if (!b->mapped) {
                b = b->next;
                continue;
            }
            ga_pool_run_t run = {.seg = seg, .first = b, .addr = b->addr};
            for (; b != NULL && b->mapped; b = b->next) {
                run.size += b->size;
                run.n_blocks++;
            }
            run.end = b;
            int r = fn(ctx, &run);
            if (r != 0)
                return r;
        }
    }
    return 0;
}

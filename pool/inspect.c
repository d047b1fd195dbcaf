/*
 * inspect.c: galloc_inspect.h on the caching pool, the locked path's part:
 * the size of a live block (the stripe path tries first without the
 * allocator's lock: ga_pool_stripe_usable_size, stripe_path.c) and the walk
 * over segments and blocks (walk.h's runs, as snapshots list them).
 */
#include "pool/ops.h"
#include "pool/stripe.h"
#include "pool/tags.h"

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

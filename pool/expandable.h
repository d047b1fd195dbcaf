/*
 * expandable.h: expandable segments (expandable.c, expandable_segments:True):
 * one virtual range per (stream, block pool) mapped page by page.
 *
 * Locking: the locked path.
 */
#ifndef GA_POOL_EXPANDABLE_H
#define GA_POOL_EXPANDABLE_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's try_allocate_expandable_block: map pages for ap's rounded size
 * at the end of the stream's expandable segment (a new one if none). */
galloc_status_t ga_pool_try_allocate_expandable(ga_pool_t *p, ga_alloc_params_t *ap);
/* Unmap the whole pages inside a free mapped expandable block; releases the
 * segment's VA range when nothing of it stays mapped. */
void ga_pool_unmap_block(ga_pool_t *p, ga_block_t *b);
/* Give an expandable segment back whole (destroy): unmap every mapped page, free the VA. */
void ga_pool_expandable_teardown(ga_pool_t *p, ga_segment_t *seg);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_EXPANDABLE_H */

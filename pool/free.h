/*
 * free.h: returning blocks and the segment list (free.c): PyTorch's
 * free_block and try_merge_blocks, a new segment's first block, and the list
 * of live segments.
 *
 * Locking: the locked path (the stripe path's free is in stripe_path.c).
 */
#ifndef GA_POOL_FREE_H
#define GA_POOL_FREE_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PyTorch's free_block: merge b with its free neighbours, back into its set. */
void ga_pool_free_block(ga_pool_t *p, ga_block_t *b);
/* free of an allocated block out of the pointer map already (a sleeping
 * tag's block, tags.c): the counters drop, the block returns to its pool
 * unless it waits on events. */
void ga_pool_free_held(ga_pool_t *p, ga_block_t *b);
/* Absorb src into dst if src is a free neighbour in the same mapped state;
 * returns the bytes absorbed (0 if not merged). */
size_t ga_pool_try_merge(ga_pool_t *p, ga_block_t *dst, ga_block_t *src);
/* A new segment's one block (free, covering it whole), linked into the
 * segment list; seg's base, size, stream, pool and kind are set by the caller. */
void ga_pool_segment_init(ga_pool_t *p, ga_segment_t *seg, ga_block_t *b, uintptr_t addr, size_t size, bool mapped);
/* Take a segment out of the list of live segments (it goes back to the device). */
void ga_pool_unlink_segment(ga_pool_t *p, ga_segment_t *seg);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_FREE_H */

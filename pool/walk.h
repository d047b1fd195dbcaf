/*
 * walk.h: the one walk over the pool's memory as PyTorch's snapshot lists it
 * (walk.c; DeviceCachingAllocator::snapshot in
 * c10/cuda/CUDACachingAllocator.cpp): every segment, and for an expandable
 * segment every contiguous mapped range (a "run": unmapped address space is
 * not memory, so PyTorch reports each mapped range as a segment of its own).
 * A plain segment is one run. The snapshot writer (snapshot.c), the public
 * walk galloc_segments_visit (inspect.c) and the fragmentation figures
 * (check.c) all see the pool through it, so they cannot disagree on where a
 * segment starts or what state a block is in.
 *
 * Locking: the locked path (the walk reads every segment and block).
 */
#ifndef GA_POOL_WALK_H
#define GA_POOL_WALK_H

#include <galloc/galloc_inspect.h>
#include <galloc/galloc_mempool.h>
#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One run: a maximal range of mapped blocks of one segment, in address order. */
typedef struct ga_pool_run {
    const ga_segment_t *seg; /* the segment it lies in */
    const ga_block_t *first; /* its first block */
    const ga_block_t *end;   /* the block after its last (unmapped, or NULL at the segment's end) */
    uintptr_t addr;          /* first->addr */
    size_t size;             /* bytes: the sum of its blocks' sizes */
    size_t n_blocks;         /* blocks from first up to end */
} ga_pool_run_t;

/* A walk's callback: 0 to go on, anything else stops the walk. */
typedef int (*ga_pool_run_fn)(void *ctx, const ga_pool_run_t *run);

/* Which segments of sleeping tags a walk shows. */
typedef enum ga_pool_walk_sleep {
    GA_WALK_AWAKE_ONLY, /* skip them: they hold no device memory (visit, fragmentation) */
    GA_WALK_AS_BEFORE   /* show them as before the sleep (snapshots: the viewer rebuilds past states) */
} ga_pool_walk_sleep_t;

/*
 * ga_pool_walk: fn for every run of every live segment, most recent segment
 * first, runs in address order. Returns the first nonzero value fn returned
 * (the walk stops there), or 0 when every run was seen.
 */
int ga_pool_walk(const ga_pool_t *p, ga_pool_walk_sleep_t sleeping, ga_pool_run_fn fn, void *ctx);

/* A block's state in a walk, PyTorch's snapshot's (its "state" strings). */
static inline galloc_block_state_t ga_pool_block_state(const ga_block_t *b)
{
    if (b->allocated)
        return GALLOC_BLOCK_ALLOCATED;
    return b->event_count > 0 ? GALLOC_BLOCK_PENDING_FREE : GALLOC_BLOCK_FREE;
}

/* A segment's pool id, as snapshots report it (segment_pool_id): the private
 * pool's (MemPool or graph), {0, 0} for the default pools. */
static inline galloc_mempool_id_t ga_pool_segment_pool_id(const ga_segment_t *seg)
{
    const ga_private_pool_t *owner = seg->pool->owner;
    return owner != NULL ? (galloc_mempool_id_t){owner->id_a, owner->id_b} : (galloc_mempool_id_t){0, 0};
}

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_WALK_H */

/*
 * free.c: returning a block to its pool, merging it with free neighbours
 * (PyTorch's free, free_block and try_merge_blocks in
 * c10/cuda/CUDACachingAllocator.cpp). Segments are never released here:
 * reserved memory only falls through empty_cache, the OOM path or GC.
 *
 * Stats: a free only takes away from allocation, active and the byte counts
 * (no peak can move); inactive_split's change is signed (split.h).
 */
#include "pool/capture.h"
#include "pool/free.h"
#include "pool/ipc.h"
#include "pool/split.h"
#include "pool/ops.h"
#include "pool/private.h"
#include "pool/streams.h"
#include "pool/stripe.h"
#include "pool/tags.h"
#include "stats/stats.h"

static void link_segment(ga_pool_t *p, ga_segment_t *seg)
{
    seg->prev = NULL;
    seg->next = p->segments;
    if (p->segments != NULL)
        p->segments->prev = seg;
    p->segments = seg;
}

void ga_pool_segment_init(ga_pool_t *p, ga_segment_t *seg, ga_block_t *b, uintptr_t addr, size_t size, bool mapped)
{
    seg->head = b;
    seg->set = ga_pool_blockpool_set_of(seg->pool, seg->stream); /* prepared by malloc */
    seg->stack_id = 0;
    link_segment(p, seg);
    *b = (ga_block_t){
        .addr = addr, .size = size, .stream = seg->stream, .pool = seg->pool, .seg = seg, .mapped = mapped};
}

void ga_pool_unlink_segment(ga_pool_t *p, ga_segment_t *seg)
{
    if (seg->prev != NULL)
        seg->prev->next = seg->next;
    else
        p->segments = seg->next;
    if (seg->next != NULL)
        seg->next->prev = seg->prev;
}

size_t ga_pool_try_merge(ga_pool_t *p, ga_block_t *dst, ga_block_t *src)
{
    return ga_pool_merge(ga_pool_records_of(p, dst->stream), dst, src);
}

/* PyTorch's free_block: merge with free neighbours, back into the free set;
 * inactive_split's change is worked out before the merges (split.h). */
GA_HOT void free_block(ga_pool_t *p, ga_block_t *b)
{
    int64_t pid[2];
    if (ga_trace_recording(&p->trace)) /* the mempool id is not worked out while recording is off */
        ga_trace_record(&p->trace, GA_TRACE_FREE_COMPLETED, b->addr, b->requested, b->stream,
                        ga_pool_id_of(b->pool, pid), b->stack_id);
    b->stack_id = 0;
    size_t original_size = b->size;
    size_t requested = b->requested;
    ga_blockpool_t *bp = b->pool;
    galloc_stat_pool_t sp = bp->stat;
    ga_split_change_t c = ga_pool_free_split_change(b);

    ga_records_t *r = ga_pool_records_of(p, b->stream);
    (void)ga_pool_merge(r, b, b->prev);
    (void)ga_pool_merge(r, b, b->next);
    ga_pool_blockpool_insert(bp, b);
    ga_pool_change_rows(p, b->stream, sp,
                        (const int64_t[GA_ESC_ROWS]){[GA_ESC_ACTIVE] = -1,
                                                     [GA_ESC_ACTIVE_BYTES] = -(int64_t)original_size,
                                                     [GA_ESC_REQUESTED_BYTES] = -(int64_t)requested,
                                                     [GA_ESC_INACTIVE_SPLIT] = c.count,
                                                     [GA_ESC_INACTIVE_SPLIT_BYTES] = c.bytes});
    /* b->requested stays: PyTorch's free_block keeps Block::requested_size,
     * and its snapshot writes it for the inactive block (the merged one's,
     * as try_merge_blocks keeps dst's); no count reads it while b is free. */
}

void ga_pool_free_block(ga_pool_t *p, ga_block_t *b)
{
    free_block(p, b);
}

/* free after the pointer-map removal: the counters drop, the block returns
 * to its pool unless it waits on events. */
GA_HOT void free_allocated(ga_pool_t *p, ga_block_t *b)
{
    b->allocated = false;
    int64_t pid[2];
    uint32_t free_stack = 0;
    if (ga_trace_wants_stack(&p->trace, true)) {
        free_stack = ga_trace_capture(&p->trace, 1);
        /* A replay's free that completes at once does so under the free's
         * token, as PyTorch's free_block(block, context) does, so that its
         * frames are the recorded free_completed's; galloc's own stacks keep
         * the block's, and a free waiting on events completes under it. */
        if (free_stack != 0 && b->event_count == 0 && ga_trace_tokens(&p->trace))
            b->stack_id = free_stack;
    }
    if (ga_trace_recording(&p->trace))
        ga_trace_record(&p->trace, GA_TRACE_FREE_REQUESTED, b->addr, b->requested, b->stream,
                        ga_pool_id_of(b->pool, pid), free_stack ? free_stack : b->stack_id);
    galloc_stat_pool_t sp = b->pool->stat;
    ga_pool_change_rows(
        p, b->stream, sp,
        (const int64_t[GA_ESC_ROWS]){[GA_ESC_ALLOCATION] = -1, [GA_ESC_ALLOCATED_BYTES] = -(int64_t)b->size});
    if (b->size >= p->conf.max_split_size)
        ga_stat_decrease(&p->stats.oversize_allocations, 1);
    /* With events pending the block stays active until process_events sees them done. */
    if (b->event_count == 0)
        free_block(p, b);
}

galloc_status_t ga_pool_free(void *impl, void *ptr)
{
    ga_pool_t *p = impl;
    if (ptr == NULL)
        return GALLOC_OK;
    unsigned stripe;
    ga_ptr_entry_t *e = ga_pool_ptr_find(p, (uintptr_t)ptr, &stripe);
    if (e == NULL) /* or a sleeping tag's block */
        return ga_pool_free_missing(p, ptr);
    ga_block_t *b = e->block;
    if (__builtin_expect(b->shared, 0)) /* a reader in another process may hold it (ipc.h) */
        return ga_pool_ipc_free(p, b);
    /* Used on other streams: record their events (or defer them during a
     * route) first, the only step that can fail; it leaves the pointer map,
     * and so e, as they are. */
    if (b->uses != NULL) {
        galloc_status_t st = ga_pool_free_uses(p, b);
        if (st != GALLOC_OK)
            return st;
    }
    ga_addrmap_remove(&p->stripes[stripe].ptrs, e);
    p->touched_mask |= 1u << stripe; /* it gets headroom at the next grant (stripe.h) */
    free_allocated(p, b);
    return GALLOC_OK;
}

void ga_pool_free_held(ga_pool_t *p, ga_block_t *b)
{
    free_allocated(p, b);
}

/*
 * release.c: giving cached segments back to the device. Three paths, as in
 * PyTorch's c10/cuda/CUDACachingAllocator.cpp:
 *   release_available_cached_blocks: free oversize cached blocks to make room
 *     for one request (only when max_split_size_mb is set);
 *   release_cached_blocks: free every whole cached segment (empty_cache and
 *     the last retry before OOM), after synchronizing outstanding events;
 *   garbage_collect_cached_blocks: free the oldest whole cached segments of
 *     the large pool until reserved memory is under the GC threshold.
 */
#include <string.h>

#include "pool/blockpool.h"
#include "pool/expandable.h"
#include "pool/free.h"
#include "pool/hooks.h"
#include "pool/private.h"
#include "pool/records.h"
#include "pool/release.h"
#include "pool/streams.h"
#include "pool/tags.h"
#include "stats/stats.h"

void ga_pool_note_refused(ga_pool_t *p, const char *what, uintptr_t addr, size_t bytes)
{
    if (p->refused_frees++ > 0)
        return; /* the first refusal says why; the count says how many */
    char why[256];
    ga_backend_error_string(p->backend, why, sizeof(why));
    (void)ga_fail(p->err, GALLOC_E_DEVICE, "the device refused to %s %zu bytes at %#lx: %s", what, bytes,
                  (unsigned long)addr, why[0] ? why : "no reason given");
}

/* PyTorch's release_block: one whole free segment back to the device. If the
 * device refuses (PyTorch throws), the segment stays cached: nothing is lost
 * or miscounted. A full flush reports it (release_free_segment); the
 * GC and the oversize release just go on, as their callers will retry. */
static void release_free_segment(ga_pool_t *p, ga_block_t *b)
{
    uintptr_t base = b->seg->base;
    size_t size = b->seg->size;
    if (!ga_pool_release_block(p, b))
        ga_pool_note_refused(p, "free the segment of", base, size);
}

bool ga_pool_release_block(ga_pool_t *p, ga_block_t *b)
{
    ga_segment_t *seg = b->seg;
    size_t bytes = seg->vmm ? seg->page : seg->size; /* what the hooks were told: a VMM segment's mapping */
    if (ga_pool_hooked(p))
        ga_pool_hook_disappear(p, GALLOC_HOOK_SEGMENT_FREE, seg->base, bytes, seg->stream, b->pool, 0);
    if (seg->vmm ? !ga_pool_vmm_free(p, seg)
                 : ga_backend_segment_free(p->backend, seg->base, seg->size, seg->stream) != GALLOC_OK) {
        if (ga_pool_hooked(p))
            ga_pool_hook_restored(p, GALLOC_HOOK_SEGMENT_ALLOC, seg->base, bytes, seg->stream, b->pool);
        return false;
    }
    p->stats.num_device_free++;
    int64_t pid[2];
    ga_trace_record(&p->trace, GA_TRACE_SEGMENT_FREE, seg->base, seg->size, seg->stream, ga_pool_id_of(b->pool, pid),
                    seg->stack_id);
    if (b->pool->owner != NULL)
        b->pool->owner->segments--;
    p->total_allocated_memory -= seg->size;
    ga_stat_update(p->stats.segment, b->pool->stat, -1);
    ga_stat_update(p->stats.reserved_bytes, b->pool->stat, -(int64_t)seg->size);
    if (seg->size >= p->conf.max_split_size)
        ga_stat_decrease(&p->stats.oversize_segments, 1);
    ga_pool_blockpool_remove(b->pool, b);
    ga_pool_unlink_segment(p, seg);
    ga_pool_records_put_block(ga_pool_records_of(p, seg->stream), b);
    ga_pool_records_put_segment(ga_pool_records_of(p, seg->stream), seg);
    return true;
}

bool ga_pool_release_available_cached_blocks(ga_pool_t *p, const ga_alloc_params_t *ap)
{
    uint64_t mss = p->conf.max_split_size;
    if (mss == UINT64_MAX)
        return false;
    size_t key = ap->size < mss ? (size_t)mss : ap->size;
    ga_blockpool_t *bp = ap->pool;
    ga_block_t *b = ga_pool_blockpool_lower_bound(bp, ap->stream, key);
    if (b != NULL && b->stream == ap->stream) {
        /* A piece of a split segment cannot go back alone; PyTorch never expects
         * one here (it would hand it to cudaFree), galloc declines instead and
         * lets the full flush run. */
        if (ga_block_is_split(b) || b->seg->expandable)
            return false;
        return ga_pool_release_block(p, b);
    }
    /* No single block is large enough: free oversize blocks of this stream,
     * largest first, until enough is released. */
    ga_block_t *cur = b != NULL ? ga_pool_blockpool_prev(b) : ga_pool_blockpool_last(bp);
    size_t released = 0;
    while (cur != NULL && released < key && cur->size >= mss && cur->stream == ap->stream) {
        ga_block_t *prev = ga_pool_blockpool_prev(cur);
        /* Oversize blocks are whole segments except in one corner case (an odd
         * max_split_size_mb can split an oversize segment); PyTorch would hand
         * such a piece to cudaFree, galloc skips it. */
        size_t size = cur->size;
        if (!ga_block_is_split(cur) && !cur->seg->expandable && ga_pool_release_block(p, cur))
            released += size;
        cur = prev;
    }
    return released >= key;
}

/* PyTorch's release_blocks: every whole free segment of one block pool, in
 * free-set order; free expandable blocks are gathered first (unmapping
 * changes the free set) and then unmapped page by page. */
void ga_pool_release_blocks(ga_pool_t *p, ga_blockpool_t *bp)
{
    ga_block_t *to_unmap = NULL; /* linked through b->link, which free blocks do not use */
    ga_block_t *b = ga_pool_blockpool_first(bp);
    while (b != NULL) {
        ga_block_t *next = ga_pool_blockpool_next(b);
        if (b->seg->slept != NULL) {
            /* a sleeping tag's: left alone, wake maps it again */
        } else if (b->seg->expandable) {
            b->link = to_unmap;
            to_unmap = b;
        } else if (!ga_block_is_split(b)) {
            release_free_segment(p, b);
        }
        b = next;
    }
    /* The list is in reverse set order; PyTorch unmaps in set order. */
    ga_block_t *ordered = NULL;
    while (to_unmap != NULL) {
        ga_block_t *n = to_unmap->link;
        to_unmap->link = ordered;
        ordered = to_unmap;
        to_unmap = n;
    }
    while (ordered != NULL) {
        ga_block_t *n = ordered->link;
        ordered->link = NULL;
        ga_pool_unmap_block(p, ordered);
        ordered = n;
    }
}

galloc_status_t ga_pool_release_cached_blocks(ga_pool_t *p)
{
    /* Blocks waiting on events come back first (counted even when none wait).
     * If a wait fails PyTorch has thrown before releasing anything; so does galloc. */
    galloc_status_t st = ga_pool_synchronize_and_free_events(p);
    if (st != GALLOC_OK)
        return st;
    p->refused_frees = 0;
    ga_pool_release_blocks(p, &p->large);
    ga_pool_release_blocks(p, &p->small);
    ga_pool_release_private_pools(p);
    if (p->refused_frees > 1) {
        char first[GALLOC_ERROR_MAX];
        memcpy(first, p->err->msg, sizeof(first));
        return ga_fail(p->err, GALLOC_E_DEVICE, "%.900s (and %zu more refusals)", first, p->refused_frees - 1);
    }
    return p->refused_frees == 1 ? GALLOC_E_DEVICE : GALLOC_OK;
}

static int64_t gc_age(const ga_block_t *b)
{
    return b->pool->get_free_blocks_call_count - b->gc_count_base;
}

void ga_pool_garbage_collect(ga_pool_t *p)
{
    size_t threshold = (size_t)(p->conf.garbage_collection_threshold * (double)p->allowed_memory_maximum);
    if (p->total_allocated_memory <= threshold)
        return;
    size_t target = p->total_allocated_memory - threshold;
    size_t reclaimed = 0;
    double total_age = 0.0;
    size_t freeable = 0;
    for (ga_block_t *b = ga_pool_blockpool_first(&p->large); b != NULL; b = ga_pool_blockpool_next(b)) {
        if (!ga_block_is_split(b)) {
            total_age += (double)gc_age(b);
            freeable++;
        }
    }
    if (freeable == 0)
        return;
    /* Free whole segments whose age is at least the average, recomputing the
     * average after each full pass, until enough is reclaimed. */
    bool freed = true;
    while (reclaimed < target && freed && freeable > 0) {
        double age_threshold = total_age / (double)freeable;
        freed = false;
        ga_block_t *b = ga_pool_blockpool_first(&p->large);
        while (b != NULL) {
            ga_block_t *next = ga_pool_blockpool_next(b);
            if (!ga_block_is_split(b) && !b->seg->expandable && (double)gc_age(b) >= age_threshold) {
                freed = true;
                reclaimed += b->size;
                total_age -= (double)gc_age(b);
                freeable--;
                (void)ga_pool_release_block(p, b); /* a refusal keeps it cached; PyTorch would throw */
            }
            b = next;
        }
    }
}

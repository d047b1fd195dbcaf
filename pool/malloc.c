/*
 * malloc.c: serving a request, as PyTorch's DeviceCachingAllocator::malloc does
 * (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp):
 *   round the size, pick the pool, best-fit search in the pool's free set;
 *   on a miss: garbage-collect (if a fraction and a threshold are set), ask the
 *   device for a new segment (unless throw_on_cudamalloc_oom refuses it first:
 *   reject.c, no retries), else take a free block of a use_on_oom MemPool
 *   (private.c), else free oversize cached blocks and retry, else
 *   free every cached segment and retry once more (num_alloc_retries), else OOM;
 *   then split the block if the remainder is worth keeping and hand out the front.
 *
 * Invariant kept for galloc's "a failed call changes nothing" rule: every
 * record and map slot the call may need is reserved before any state changes.
 */
#include "pool/capture.h"
#include "pool/expandable.h"
#include "pool/free.h"
#include "pool/hooks.h"
#include "pool/ipc.h"
#include "pool/split.h"
#include "pool/oom.h"
#include "pool/ops.h"
#include "pool/private.h"
#include "pool/reject.h"
#include "pool/release.h"
#include "pool/round.h"
#include "pool/streams.h"
#include "pool/stripe.h"
#include "pool/tags.h"
#include "stats/stats.h"

/* PyTorch's alloc_block: a new segment from the device. Returns GALLOC_OK,
 * GALLOC_E_OOM (the caller may free cache and retry) or a hard failure. */
static galloc_status_t alloc_block(ga_pool_t *p, ga_alloc_params_t *ap, bool is_retry)
{
    size_t size = ap->alloc_size;
    if (is_retry)
        p->stats.num_alloc_retries++;
    /* The fraction caps reserved memory, checked before the device is asked. */
    if (p->set_fraction && p->total_allocated_memory + size > p->allowed_memory_maximum)
        return GALLOC_E_OOM;
    if (ga_pool_reject_check(p, ap)) /* throw_on_cudamalloc_oom, after the cap as in PyTorch */
        return GALLOC_E_OOM;
    /* Private pools never use expandable segments (PyTorch's checkpointing of
     * private pools does not support them), except a sleep tag's: its memory
     * must come through virtual memory either way (sleep_int.h). */
    bool tagged = ga_pool_is_tagged(ap->pool);
    if (p->conf.expandable_segments && (ap->pool->owner == NULL || tagged))
        return ga_pool_try_allocate_expandable(p, ap); /* maps pages for the rounded size, not alloc_size */
    uintptr_t addr = 0;
    size_t span = 0;
    galloc_status_t st = tagged ? ga_pool_vmm_alloc(p, size, &addr, &span)
                                : ga_backend_segment_alloc(p->backend, size, ap->stream, &addr);
    if (st != GALLOC_OK)
        return st;
    /* A hook that refuses the segment fails the call: it goes straight back. */
    if (ga_pool_hooked(p) && (st = ga_pool_hook_appear(p, GALLOC_HOOK_SEGMENT_ALLOC, addr, tagged ? span : size,
                                                       ap->stream, ap->pool)) != GALLOC_OK) {
        if (tagged) {
            (void)ga_backend_unmap(p->backend, addr, span);
            (void)ga_backend_va_release(p->backend, addr, span);
        } else {
            (void)ga_backend_segment_free(p->backend, addr, size, ap->stream);
        }
        return st;
    }

    ga_records_t *r = ga_pool_records_of(p, ap->stream);
    ga_segment_t *seg = ga_pool_records_get_segment(r);
    ga_block_t *b = ga_pool_records_get_block(r);
    /* Reserved by ga_pool_malloc before anything changed. */
    seg->base = addr;
    seg->size = size;
    seg->expandable = false;
    seg->vmm = tagged;
    seg->page = span; /* a VMM segment's mapped bytes (0 for a plain one) */
    seg->slept = NULL;
    seg->stream = ap->stream;
    seg->pool = ap->pool;
    ga_pool_segment_init(p, seg, b, addr, size, true);

    if (ap->pool->owner != NULL)
        ap->pool->owner->segments++;
    p->total_allocated_memory += size;
    ga_stat_add(p->stats.segment, ap->pool->stat, 1);
    ga_stat_add(p->stats.reserved_bytes, ap->pool->stat, (int64_t)size);
    if (size >= p->conf.max_split_size)
        ga_stat_increase(&p->stats.oversize_segments, 1);
    p->stats.num_device_alloc++;
    int64_t pid[2];
    seg->stack_id = ap->stack_id;
    ga_trace_record(&p->trace, GA_TRACE_SEGMENT_ALLOC, addr, size, ap->stream, ga_pool_id_of(ap->pool, pid),
                    ap->stack_id);
    ap->block = b; /* goes straight to the split step, never into the free set */
    return GALLOC_OK;
}

/* PyTorch's alloc_found_block: split off the front if worthwhile, mark
 * allocated, count (inactive_split's change from split.h, the rest through
 * the stripe's share, ga_pool_change_rows). */
static void alloc_found_block(ga_pool_t *p, ga_alloc_params_t *ap)
{
    ga_block_t *b = ap->block;
    galloc_stat_pool_t sp = ap->pool->stat;
    bool split = ga_pool_should_split(p, b, ap->size);
    ga_split_change_t c = ga_pool_alloc_split_change(b, ap->size, split);
    if (split) /* the old record keeps the tail (the free remainder); a new record is the front */
        b = ga_pool_split_front(ga_pool_records_of(p, ap->stream), ap->pool, b, ap->size);

    b->allocated = true;
    b->requested = ap->orig_size;
    b->stack_id = ap->stack_id;
    int64_t pid[2];
    if (ga_trace_recording(&p->trace)) /* the mempool id is not worked out while recording is off */
        ga_trace_record(&p->trace, GA_TRACE_ALLOC, b->addr, ap->orig_size, b->stream, ga_pool_id_of(b->pool, pid),
                        ap->stack_id);
    ga_pool_ptr_insert(p, b);
    if (b->size >= p->conf.max_split_size)
        ga_stat_increase(&p->stats.oversize_allocations, 1);
    ga_pool_change_rows(p, b->stream, sp,
                        (const int64_t[GA_ESC_ROWS]){[GA_ESC_ALLOCATION] = 1,
                                                     [GA_ESC_ALLOCATED_BYTES] = (int64_t)b->size,
                                                     [GA_ESC_ACTIVE] = 1,
                                                     [GA_ESC_ACTIVE_BYTES] = (int64_t)b->size,
                                                     [GA_ESC_REQUESTED_BYTES] = (int64_t)ap->orig_size,
                                                     [GA_ESC_INACTIVE_SPLIT] = c.count,
                                                     [GA_ESC_INACTIVE_SPLIT_BYTES] = c.bytes});
    ap->block = b;
}

/* Everything a malloc may consume, from the stream's stripe: a segment
 * record, its first block, a split front, and one pointer-map slot. The
 * stripe gets headroom at the next grant, and this thread's frees look there
 * first (stripe.h). */
static galloc_status_t reserve(ga_pool_t *p, galloc_stream_t stream)
{
    unsigned stripe = ga_stripe_of(stream);
    if (ga_pool_records_reserve(&p->stripes[stripe].records, 2, 1) != GALLOC_OK ||
        ga_addrmap_reserve(&p->stripes[stripe].ptrs, 1) != GALLOC_OK)
        return GALLOC_E_NOMEM;
    p->touched_mask |= 1u << stripe;
    ga_pool_hint_set(p, stripe);
    return GALLOC_OK;
}

galloc_status_t ga_pool_malloc(void *impl, size_t size, galloc_stream_t stream, void **out)
{
    ga_pool_t *p = impl;
    *out = NULL;
    if (size == 0)
        return GALLOC_OK; /* PyTorch returns a null pointer and counts nothing */
    if ((uint64_t)size >= GA_ONE_EXABYTE)
        return ga_fail(p->err, GALLOC_E_OOM, "%s out of memory. Tried to allocate more than 1EB memory.",
                       ga_backend_vendor(p->backend));

    /* Blocks freed on other streams whose work has completed come back first
     * (not while routing to a private pool: PyTorch skips it during captures,
     * and may instead reuse what the capture graph shows is done). */
    if (p->n_routes == 0) {
        if (p->pending_head != NULL || p->deferred != NULL) {
            galloc_status_t st = ga_pool_process_events(p);
            if (st != GALLOC_OK)
                return st;
        }
    } else if (p->deferred != NULL && p->conf.graph_capture_record_stream_reuse) {
        ga_pool_capture_reuse(p, stream);
    }

    if (reserve(p, stream) != GALLOC_OK)
        return ga_fail(p->err, GALLOC_E_NOMEM, "out of host memory for allocator bookkeeping");

    ga_alloc_params_t ap;
    ap.orig_size = size;
    ap.size = ga_pool_round(p, size);
    ap.pool = ga_pool_get_pool(p, ap.size, stream);
    ap.set = ga_pool_blockpool_prepare(ap.pool, stream);
    if (ap.set == NULL)
        return ga_pool_prepare_failed(p, ap.pool); /* or a sleeping tag's pool */
    ap.stream = stream;
    ap.block = NULL;
    ap.rejected = false;
    /* PyTorch gathers the context once per malloc (maybeGatherContext(STATE)). */
    ap.stack_id = ga_trace_wants_stack(&p->trace, false) ? ga_trace_capture(&p->trace, 1) : 0;

    bool found = ga_pool_get_free_block(p, &ap);
    /* Blocks whose readers in other processes are done, before the device is
     * asked (PyTorch's "cuda_ipc_collect" free-memory callback). */
    if (!found && p->ipc != NULL && ga_pool_ipc_reclaim(p) > 0)
        found = ga_pool_get_free_block(p, &ap);
    if (!found) {
        ap.alloc_size = ga_allocation_size(&p->conf, ap.size); /* a cache hit needs no segment size */
        if (p->set_fraction && p->conf.garbage_collection_threshold > 0.0)
            ga_pool_garbage_collect(p);
        galloc_status_t st = alloc_block(p, &ap, false);
        if (ap.rejected) /* throw_on_cudamalloc_oom skips the retry chain */
            return ga_pool_rejected(p, &ap);
        /* MemPool use_on_oom, before any cache is freed (PyTorch main's order). */
        if (st == GALLOC_E_OOM && ap.pool->owner == NULL && ga_pool_use_on_oom(p, &ap))
            st = GALLOC_OK;
        if (st == GALLOC_E_OOM && ga_pool_release_available_cached_blocks(p, &ap))
            st = alloc_block(p, &ap, false);
        /* No full flush while routing to a private pool (a capture in PyTorch). */
        if (st == GALLOC_E_OOM && p->n_routes == 0) {
            bool were_pending = p->pending_blocks > 0;
            /* A failed wait fails the call with the device's error, not an
             * OOM: PyTorch throws from here before its last retry. */
            galloc_status_t sync = ga_pool_release_cached_blocks(p);
            if (sync != GALLOC_OK)
                return sync;
            /* PyTorch (2.x, and main as of 2026-11) retries only the device
             * allocation here, so a block that the synchronization just
             * returned to a partly used segment cannot serve the request and
             * the job dies (pytorch/pytorch#189504; the fix, PR #191302, is
             * not merged). retry_pool_after_sync:True searches the pool again
             * first, counting the retry as PyTorch would; off by default so
             * that galloc's stats and OOMs stay PyTorch's. */
            if (were_pending && p->conf.retry_pool_after_sync && ga_pool_get_free_block(p, &ap)) {
                p->stats.num_alloc_retries++;
                st = GALLOC_OK;
            } else {
                st = alloc_block(p, &ap, true);
            }
        }
        if (st == GALLOC_E_OOM)
            return ap.rejected ? ga_pool_rejected(p, &ap) : ga_pool_oom(p, &ap);
        if (st == GALLOC_E_HOOK)
            return st; /* no retry: hooks.c said which hook refused what */
        if (st == GALLOC_E_UNSUPPORTED && ga_pool_is_tagged(ap.pool))
            return st; /* ga_pool_vmm_alloc said why */
        if (st != GALLOC_OK) {
            char why[256];
            return ga_fail(p->err, st, "device allocation of %zu bytes failed: %s", ap.alloc_size,
                           ga_backend_why(p->backend, st, why, sizeof(why)));
        }
    }
    alloc_found_block(p, &ap);
    *out = (void *)ap.block->addr;
    return GALLOC_OK;
}

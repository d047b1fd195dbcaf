/*
 * stripe_path.c: the stripe path (stripe.h): a cache-hit malloc, a plain
 * free and a usable-size lookup under the lock of the stream's stripe only,
 * so that threads on their own streams do not wait for each other (Note:
 * per-stream locking, docs/architecture.md).
 *
 * Each call first checks that it can finish: the stripe path is open
 * (`stripe_path_open`: no routes, no pending events, no recording, no GC
 * clock), the block is an ordinary one (default pools, below
 * max_split_size, no stream uses), a record and a map slot are at hand, and
 * the stripe has the headroom for every stat the call raises. Otherwise it
 * changes nothing and returns false, and the caller takes the locked path
 * (ga_pool_malloc / ga_pool_free), which decides as PyTorch would. When it
 * goes ahead it does exactly what the locked path does on a cache hit, with
 * the same steps (split.h); only the counters go to the stripe's escrow.
 */
#include "pool/ops.h"
#include "pool/round.h"
#include "pool/split.h"
#include "pool/stripe.h"

/* The thread's last stripe per pool (stripe.h, ga_pool_hint_set). Static:
 * a TLS symbol shared between files would be exported by the library. */
static _Thread_local struct {
    const ga_pool_t *pool;
    unsigned stripe;
} hint;

void ga_pool_hint_set(const ga_pool_t *p, unsigned stripe)
{
    hint.pool = p;
    hint.stripe = stripe;
}

unsigned ga_pool_hint_get(const ga_pool_t *p)
{
    return hint.pool == p ? hint.stripe : GA_STRIPES;
}

GA_HOT bool stripe_path_on(const ga_pool_t *p)
{
    return atomic_load_explicit(&p->stripe_path_open, memory_order_relaxed);
}

/* The stream's set in bp, by the stripe's hint, else by search (the sets
 * only change on the locked path, which holds this stripe's lock then). */
GA_HOT ga_stream_set_t *set_of(ga_stripe_t *s, ga_blockpool_t *bp, galloc_stream_t stream)
{
    ga_stream_set_t *set = s->last[bp->is_small];
    if (__builtin_expect(set != NULL && set->stream == stream, 1))
        return set;
    set = ga_pool_blockpool_lookup(bp, stream);
    if (set != NULL)
        s->last[bp->is_small] = set;
    return set;
}

/* Every stat a malloc of `out` bytes (requested `req`) changes; negative when
 * the stripe lacked the headroom for some increase (stripe.h). */
GA_HOT int64_t malloc_stats(ga_stripe_t *s, galloc_stat_pool_t sp, int64_t out, int64_t req, ga_split_change_t c)
{
    return ga_esc_add(s, GA_SLOT_COUNT, sp, 1) | ga_esc_add(s, GA_SLOT_BYTES, sp, out) |
           ga_esc_add(s, GA_SLOT_REQUESTED, sp, req) | ga_esc_update(s, GA_SLOT_SPLIT, sp, c.count) |
           ga_esc_update(s, GA_SLOT_SPLIT_BYTES, sp, c.bytes);
}

static __attribute__((noinline, cold)) void malloc_stats_undo(ga_stripe_t *s, galloc_stat_pool_t sp, int64_t out,
                                                              int64_t req, ga_split_change_t c)
{
    ga_esc_undo(s, GA_SLOT_COUNT, sp, 1);
    ga_esc_undo(s, GA_SLOT_BYTES, sp, out);
    ga_esc_undo(s, GA_SLOT_REQUESTED, sp, req);
    ga_esc_update_undo(s, GA_SLOT_SPLIT, sp, c.count);
    ga_esc_update_undo(s, GA_SLOT_SPLIT_BYTES, sp, c.bytes);
}

/* Headroom for the increases `need` (per row) moved to stripe s (index i)
 * from the other stripes of the last grant whose locks are free at once
 * (trylock: never a wait while holding s's lock). Each donor keeps its
 * change to current (granted - headroom), so the sum of the headroom, and with it the
 * bound below the peak, stays as it was (stripe.h). Returns whether s now
 * has all of it; a donor that is busy is skipped, and the call then takes
 * the locked path. Cold: only when a stripe's share ran short. */
static __attribute__((noinline, cold)) bool borrow(ga_pool_t *p, unsigned i, galloc_stat_pool_t sp,
                                                   const int64_t need[GA_SLOTS])
{
    ga_escrow_t *e = &p->stripes[i].esc;
    const galloc_stat_pool_t js[2] = {GALLOC_STAT_ALL, sp};
    for (uint32_t m = p->grant_mask & ~(1u << i); m != 0; m &= m - 1) {
        bool lacking = false;
        for (int k = 0; k < 2; k++)
            for (int r = 0; r < GA_SLOTS; r++)
                lacking |= e->headroom[js[k]][r] < need[r];
        if (!lacking)
            return true;
        ga_stripe_t *donor = &p->stripes[__builtin_ctz(m)];
        if (!ga_trylock_briefly(&donor->lock, GA_STRIPE_TRIES)) /* busy: skipped, never waited for */
            continue;
        for (int k = 0; k < 2; k++) {
            int64_t *headroom = e->headroom[js[k]], *granted = e->granted[js[k]];
            int64_t *donor_headroom = donor->esc.headroom[js[k]], *donor_granted = donor->esc.granted[js[k]];
            for (int r = 0; r < GA_SLOTS; r++) {
                int64_t lack = need[r] - headroom[r];
                if (lack <= 0 || donor_headroom[r] <= 0)
                    continue;
                /* the shortfall, and half of what the donor has beyond it: fewer borrows */
                int64_t t = lack + (donor_headroom[r] - lack) / 2;
                if (t > donor_headroom[r])
                    t = donor_headroom[r];
                donor_headroom[r] -= t;
                donor_granted[r] -= t;
                headroom[r] += t;
                granted[r] += t;
                GA_ASSERT(t > 0 && donor_headroom[r] >= 0); /* a move: the sum of the grants stays */
            }
        }
        ga_unlock(&donor->lock);
    }
    for (int k = 0; k < 2; k++)
        for (int r = 0; r < GA_SLOTS; r++)
            if (e->headroom[js[k]][r] < need[r])
                return false;
    return true;
}

bool ga_pool_stripe_malloc(void *impl, size_t size, galloc_stream_t stream, void **out)
{
    ga_pool_t *p = impl;
    /* Zero and sizes past PyTorch's 1 EB limit are the locked path's to
     * answer (rounding them would wrap). */
    if (!stripe_path_on(p) || size == 0 || (uint64_t)size >= GA_ONE_EXABYTE)
        return false;
    unsigned i = ga_stripe_of(stream);
    ga_stripe_t *s = &p->stripes[i];
    ga_lock(&s->lock);
    if (!stripe_path_on(p)) /* turned off before this lock was taken */
        goto miss;
    s->touched = true;
    size_t rounded = ga_pool_round(p, size);
    ga_blockpool_t *bp = rounded <= GA_SMALL_SIZE ? &p->small : &p->large;
    ga_stream_set_t *set = set_of(s, bp, stream);
    if (set == NULL)
        goto miss;
    ga_block_t *b = ga_pool_blockpool_fit_rounded(set, rounded);
    if (b != NULL && b->seg->expandable)
        b = ga_pool_expandable_best(b);
    /* An oversize block (and so an oversize request) is the locked path's:
     * its own rules and stat (oversize_allocations). */
    if (b == NULL || b->size >= p->conf.max_split_size)
        goto miss;
    bool split = ga_pool_should_split(p, b, rounded);
    ga_split_change_t c = ga_pool_alloc_split_change(b, rounded, split);
    galloc_stat_pool_t sp = bp->stat;
    int64_t out_bytes = (int64_t)(split ? rounded : b->size);
    if ((split && s->records.n_free_blocks == 0) || ga_addrmap_reserve(&s->ptrs, 1) != GALLOC_OK)
        goto miss;
    if (__builtin_expect(malloc_stats(s, sp, out_bytes, (int64_t)size, c) < 0, 0)) {
        malloc_stats_undo(s, sp, out_bytes, (int64_t)size, c);
        const int64_t need[GA_SLOTS] = {
            [GA_SLOT_COUNT] = 1,
            [GA_SLOT_BYTES] = out_bytes,
            [GA_SLOT_REQUESTED] = (int64_t)size,
            [GA_SLOT_SPLIT] = c.count > 0 ? c.count : 0,
            [GA_SLOT_SPLIT_BYTES] = c.bytes > 0 ? c.bytes : 0,
        };
        if (!borrow(p, i, sp, need))
            goto miss;
        int64_t left = malloc_stats(s, sp, out_bytes, (int64_t)size, c); /* has the room now */
        GA_ASSERT(left >= 0);
        (void)left;
    }

    GA_ASSERT(b->stream == stream && ga_stripe_of(b->stream) == i);
    ga_pool_blockpool_remove(bp, b);
    if (split)
        b = ga_pool_split_front(&s->records, bp, b, rounded);
    b->allocated = true;
    b->requested = size;
    b->stack_id = 0;
    ga_pool_ptr_insert(p, b);
    ga_unlock(&s->lock);
    hint.pool = p;
    hint.stripe = i;
    *out = (void *)b->addr;
    return true;
miss:
    ga_unlock(&s->lock);
    return false;
}

typedef enum { FREED, ABSENT, LOCKED_PATH } free_result_t;

/* Free addr if stripe i's map holds it. */
GA_HOT free_result_t free_in(ga_pool_t *p, unsigned i, uintptr_t addr)
{
    ga_stripe_t *s = &p->stripes[i];
    ga_lock(&s->lock);
    free_result_t r = LOCKED_PATH;
    if (!stripe_path_on(p))
        goto out;
    s->touched = true;
    ga_ptr_entry_t *e = ga_addrmap_find(&s->ptrs, addr);
    if (e == NULL) {
        r = ABSENT;
        goto out;
    }
    ga_block_t *b = e->block;
    /* A stripe's map holds only allocated blocks of its own streams. */
    GA_ASSERT(b->allocated && b->addr == addr && ga_stripe_of(b->stream) == i);
    if (b->uses != NULL || b->shared || b->pool->owner != NULL || b->size >= p->conf.max_split_size)
        goto out;
    galloc_stat_pool_t sp = b->pool->stat;
    ga_split_change_t c = ga_pool_free_split_change(b);
    /* Only inactive_split can rise on a free (a split piece returns). */
    if (__builtin_expect(
            (ga_esc_update(s, GA_SLOT_SPLIT, sp, c.count) | ga_esc_update(s, GA_SLOT_SPLIT_BYTES, sp, c.bytes)) < 0,
            0)) {
        ga_esc_update_undo(s, GA_SLOT_SPLIT, sp, c.count);
        ga_esc_update_undo(s, GA_SLOT_SPLIT_BYTES, sp, c.bytes);
        goto out;
    }

    ga_addrmap_remove(&s->ptrs, e);
    b->allocated = false;
    ga_esc_sub(s, GA_SLOT_COUNT, sp, 1);
    ga_esc_sub(s, GA_SLOT_BYTES, sp, (int64_t)b->size);
    ga_esc_sub(s, GA_SLOT_REQUESTED, sp, (int64_t)b->requested); /* b->requested stays: free_block's note */
    b->stack_id = 0;
    (void)ga_pool_merge(&s->records, b, b->prev);
    (void)ga_pool_merge(&s->records, b, b->next);
    ga_pool_blockpool_insert(b->pool, b);
    r = FREED;
out:
    ga_unlock(&s->lock);
    return r;
}

bool ga_pool_stripe_free(void *impl, void *ptr)
{
    ga_pool_t *p = impl;
    if (!stripe_path_on(p) || ptr == NULL)
        return false;
    uintptr_t addr = (uintptr_t)ptr;
    uint32_t rest;
    for (unsigned i = ga_pool_search_first(p, &rest); i < GA_STRIPES; i = ga_pool_search_next(&rest)) {
        free_result_t r = free_in(p, i, addr);
        if (r != ABSENT)
            return r == FREED;
    }
    return false; /* not allocated: the locked path says why (a sleeping tag's block, or not owned) */
}

/* A replay calls it after every malloc: it searches the maps as free does
 * (the thread's last stripe first, one stripe's lock at a time) and reads
 * the block under that lock, where it cannot be freed, split or merged.
 * Unlike free it needs no more than that: stream uses, a private pool or an
 * oversize block change nothing about its size. Not found (a sleeping tag's
 * block, not owned) or the path closed: the locked path answers. */
bool ga_pool_stripe_usable_size(void *impl, const void *ptr, size_t *size)
{
    ga_pool_t *p = impl;
    if (!stripe_path_on(p))
        return false;
    uintptr_t addr = (uintptr_t)ptr;
    uint32_t rest;
    for (unsigned i = ga_pool_search_first(p, &rest); i < GA_STRIPES; i = ga_pool_search_next(&rest)) {
        ga_stripe_t *s = &p->stripes[i];
        ga_lock(&s->lock);
        if (!stripe_path_on(p)) { /* closed before this lock was taken: the maps are the locked path's */
            ga_unlock(&s->lock);
            return false;
        }
        const ga_ptr_entry_t *e = ga_addrmap_find(&s->ptrs, addr);
        if (e != NULL) {
            GA_ASSERT(e->block->allocated && e->block->addr == addr && ga_stripe_of(e->block->stream) == i);
            *size = e->block->size;
        }
        ga_unlock(&s->lock);
        if (e != NULL)
            return true;
    }
    return false;
}

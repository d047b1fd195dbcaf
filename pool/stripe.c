/*
 * stripe.c: the stripes' life cycle, the pointer maps' lookups for the
 * locked path, and the hand-over between the locked path and the stripe
 * path: quiesce (take every stripe, fold its escrow back) and
 * resume (grant headroom, let stripe calls run). stripe.h says
 * why the statistics stay exact.
 */
#include <stddef.h>
#include <string.h>

#include "pool/ops.h"
#include "pool/records.h"
#include "pool/stripe.h"
#include "stats/stats.h"
#include "util/assert.h"

/* Where each escrow row lives in the pool's stats. */
static const size_t row_offset[GA_ESC_ROWS] = {
    [GA_ESC_ALLOCATION] = offsetof(galloc_stats_t, allocation),
    [GA_ESC_ALLOCATED_BYTES] = offsetof(galloc_stats_t, allocated_bytes),
    [GA_ESC_ACTIVE] = offsetof(galloc_stats_t, active),
    [GA_ESC_ACTIVE_BYTES] = offsetof(galloc_stats_t, active_bytes),
    [GA_ESC_REQUESTED_BYTES] = offsetof(galloc_stats_t, requested_bytes),
    [GA_ESC_INACTIVE_SPLIT] = offsetof(galloc_stats_t, inactive_split),
    [GA_ESC_INACTIVE_SPLIT_BYTES] = offsetof(galloc_stats_t, inactive_split_bytes),
};

/* The slot each row's stripe-path changes go to (types.h). */
static const int slot_of[GA_ESC_ROWS] = {
    [GA_ESC_ALLOCATION] = GA_SLOT_COUNT,
    [GA_ESC_ALLOCATED_BYTES] = GA_SLOT_BYTES,
    [GA_ESC_ACTIVE] = GA_SLOT_COUNT,
    [GA_ESC_ACTIVE_BYTES] = GA_SLOT_BYTES,
    [GA_ESC_REQUESTED_BYTES] = GA_SLOT_REQUESTED,
    [GA_ESC_INACTIVE_SPLIT] = GA_SLOT_SPLIT,
    [GA_ESC_INACTIVE_SPLIT_BYTES] = GA_SLOT_SPLIT_BYTES,
};

static galloc_stat_t *row_of(galloc_stats_t *st, int r)
{
    return (galloc_stat_t *)((char *)st + row_offset[r]);
}

static const galloc_stat_t *row_in(const galloc_stats_t *st, int r)
{
    return (const galloc_stat_t *)((const char *)st + row_offset[r]);
}

void ga_pool_change_rows(ga_pool_t *p, galloc_stream_t stream, galloc_stat_pool_t sp, const int64_t delta[GA_ESC_ROWS])
{
    ga_escrow_t *e = &p->stripes[ga_stripe_of(stream)].esc;
    for (int r = 0; r < GA_ESC_ROWS; r++) {
        ga_stat_update(row_of(&p->stats, r), sp, delta[r]);
        e->held[GALLOC_STAT_ALL][r] += delta[r];
        e->held[sp][r] += delta[r];
    }
}

void ga_pool_stripes_init(ga_pool_t *p)
{
    for (unsigned i = 0; i < GA_STRIPES; i++) {
        ga_stripe_t *s = &p->stripes[i];
        (void)ga_lock_init(&s->lock); /* cannot fail (a futex word, or a default pthread mutex) */
        ga_addrmap_init(&s->ptrs, sizeof(ga_ptr_entry_t));
        ga_pool_records_init(&s->records);
    }
    atomic_init(&p->stripe_path_open, false);
    atomic_init(&p->map_mask, 0u);
    atomic_init(&p->reserved_seen, 0);
}

void ga_pool_stripes_destroy(ga_pool_t *p)
{
    for (unsigned i = 0; i < GA_STRIPES; i++) {
        ga_pool_records_destroy(&p->stripes[i].records);
        ga_addrmap_destroy(&p->stripes[i].ptrs);
        ga_lock_destroy(&p->stripes[i].lock);
    }
}

ga_ptr_entry_t *ga_pool_ptr_find(ga_pool_t *p, uintptr_t addr, unsigned *stripe)
{
    uint32_t rest;
    for (unsigned i = ga_pool_search_first(p, &rest); i < GA_STRIPES; i = ga_pool_search_next(&rest)) {
        ga_ptr_entry_t *e = ga_addrmap_find(&p->stripes[i].ptrs, addr);
        if (e != NULL) {
            *stripe = i;
            return e;
        }
    }
    return NULL;
}

void ga_pool_ptr_remove(ga_pool_t *p, uintptr_t addr)
{
    unsigned i;
    ga_ptr_entry_t *e = ga_pool_ptr_find(p, addr, &i);
    if (e != NULL)
        ga_addrmap_remove(&p->stripes[i].ptrs, e);
}

bool ga_pool_stripe_shares_ok(const ga_pool_t *p)
{
    for (int r = 0; r < GA_ESC_ROWS; r++) {
        const galloc_stat_t *row = row_in(&p->stats, r);
        for (int j = 0; j < GALLOC_STAT_POOLS; j++) {
            int64_t sum = 0;
            for (unsigned i = 0; i < GA_STRIPES; i++) {
                const ga_escrow_t *e = &p->stripes[i].esc;
                sum += e->held[j][r] + e->granted[j][slot_of[r]] - e->headroom[j][slot_of[r]];
            }
            if (sum != row[j].current)
                return false;
        }
    }
    return true;
}

size_t ga_pool_ptr_count(const ga_pool_t *p)
{
    size_t n = 0;
    for (unsigned i = 0; i < GA_STRIPES; i++)
        n += ga_addrmap_count(&p->stripes[i].ptrs);
    return n;
}

/* A stripe's changes into the pool's stats, its headroom back. */
static void fold(ga_pool_t *p, ga_stripe_t *s)
{
    ga_escrow_t *e = &s->esc;
    for (int r = 0; r < GA_ESC_ROWS; r++) {
        galloc_stat_t *row = row_of(&p->stats, r);
        int k = slot_of[r];
        for (int j = 0; j < GALLOC_STAT_POOLS; j++) {
            /* Outside a call a stripe never holds less than no headroom. */
            GA_ASSERT(e->headroom[j][k] >= 0);
            int64_t change = e->granted[j][k] - e->headroom[j][k]; /* the stripe's change to the row's current */
            row[j].current += change;
            e->held[j][r] += change;
            if (j != GALLOC_STAT_ALL) { /* "all"'s totals are folded at copy time */
                row[j].allocated += e->increases[j][k];
                row[j].freed += e->increases[j][k] - change;
            }
        }
    }
    memset(s->esc.headroom, 0, sizeof(s->esc.headroom));
    memset(s->esc.increases, 0, sizeof(s->esc.increases));
    memset(s->esc.granted, 0, sizeof(s->esc.granted));
}

/* Every stripe's lock, in index order. A stripe call holds one for tens of
 * ns: a few tries first spare a sleep and a wake in the kernel. */
static void lock_stripes(ga_pool_t *p)
{
    for (unsigned i = 0; i < GA_STRIPES; i++)
        if (!ga_trylock_briefly(&p->stripes[i].lock, GA_STRIPE_TRIES))
            ga_lock(&p->stripes[i].lock);
}

void ga_pool_quiesce(void *impl)
{
    ga_pool_t *p = impl;
    if (!atomic_load_explicit(&p->stripe_path_open, memory_order_relaxed))
        return; /* no stripe call changes anything: the stripes are empty */
    lock_stripes(p);
    for (unsigned i = 0; i < GA_STRIPES; i++) {
        ga_stripe_t *s = &p->stripes[i];
        if (s->touched)
            p->touched_mask |= 1u << i;
        if (s->touched || (p->grant_mask & (1u << i)))
            fold(p, s);
        s->touched = false;
    }
}

/* Whether stripe calls may run: they do no more than a cache hit and a
 * plain free of the default pools, with nothing recorded and no GC clock. */
static bool stripe_path_possible(const ga_pool_t *p)
{
    return p->n_routes == 0 && p->pending_head == NULL && p->deferred == NULL &&
           p->trace.enabled == GALLOC_HISTORY_NONE && !(p->set_fraction && p->conf.garbage_collection_threshold > 0.0);
}

/* One stat entry's headroom (peak - current) for the stripes in mask, into
 * out[stripe]: each may hold the same ceiling K, so a stripe's share is K
 * less what it holds (held), at least 0; where the shares would pass the room,
 * they shrink in proportion. They never add up to more than the room. */
static void share_row(const ga_pool_t *p, uint32_t mask, int j, int r, int64_t out[GA_STRIPES])
{
    const galloc_stat_t *st = &row_in(&p->stats, r)[j];
    int64_t room = st->peak > st->current ? st->peak - st->current : 0; /* current never passes peak */
    int64_t held = 0, total = 0;                                        /* what the stripes in mask hold together */
    for (uint32_t m = mask; m != 0; m &= m - 1)
        held += p->stripes[__builtin_ctz(m)].esc.held[j][r];
    int64_t ceiling = (room + held) / __builtin_popcount(mask);
    for (uint32_t m = mask; m != 0; m &= m - 1) {
        int i = __builtin_ctz(m);
        int64_t w = ceiling - p->stripes[i].esc.held[j][r];
        out[i] = w > 0 ? w : 0;
        total += out[i];
    }
    if (total > room)
        for (uint32_t m = mask; m != 0; m &= m - 1)
            out[__builtin_ctz(m)] = (int64_t)((__int128)out[__builtin_ctz(m)] * room / total);
#if GA_ASSERT_ON
    /* The escrow's bound: the shares never pass the room below the peak. */
    int64_t granted = 0;
    for (uint32_t m = mask; m != 0; m &= m - 1)
        granted += out[__builtin_ctz(m)];
    GA_ASSERT(granted <= room);
#endif
}

/* A row's shares in "all" and in both pools, lowered into the row's slot (a
 * slot shared by two rows keeps the smaller: within the room of both). */
static void grant_row(ga_pool_t *p, uint32_t mask, int r)
{
    int k = slot_of[r];
    for (int j = 0; j < GALLOC_STAT_POOLS; j++) {
        int64_t share[GA_STRIPES];
        share_row(p, mask, j, r, share);
        for (uint32_t m = mask; m != 0; m &= m - 1) {
            int i = __builtin_ctz(m);
            ga_escrow_t *e = &p->stripes[i].esc;
            GA_ASSERT(share[i] >= 0);
            if (e->granted[j][k] < 0 || share[i] < e->granted[j][k]) /* -1: not yet granted this time */
                e->granted[j][k] = e->headroom[j][k] = share[i];
        }
    }
}

/* Hand the headroom below every peak to the stripes
 * used lately: since the last grant or in the span before it (a thread
 * whose call just took the locked path is still running), else to those of
 * the last grant. */
static void grant(ga_pool_t *p)
{
    uint32_t mask = p->touched_mask | p->touched_before;
    if (mask == 0)
        mask = p->grant_mask;
    p->grant_mask = mask;
    p->touched_before = p->touched_mask;
    p->touched_mask = 0;
    if (mask == 0)
        return;
    for (uint32_t m = mask; m != 0; m &= m - 1) /* folded: headroom = granted = 0; mark the slots ungranted */
        memset(p->stripes[__builtin_ctz(m)].esc.granted, 0xff, sizeof(p->stripes[0].esc.granted));
    for (int r = 0; r < GA_ESC_ROWS; r++)
        grant_row(p, mask, r);
}

void ga_pool_resume(void *impl)
{
    ga_pool_t *p = impl;
    atomic_store_explicit(&p->reserved_seen, p->stats.reserved_bytes[GALLOC_STAT_ALL].current, memory_order_relaxed);
    /* Only resume opens or closes the stripe path: while it is open, quiesce took the stripes. */
    bool want = stripe_path_possible(p);
    if (!atomic_load_explicit(&p->stripe_path_open, memory_order_relaxed)) {
        if (!want)
            return;
        lock_stripes(p);
    }
    if (want)
        grant(p);
    atomic_store_explicit(&p->stripe_path_open, want, memory_order_relaxed);
    for (unsigned i = GA_STRIPES; i-- > 0;)
        ga_unlock(&p->stripes[i].lock);
}

/*
 * stripe.h: per-stream locking, the pool-private part (Note: per-stream
 * locking, docs/architecture.md).
 *
 * A stream's cache-hit malloc and plain free (stripe_path.c) take only the
 * lock of its stripe, stripes[ga_stripe_of(stream)], and touch only what
 * belongs to the stripe's streams: their free sets, the blocks of their segments (a
 * segment and every block in it belong to one stream), the stripe's pointer
 * map and record list. Everything else (a miss, record_stream, empty_cache,
 * stats, snapshots, ...) runs on the locked path: the allocator's lock, and
 * every stripe's in index order while stripe calls may run (ga_pool_quiesce).
 * Lock order: allocator, then stripes in index order; a stripe call never
 * waits for a second lock.
 *
 * Exact statistics without a shared counter (the escrow, ga_escrow_t): for
 * each stat with a peak, the locked path grants every stripe that will need
 * it a share of the headroom below the peak (peak - current, split between
 * the stripes used lately; "all" has a share of its own, since its peak is
 * not the sum of the pools'): granted = headroom = the share. A stripe call
 * that raises a stat by n needs headroom >= n and spends n of it; a decrease
 * gives it back. The stripe's change to the stat is granted - headroom, so
 * change + headroom = granted, which a stripe call never changes (a borrow
 * moves part of one stripe's grant to another: the sum stays); base +
 * sum(granted) <= peak always holds, and no interleaving of stripe calls can
 * pass the peak: every peak is reached on the locked path, where the totals
 * are exact. A call without the headroom changes nothing and takes the
 * locked path. The locked path first folds every stripe's change into the
 * pool's stats, so that every reader sees the stats of the serial order in
 * which the stripe locks were taken.
 *
 * Free knows only the address: it looks in the map of the stripe the calling
 * thread last allocated from, then in the other stripes that ever held a
 * block (map_mask), one lock at a time.
 */
#ifndef GA_POOL_STRIPE_H
#define GA_POOL_STRIPE_H

#include "pool/types.h"
#include "util/assert.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tries at another stripe's lock before giving up (borrow) or sleeping
 * (the locked path): util/lock.h, ga_trylock_briefly. */
#define GA_STRIPE_TRIES 64

/* The stripe the calling thread last allocated from in p, where its frees
 * look first: set by every malloc, read by free (stripe_path.c keeps it, in a
 * thread-local variable private to that file, so that the shared library
 * exports no symbol for it). ga_pool_hint_get returns GA_STRIPES when the
 * thread's last malloc was in another pool. */
void ga_pool_hint_set(const ga_pool_t *p, unsigned stripe);
unsigned ga_pool_hint_get(const ga_pool_t *p);

/* The order a free searches the stripes' maps in: the thread's last stripe,
 * then every other that ever held a block (map_mask), by index. first gives
 * the first stripe and the rest in *rest; next the following one; both
 * GA_STRIPES when none is left. */
static inline unsigned ga_pool_search_next(uint32_t *rest)
{
    if (*rest == 0)
        return GA_STRIPES;
    unsigned i = (unsigned)__builtin_ctz(*rest);
    *rest &= *rest - 1;
    return i;
}

static inline unsigned ga_pool_search_first(const ga_pool_t *p, uint32_t *rest)
{
    *rest = atomic_load_explicit(&p->map_mask, memory_order_relaxed);
    unsigned i = ga_pool_hint_get(p);
    if (i >= GA_STRIPES)
        return ga_pool_search_next(rest);
    *rest &= ~(1u << i);
    return i;
}

/* n more headroom in slot r of "all" and of pool sp (n < 0: less). */
static inline void ga_esc_headroom_add(ga_stripe_t *s, int r, galloc_stat_pool_t sp, int64_t n)
{
    GA_ASSERT(sp != GALLOC_STAT_ALL);
    s->esc.headroom[GALLOC_STAT_ALL][r] += n;
    s->esc.headroom[sp][r] += n;
}

/* An increase by n >= 0 of escrow slot r in "all" and in pool sp. Returns a
 * negative value when the stripe lacked the headroom: the caller then undoes
 * every increase it made (ga_esc_undo) and takes the locked path. Testing
 * once after all of a call's increases costs one branch, not one a stat. */
static inline int64_t ga_esc_add(ga_stripe_t *s, int r, galloc_stat_pool_t sp, int64_t n)
{
    GA_ASSERT(n >= 0 && sp != GALLOC_STAT_ALL);
    s->esc.increases[sp][r] += n;
    return (s->esc.headroom[GALLOC_STAT_ALL][r] -= n) | (s->esc.headroom[sp][r] -= n);
}

static inline void ga_esc_undo(ga_stripe_t *s, int r, galloc_stat_pool_t sp, int64_t n)
{
    ga_esc_headroom_add(s, r, sp, n);
    s->esc.increases[sp][r] -= n;
}

/* A decrease by n >= 0 of slot r: its headroom stays with this stripe. */
static inline void ga_esc_sub(ga_stripe_t *s, int r, galloc_stat_pool_t sp, int64_t n)
{
    GA_ASSERT(n >= 0);
    ga_esc_headroom_add(s, r, sp, n);
}

/* A signed change (ga_stat_update's rule: zero records nothing); negative
 * as ga_esc_add when an increase lacked the headroom. */
static inline int64_t ga_esc_update(ga_stripe_t *s, int r, galloc_stat_pool_t sp, int64_t delta)
{
    if (delta > 0)
        return ga_esc_add(s, r, sp, delta);
    if (delta < 0)
        ga_esc_sub(s, r, sp, -delta);
    return 0;
}

/* Undo ga_esc_update. */
static inline void ga_esc_update_undo(ga_stripe_t *s, int r, galloc_stat_pool_t sp, int64_t delta)
{
    if (delta > 0)
        ga_esc_undo(s, r, sp, delta);
    else if (delta < 0)
        ga_esc_headroom_add(s, r, sp, delta); /* the decrease gave back -delta: taken again */
}

/* The locked path's change to the escrow rows (malloc.c, free.c): applied to
 * the pool's stats ("all" and pool sp, ga_stat_update's rules) and charged
 * to the share of the stream's stripe, so that over the stripes the shares
 * add up to current. */
void ga_pool_change_rows(ga_pool_t *p, galloc_stream_t stream, galloc_stat_pool_t sp, const int64_t delta[GA_ESC_ROWS]);

/* The allocated block at addr and the stripe whose map holds it, or NULL:
 * the calling thread's last stripe first. The locked path's lookup; stripe
 * calls search one stripe at a time under its lock (stripe_path.c). */
ga_ptr_entry_t *ga_pool_ptr_find(ga_pool_t *p, uintptr_t addr, unsigned *stripe);

static inline ga_block_t *ga_pool_allocated_block(ga_pool_t *p, uintptr_t addr)
{
    unsigned i;
    const ga_ptr_entry_t *e = ga_pool_ptr_find(p, addr, &i);
    return e != NULL ? e->block : NULL;
}

/* Enter b into its stream's stripe map (a slot reserved there). */
static inline void ga_pool_ptr_insert(ga_pool_t *p, ga_block_t *b)
{
    unsigned i = ga_stripe_of(b->stream);
    ga_stripe_t *s = &p->stripes[i];
    ((ga_ptr_entry_t *)ga_addrmap_insert(&s->ptrs, b->addr))->block = b;
    if (__builtin_expect(!s->in_mask, 0)) {
        s->in_mask = true;
        atomic_fetch_or_explicit(&p->map_mask, 1u << i, memory_order_relaxed);
    }
}

/* Take the block at addr out of its stripe's map (it must be there). */
void ga_pool_ptr_remove(ga_pool_t *p, uintptr_t addr);

/* The stripes' shares add up to every escrow row's current (check.c). */
bool ga_pool_stripe_shares_ok(const ga_pool_t *p);

/* Allocated blocks in every stripe's map. */
size_t ga_pool_ptr_count(const ga_pool_t *p);

/* stripe.c: set up and free the stripes (pool create and destroy). */
void ga_pool_stripes_init(ga_pool_t *p);
void ga_pool_stripes_destroy(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_STRIPE_H */

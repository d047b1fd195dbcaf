/*
 * stats.h: the stats layer's interface: PyTorch's Stat algebra on galloc_stats_t.
 *
 * Locking: none inside; the caller (the pool) holds its allocator's lock for
 * every update and copies the struct out under that lock for readers.
 *
 * Rules (pytorch/pytorch c10/core/CachingDeviceAllocator.h, Stat):
 *   increase(n): current += n; peak = max(peak, current); allocated += n
 *   decrease(n): current -= n; freed += n (peak untouched)
 * Peak moves with current on every increase, never at read time, so a copy
 * taken at any moment is exact.
 *
 * Cost on the hot path: the pool knows the sign of most changes (a malloc
 * only adds to allocation, active and the byte counts; a free only takes
 * away), so it calls ga_stat_add or ga_stat_sub, which test no sign; only an
 * increase looks at a peak, because a decrease can never raise one.
 * ga_stat_update is for changes whose sign is known only at run time.
 */
#ifndef GA_STATS_H
#define GA_STATS_H

#include <stdint.h>
#include <string.h>

#include <galloc/galloc_host.h>
#include <galloc/galloc_stats.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline void ga_stat_increase(galloc_stat_t *s, int64_t n)
{
    int64_t cur = s->current + n;
    s->current = cur;
    if (cur > s->peak) /* rarely taken once warm: cheaper than an unconditional max and store */
        s->peak = cur;
    s->allocated += n;
}

static inline void ga_stat_decrease(galloc_stat_t *s, int64_t n)
{
    s->current -= n;
    s->freed += n;
}

/* ga_stat_add: an increase by n >= 0 of "all" and of the block's pool. A
 * zero n changes nothing, as PyTorch's update_stat skipping it.
 *
 * "all"'s current and peak move here; its allocated and freed do not: every
 * change goes to "all" and to exactly one pool (PyTorch's
 * get_stat_types_for_pool), so they are the two pools' sums, and
 * ga_stats_fold_all writes them into a copy for readers. That leaves one
 * read-modify-write per update of "all" instead of two. */
static inline void ga_stat_add(galloc_stat_t arr[GALLOC_STAT_POOLS], galloc_stat_pool_t pool, int64_t n)
{
    int64_t all = arr[GALLOC_STAT_ALL].current + n;
    arr[GALLOC_STAT_ALL].current = all;
    if (all > arr[GALLOC_STAT_ALL].peak)
        arr[GALLOC_STAT_ALL].peak = all;
    ga_stat_increase(&arr[pool], n);
}

/* ga_stat_sub: a decrease by n >= 0 of "all" and of the block's pool: no
 * peak can move; "all"'s freed is folded at copy time (ga_stat_add). */
static inline void ga_stat_sub(galloc_stat_t arr[GALLOC_STAT_POOLS], galloc_stat_pool_t pool, int64_t n)
{
    arr[GALLOC_STAT_ALL].current -= n;
    ga_stat_decrease(&arr[pool], n);
}

/* ga_stat_update: apply a signed change to "all" and to the block's pool, as
 * PyTorch does for every stat array change (get_stat_types_for_pool). A zero
 * change is not recorded (PyTorch's update_stat skips it, so allocated/freed
 * totals do not move). */
static inline void ga_stat_update(galloc_stat_t arr[GALLOC_STAT_POOLS], galloc_stat_pool_t pool, int64_t delta)
{
    if (delta > 0) {
        ga_stat_increase(&arr[GALLOC_STAT_ALL], delta);
        ga_stat_increase(&arr[pool], delta);
    } else if (delta < 0) {
        ga_stat_decrease(&arr[GALLOC_STAT_ALL], -delta);
        ga_stat_decrease(&arr[pool], -delta);
    }
}

/* ga_duration_increase: PyTorch's DurationStat::increase (c10's
 * CachingAllocator): total += us, count += 1, max = max(max, us), min = us
 * when min is 0 (none yet) else min(min, us). avg is total / count, set by
 * ga_duration_read for a reader's copy. */
static inline void ga_duration_increase(galloc_host_duration_t *d, int64_t us)
{
    d->total += us;
    d->count += 1;
    if (us > d->max)
        d->max = us;
    if (d->min == 0 || us < d->min)
        d->min = us;
}

/* ga_duration_read: d with avg filled in, for a copy given to a reader. */
static inline galloc_host_duration_t ga_duration_read(galloc_host_duration_t d)
{
    d.avg = d.count > 0 ? d.total / d.count : 0;
    return d;
}

/* DurationStat's resets: reset_peak zeroes max and min, reset_accumulated
 * total and count (host_stats.c). */
void ga_duration_reset_peak(galloc_host_duration_t *d);
void ga_duration_reset_accumulated(galloc_host_duration_t *d);

/* ga_stat_reset_peak / ga_stat_reset_accumulated: one Stat's resets
 * (peak = current; allocated = freed = 0). */
static inline void ga_stat_reset_peak(galloc_stat_t *s)
{
    s->peak = s->current;
}

static inline void ga_stat_reset_accumulated(galloc_stat_t *s)
{
    s->allocated = 0;
    s->freed = 0;
}

/* ga_stats_init: all zero, max_split_size as PyTorch reports it (the configured
 * bytes cast to int64: -1 when unlimited). */
void ga_stats_init(galloc_stats_t *s, uint64_t max_split_size);

/* ga_stats_reset_peak: every array's and oversize stat's peak = current. */
void ga_stats_reset_peak(galloc_stats_t *s);

/* ga_stats_reset_accumulated: allocated = freed = 0 everywhere and the num_*
 * counters zeroed; current, peak and max_split_size kept. */
void ga_stats_reset_accumulated(galloc_stats_t *s);

/* ga_stats_fold_all: every array's "all".allocated and .freed set to the sum
 * of the two pools' (the value a stats copy must show when the arrays were
 * updated with ga_stat_add / ga_stat_sub, and the same value otherwise). */
void ga_stats_fold_all(galloc_stats_t *s);

/* ga_stats_copy: copy src into dst up to dst->struct_size (which is kept). */
void ga_stats_copy(galloc_stats_t *dst, const galloc_stats_t *src);

#ifdef __cplusplus
}
#endif
#endif /* GA_STATS_H */

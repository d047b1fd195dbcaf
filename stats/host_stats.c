/*
 * host_stats.c: the host cache's statistics (api/galloc_host.h) as
 * torch.cuda.host_memory_stats() returns them: the flattened keys, in its
 * sorted order, from GALLOC_HOST_STATS_FIELDS; and PyTorch's DurationStat
 * resets.
 *
 * The key table is written once from the X-macro, so iterating it gives
 * PyTorch's 28 keys in PyTorch's order (its Python sorts them; within a Stat
 * allocated < current < freed < peak, within a DurationStat avg < count <
 * max < min < total, which is galloc_host_duration_t's member order).
 */
#include <stddef.h>

#include "stats/keys.h"
#include "stats/stats.h"

#define STAT_(name)                                                                                                    \
    {#name ".allocated", offsetof(galloc_host_stats_t, name.allocated)},                                               \
        {#name ".current", offsetof(galloc_host_stats_t, name.current)},                                               \
        {#name ".freed", offsetof(galloc_host_stats_t, name.freed)},                                                   \
        {#name ".peak", offsetof(galloc_host_stats_t, name.peak)},
#define DURATION_(name)                                                                                                \
    {#name ".avg", offsetof(galloc_host_stats_t, name.avg)},                                                           \
        {#name ".count", offsetof(galloc_host_stats_t, name.count)},                                                   \
        {#name ".max", offsetof(galloc_host_stats_t, name.max)},                                                       \
        {#name ".min", offsetof(galloc_host_stats_t, name.min)},                                                       \
        {#name ".total", offsetof(galloc_host_stats_t, name.total)},
#define INT_(name) {#name, offsetof(galloc_host_stats_t, name)},

static const ga_stat_key_t keys[] = {GALLOC_HOST_STATS_FIELDS(STAT_, DURATION_, INT_)};

#undef STAT_
#undef DURATION_
#undef INT_

_Static_assert(sizeof(keys) / sizeof(keys[0]) == GALLOC_HOST_STATS_KEY_COUNT, "host_memory_stats has 28 keys");

size_t galloc_host_stats_foreach(const galloc_host_stats_t *s, galloc_stats_visit_fn fn, void *ctx)
{
    return ga_stat_keys_foreach(s, keys, GALLOC_HOST_STATS_KEY_COUNT, fn, ctx);
}

galloc_status_t galloc_host_stats_lookup(const galloc_host_stats_t *s, const char *key, int64_t *value)
{
    return ga_stat_keys_lookup(s, keys, GALLOC_HOST_STATS_KEY_COUNT, key, value);
}

void ga_duration_reset_peak(galloc_host_duration_t *d)
{
    d->max = 0;
    d->min = 0;
}

void ga_duration_reset_accumulated(galloc_host_duration_t *d)
{
    d->total = 0;
    d->count = 0;
}

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
#include <string.h>

#include "stats/stats.h"

typedef struct host_key {
    const char *key; /* flattened PyTorch key */
    size_t offset;   /* offset of its int64_t in galloc_host_stats_t */
} host_key_t;

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

static const host_key_t keys[] = {GALLOC_HOST_STATS_FIELDS(STAT_, DURATION_, INT_)};

#undef STAT_
#undef DURATION_
#undef INT_

_Static_assert(sizeof(keys) / sizeof(keys[0]) == GALLOC_HOST_STATS_KEY_COUNT, "host_memory_stats has 28 keys");

static int64_t value_at(const galloc_host_stats_t *s, size_t offset)
{
    int64_t v;
    memcpy(&v, (const char *)s + offset, sizeof(v));
    return v;
}

size_t galloc_host_stats_foreach(const galloc_host_stats_t *s, galloc_stats_visit_fn fn, void *ctx)
{
    if (s == NULL || fn == NULL)
        return 0;
    for (size_t i = 0; i < GALLOC_HOST_STATS_KEY_COUNT; i++)
        if (fn(ctx, keys[i].key, value_at(s, keys[i].offset)) != 0)
            return i + 1;
    return GALLOC_HOST_STATS_KEY_COUNT;
}

galloc_status_t galloc_host_stats_lookup(const galloc_host_stats_t *s, const char *key, int64_t *value)
{
    if (s == NULL || key == NULL || value == NULL)
        return GALLOC_E_INVAL;
    size_t lo = 0, hi = GALLOC_HOST_STATS_KEY_COUNT; /* sorted: strcmp order is PyTorch's */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key, keys[mid].key);
        if (c == 0) {
            *value = value_at(s, keys[mid].offset);
            return GALLOC_OK;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return GALLOC_E_INVAL;
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

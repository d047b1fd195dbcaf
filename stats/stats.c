/*
 * stats.c: resets, copies and the flattened-key view of galloc_stats_t.
 *
 * The key table is generated from GALLOC_STATS_FIELDS, whose order is
 * PyTorch's sorted key order, so galloc_stats_foreach yields
 * torch.cuda.memory_stats()'s keys in the same order.
 */
#include "stats/stats.h"

#include <stddef.h>
#include <string.h>

#include "stats/keys.h"

/* Within an array PyTorch's sort puts pools as all, large_pool, small_pool and
 * fields as allocated, current, freed, peak. */
#define STAT4_(prefix, member)                                                                                         \
    {prefix ".allocated", offsetof(galloc_stats_t, member.allocated)},                                                 \
        {prefix ".current", offsetof(galloc_stats_t, member.current)},                                                 \
        {prefix ".freed", offsetof(galloc_stats_t, member.freed)},                                                     \
        {prefix ".peak", offsetof(galloc_stats_t, member.peak)},
#define ARRAY_(name)                                                                                                   \
    STAT4_(#name ".all", name[GALLOC_STAT_ALL])                                                                        \
    STAT4_(#name ".large_pool", name[GALLOC_STAT_LARGE_POOL])                                                          \
    STAT4_(#name ".small_pool", name[GALLOC_STAT_SMALL_POOL])
#define STAT_(name) STAT4_(#name, name)
#define INT_(name) {#name, offsetof(galloc_stats_t, name)},

static const ga_stat_key_t keys[] = {GALLOC_STATS_FIELDS(ARRAY_, STAT_, INT_, INT_)};

#undef STAT4_
#undef ARRAY_
#undef STAT_
#undef INT_

_Static_assert(sizeof(keys) / sizeof(keys[0]) == GALLOC_STATS_KEY_COUNT, "PyTorch reports 123 keys");

size_t galloc_stats_foreach(const galloc_stats_t *s, galloc_stats_visit_fn fn, void *ctx)
{
    return ga_stat_keys_foreach(s, keys, GALLOC_STATS_KEY_COUNT, fn, ctx);
}

galloc_status_t galloc_stats_lookup(const galloc_stats_t *s, const char *key, int64_t *value)
{
    return ga_stat_keys_lookup(s, keys, GALLOC_STATS_KEY_COUNT, key, value);
}

void ga_stats_init(galloc_stats_t *s, uint64_t max_split_size)
{
    memset(s, 0, sizeof(*s));
    s->struct_size = sizeof(*s);
    s->max_split_size = (int64_t)max_split_size;
}

static void reset_peak_one(galloc_stat_t *st)
{
    st->peak = st->current;
}

static void reset_acc_one(galloc_stat_t *st)
{
    st->allocated = 0;
    st->freed = 0;
}

void ga_stats_reset_peak(galloc_stats_t *s)
{
#define ARRAY_(name)                                                                                                   \
    for (int p = 0; p < GALLOC_STAT_POOLS; p++)                                                                        \
        reset_peak_one(&s->name[p]);
#define STAT_(name) reset_peak_one(&s->name);
#define INT_(name)
    GALLOC_STATS_FIELDS(ARRAY_, STAT_, INT_, INT_)
#undef ARRAY_
#undef STAT_
#undef INT_
}

void ga_stats_reset_accumulated(galloc_stats_t *s)
{
#define ARRAY_(name)                                                                                                   \
    for (int p = 0; p < GALLOC_STAT_POOLS; p++)                                                                        \
        reset_acc_one(&s->name[p]);
#define STAT_(name) reset_acc_one(&s->name);
#define INT_(name)
    GALLOC_STATS_FIELDS(ARRAY_, STAT_, INT_, INT_)
#undef ARRAY_
#undef STAT_
#undef INT_
    /* Every plain counter but max_split_size (PyTorch's resetAccumulatedStats,
     * num_oom_rejections included in main's). */
    s->num_alloc_retries = 0;
    s->num_ooms = 0;
    s->num_sync_all_streams = 0;
    s->num_device_alloc = 0;
    s->num_device_free = 0;
    s->num_oom_rejections = 0;
}

static void fold_one(galloc_stat_t arr[GALLOC_STAT_POOLS])
{
    arr[GALLOC_STAT_ALL].allocated = arr[GALLOC_STAT_SMALL_POOL].allocated + arr[GALLOC_STAT_LARGE_POOL].allocated;
    arr[GALLOC_STAT_ALL].freed = arr[GALLOC_STAT_SMALL_POOL].freed + arr[GALLOC_STAT_LARGE_POOL].freed;
}

void ga_stats_fold_all(galloc_stats_t *s)
{
#define ARRAY_(name) fold_one(s->name);
#define STAT_(name)
#define INT_(name)
    GALLOC_STATS_FIELDS(ARRAY_, STAT_, INT_, INT_)
#undef ARRAY_
#undef STAT_
#undef INT_
}

void ga_stats_copy(galloc_stats_t *dst, const galloc_stats_t *src)
{
    uint32_t want = dst->struct_size;
    if (want > sizeof(*src))
        want = sizeof(*src);
    if (want > sizeof(uint32_t))
        memcpy((char *)dst + sizeof(uint32_t), (const char *)src + sizeof(uint32_t), want - sizeof(uint32_t));
}

/*
 * keys.c: the walk and the search over a stats struct's key table (keys.h),
 * one home for both galloc_stats_t's and galloc_host_stats_t's.
 */
#include "stats/keys.h"

#include <string.h>

static int64_t value_at(const void *s, size_t offset)
{
    int64_t v;
    memcpy(&v, (const char *)s + offset, sizeof(v));
    return v;
}

size_t ga_stat_keys_foreach(const void *s, const ga_stat_key_t *keys, size_t n, galloc_stats_visit_fn fn, void *ctx)
{
    if (s == NULL || fn == NULL)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (fn(ctx, keys[i].key, value_at(s, keys[i].offset)) != 0)
            return i + 1;
    return n;
}

galloc_status_t ga_stat_keys_lookup(const void *s, const ga_stat_key_t *keys, size_t n, const char *key, int64_t *value)
{
    if (s == NULL || key == NULL || value == NULL)
        return GALLOC_E_INVAL;
    size_t lo = 0, hi = n; /* sorted: PyTorch's order is strcmp order */
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

/*
 * oom_class.c: what an OOM in a replay was: fragmentation (the bytes were
 * there, cached free or on the device under the fraction's cap, but not in
 * one piece: settings can help) or genuine (live memory and the request
 * exceed what the device allows: no setting helps). Read from the
 * allocator's public figures at the moment of the OOM (replay.h).
 */
#include "tools/engine/replay.h"

#include <string.h>

void ga_replay_classify_oom(galloc_allocator_t *a, uint64_t size, double fraction, ga_oom_facts_t *out)
{
    memset(out, 0, sizeof(*out));
    out->size = size;
    galloc_fragmentation_t f = {.struct_size = sizeof(f)};
    if (galloc_fragmentation(a, &f) == GALLOC_OK) {
        const galloc_pool_fragmentation_t *all = &f.pool[GALLOC_STAT_ALL];
        out->live = all->active_bytes;
        out->cached_free = all->free_bytes;
        for (int p = 0; p < GALLOC_STAT_POOLS; p++) /* the "all" entry may not carry a per-block maximum */
            if (f.pool[p].largest_free_block > out->largest_free_block)
                out->largest_free_block = f.pool[p].largest_free_block;
    }
    galloc_settings_t set = {.struct_size = sizeof(set)};
    if (galloc_settings_get(a, &set) == GALLOC_OK) {
        out->has_expandable = set.expandable_segments;
        out->has_max_split = set.max_split_size != UINT64_MAX;
    }
    size_t fr = 0, tot = 0;
    if (galloc_memory_info(a, &fr, &tot) == GALLOC_OK) {
        out->device_free = fr;
        out->device_total = tot;
    }
    out->fraction = fraction >= 0.0 && fraction < 1.0 ? fraction : 1.0;
    out->limit = out->device_total;
    out->usable_free = out->device_free;
    if (out->fraction < 1.0) {
        /* PyTorch's allowed_memory_maximum: fraction x total, truncated. A
         * new segment past it fails before the device is asked, so only
         * the room under it counts, however much the device has free. */
        out->limit = (uint64_t)(out->fraction * (double)out->device_total);
        galloc_stats_t s = {.struct_size = sizeof(s)};
        int64_t reserved = galloc_memory_stats(a, &s) == GALLOC_OK ? s.reserved_bytes[GALLOC_STAT_ALL].current : 0;
        uint64_t room = reserved >= 0 && (uint64_t)reserved < out->limit ? out->limit - (uint64_t)reserved : 0;
        if (room < out->usable_free)
            out->usable_free = room;
    }
    /* Compare as unsigned 64-bit sums: the figures are bounded by the device. */
    uint64_t usable = (uint64_t)(out->cached_free > 0 ? out->cached_free : 0) + out->usable_free;
    out->cls = size <= usable ? GA_OOM_FRAGMENTATION : GA_OOM_GENUINE;
}

double ga_replay_start_fraction(galloc_allocator_t *a)
{
    galloc_settings_t st = {.struct_size = sizeof(st)};
    if (galloc_settings_get(a, &st) != GALLOC_OK)
        return 1.0;
    return st.per_process_memory_fraction;
}

const char *ga_oom_class_name(ga_oom_class_t c)
{
    return c == GA_OOM_FRAGMENTATION ? "fragmentation" : "genuine";
}

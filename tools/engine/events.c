/*
 * events.c: what the events mean in galloc calls (replay.h, "The replay
 * semantics"), shared by the engine's loop (replay.c) and galloc fit's
 * (fit_run.c), so both make the same calls for the same event.
 */
#include "tools/engine/replay.h"

#include <stdio.h>
#include <string.h>

galloc_status_t ga_replay_empty_cache(galloc_allocator_t *a, uint64_t next_segment)
{
    if (next_segment > 0) {
        size_t free_b = 0, total = 0;
        if (galloc_memory_info(a, &free_b, &total) == GALLOC_OK && free_b < next_segment)
            return GALLOC_OK; /* the traced malloc's OOM path: galloc's malloc will do it */
    }
    return galloc_empty_cache(a);
}

galloc_status_t ga_replay_reserve(galloc_allocator_t *a, uint64_t size, uint64_t stream)
{
    /* A request in (1 MiB, 10 MiB) gets a 20 MiB segment (kLargeBuffer):
     * pieces from 16 MiB up get segments of their own size. */
    const uint64_t min_piece = (uint64_t)16 << 20;
    galloc_stats_t s = {.struct_size = sizeof(s)};
    size_t free_b = 0, total = 0;
    galloc_status_t st = galloc_memory_stats(a, &s);
    if (st == GALLOC_OK)
        st = galloc_memory_info(a, &free_b, &total);
    if (st != GALLOC_OK)
        return st;
    int64_t have = s.reserved_bytes[GALLOC_STAT_ALL].current;
    uint64_t want = have >= 0 && size > (uint64_t)have ? size - (uint64_t)have : 0;
    if (want > free_b)
        want = free_b; /* a smaller device could not have cached more */
    void *held[64];
    size_t n = 0;
    for (int b = 63; b >= 0 && st == GALLOC_OK; b--) {
        uint64_t piece = (uint64_t)1 << b;
        if (piece < min_piece || !((want >> b) & 1u))
            continue;
        void *p = NULL;
        st = galloc_malloc(a, (size_t)piece, (galloc_stream_t)stream, &p);
        if (st == GALLOC_OK)
            held[n++] = p;
    }
    if (st == GALLOC_E_OOM) /* only under a memory-fraction cap: cache what fitted */
        st = GALLOC_OK;
    for (size_t i = 0; i < n; i++)
        galloc_free(a, held[i]);
    galloc_status_t rs = galloc_stats_reset_peak(a);
    return st != GALLOC_OK ? st : rs;
}

bool ga_replay_free_stream(ga_event_kind_t kind, uint64_t stream, uint64_t alloc_stream, galloc_stream_t *other)
{
    *other = kind == GA_EV_FREE_PENDING ? GA_REPLAY_SIDE_STREAM : (galloc_stream_t)stream;
    return (kind == GA_EV_FREE_PENDING || stream != GA_STREAM_NONE) && *other != (galloc_stream_t)alloc_stream;
}

galloc_status_t ga_replay_call(galloc_allocator_t *a, ga_event_kind_t kind, uint64_t stream, uint64_t size,
                               double fraction)
{
    galloc_status_t st = GALLOC_E_INVAL;
    switch (kind) {
    case GA_EV_FREE_COMPLETED:
        st = galloc_stream_synchronize(a, GA_REPLAY_SIDE_STREAM);
        return st == GALLOC_E_UNSUPPORTED ? GALLOC_OK : st;
    case GA_EV_STREAM_SYNC:
        st = galloc_stream_synchronize(a, (galloc_stream_t)stream);
        return st == GALLOC_E_UNSUPPORTED ? GALLOC_OK : st;
    case GA_EV_EMPTY_CACHE: return ga_replay_empty_cache(a, size);
    case GA_EV_SET_FRACTION: return galloc_set_memory_fraction(a, fraction);
    default: return st;
    }
}

/* Note tag among the names begun (once each). false when they no longer fit. */
static bool known_add(ga_replay_tags_t *k, const char *tag)
{
    size_t n = strlen(tag), len = strlen(k->names);
    for (const char *s = k->names; *s != '\0';) { /* already there? */
        size_t m = strcspn(s, ",");
        if (m == n && memcmp(s, tag, n) == 0)
            return true;
        s += m + (s[m] == ',');
    }
    if (len + n + 2 > sizeof(k->names))
        return false;
    snprintf(k->names + len, sizeof(k->names) - len, "%s%s", len ? "," : "", tag);
    return true;
}

galloc_status_t ga_replay_tag_call(galloc_allocator_t *a, ga_event_kind_t kind, const char *tags, const char *offload,
                                   ga_replay_tags_t *known)
{
    const char *list = tags != NULL && strcmp(tags, "*") == 0 ? NULL : tags; /* NULL: every tag */
    galloc_status_t st;
    switch (kind) {
    case GA_EV_TAG_BEGIN:
        st = galloc_tag_begin(a, tags);
        if (st == GALLOC_OK && !known_add(known, tags))
            known->overflow = true;
        return st;
    case GA_EV_TAG_END: return galloc_tag_end(a, tags);
    case GA_EV_SLEEP:
        /* galloc_sleep's offload_tags has no "every tag" (NULL is none):
         * every tag is every tag the trace has begun. */
        if (offload != NULL && strcmp(offload, "*") == 0) {
            if (known->overflow)
                return GALLOC_E_NOMEM;
            offload = known->names;
        }
        return galloc_sleep(a, list, offload);
    case GA_EV_WAKE: return galloc_wake(a, list);
    default: return GALLOC_E_INVAL;
    }
}

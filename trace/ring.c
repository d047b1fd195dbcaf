/*
 * ring.c: start, grow, clear and stop the trace ring (see ring.h for the
 * PyTorch semantics reproduced and the invariants).
 */
#include "trace/ring.h"

#include <stdlib.h>
#include <string.h>

static const char *const action_names[GA_TRACE_ACTION_COUNT] = {
    [GA_TRACE_ALLOC] = "alloc",
    [GA_TRACE_FREE_REQUESTED] = "free_requested",
    [GA_TRACE_FREE_COMPLETED] = "free_completed",
    [GA_TRACE_SEGMENT_ALLOC] = "segment_alloc",
    [GA_TRACE_SEGMENT_FREE] = "segment_free",
    [GA_TRACE_SEGMENT_MAP] = "segment_map",
    [GA_TRACE_SEGMENT_UNMAP] = "segment_unmap",
    [GA_TRACE_SNAPSHOT] = "snapshot",
    [GA_TRACE_OOM] = "oom",
    [GA_TRACE_ANNOTATE] = "annotate",
};

const char *ga_trace_action_name(ga_trace_action_t action)
{
    if ((unsigned)action >= GA_TRACE_ACTION_COUNT)
        return "unknown";
    return action_names[action];
}

void ga_trace_ring_init(ga_trace_ring_t *r)
{
    memset(r, 0, sizeof(*r));
}

galloc_status_t ga_trace_ring_start(ga_trace_ring_t *r, size_t max_entries, size_t initial)
{
    if (max_entries == 0)
        max_entries = 1;
    size_t cap = max_entries <= GA_TRACE_RING_PREALLOC_MAX ? max_entries : GA_TRACE_RING_GROW_START;
    if (initial != 0 && initial < cap)
        cap = initial;
    ga_trace_entry_t *buf = malloc(cap * sizeof(*buf));
    if (buf == NULL)
        return GALLOC_E_NOMEM;
    free(r->buf);
    r->buf = buf;
    r->cap = cap;
    r->max = max_entries;
    r->count = 0;
    r->next = 0;
    r->overwritten = 0;
    r->grow_failures = 0;
    return GALLOC_OK;
}

void ga_trace_ring_stop(ga_trace_ring_t *r)
{
    free(r->buf);
    ga_trace_ring_init(r);
}

void ga_trace_ring_clear(ga_trace_ring_t *r)
{
    r->count = 0;
    r->next = 0;
    r->overwritten = 0;
}

ga_trace_entry_t *ga_trace_ring_push_slow(ga_trace_ring_t *r)
{
    if (r->max == 0)
        return NULL; /* stopped: the caller records nothing */
    /* Here count == cap < max and next == 0 (the ring has not wrapped, since
     * it wraps only at max), so growing is a plain realloc of a linear array. */
    size_t want = r->cap > r->max / 2 ? r->max : r->cap * 2;
    ga_trace_entry_t *buf = NULL;
    if (want <= SIZE_MAX / sizeof(*buf))
        buf = realloc(r->buf, want * sizeof(*buf));
    if (buf == NULL) {
        /* Keep recording: the ring now wraps at the slots it has, losing the
         * oldest entries instead of failing the allocator's operation. */
        r->grow_failures++;
        r->max = r->cap;
        return ga_trace_ring_push(r);
    }
    r->buf = buf;
    r->cap = want;
    return &r->buf[r->count++];
}

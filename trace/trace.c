/*
 * trace.c: the recorder's setup and its cold operations (see trace.h); the
 * per-event ga_trace_record is inline in trace.h.
 */
#include "trace/trace.h"

#include <string.h>
#include <time.h>

/* A skip_actions bit is 1 << the action's ga_trace_action_t, so that
 * ga_trace_push tests it with one shift. */
_Static_assert(GALLOC_SKIP_ALLOC == 1u << GA_TRACE_ALLOC &&
                   GALLOC_SKIP_FREE_REQUESTED == 1u << GA_TRACE_FREE_REQUESTED &&
                   GALLOC_SKIP_FREE_COMPLETED == 1u << GA_TRACE_FREE_COMPLETED &&
                   GALLOC_SKIP_SEGMENT_ALLOC == 1u << GA_TRACE_SEGMENT_ALLOC &&
                   GALLOC_SKIP_SEGMENT_FREE == 1u << GA_TRACE_SEGMENT_FREE &&
                   GALLOC_SKIP_SNAPSHOT == 1u << GA_TRACE_SNAPSHOT && GALLOC_SKIP_OOM == 1u << GA_TRACE_OOM,
               "skip bits follow the action numbers");
_Static_assert(sizeof(ga_trace_entry_t) == 64, "an entry is one cache line");

void ga_trace_init(ga_trace_t *t, int device)
{
    static uint64_t instances; /* 0 is never an instance: metadata.c's "no cache" */
    memset(t, 0, sizeof(*t));
    t->instance = __atomic_add_fetch(&instances, 1, __ATOMIC_RELAXED);
    t->device = device;
    t->enabled = GALLOC_HISTORY_NONE;
    t->context = GALLOC_CONTEXT_NONE;
    t->stacks_mode = GALLOC_STACKS_PYTHON;
    ga_trace_ring_init(&t->events);
    ga_trace_ring_init(&t->annotations);
    ga_trace_strtab_init(&t->strings);
    ga_trace_stacks_init(&t->stacks, &t->strings);
}

void ga_trace_destroy(ga_trace_t *t)
{
    ga_trace_ring_stop(&t->events);
    ga_trace_ring_stop(&t->annotations);
    ga_trace_stacks_free(&t->stacks);
    ga_trace_strtab_free(&t->strings);
    t->enabled = GALLOC_HISTORY_NONE;
    t->context = GALLOC_CONTEXT_NONE;
}

int64_t ga_trace_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void ga_trace_set_frames_fn(ga_trace_t *t, ga_trace_frames_fn fn, void *ctx)
{
    t->frames_fn = fn;
    t->frames_ctx = ctx;
}

void ga_trace_set_clock(ga_trace_t *t, ga_trace_clock_fn fn, void *ctx)
{
    t->clock_fn = fn;
    t->clock_ctx = ctx;
}

void ga_trace_clear(ga_trace_t *t)
{
    ga_trace_ring_clear(&t->events);
    ga_trace_ring_clear(&t->annotations);
}

galloc_status_t ga_trace_set_source(ga_trace_t *t, const galloc_trace_source_t *src, bool *mode_changed)
{
    if (src != NULL && (src->struct_size < offsetof(galloc_trace_source_t, frames) + sizeof(src->frames) ||
                        src->token == NULL || src->frames == NULL))
        return GALLOC_E_INVAL;
    bool changed = ga_trace_tokens(t) != (src != NULL);
    /* Entries recorded in one mode would be read in the other: a stack id
     * written as a token's frames, or a token looked up as a stack. */
    if (changed)
        ga_trace_clear(t);
    memset(&t->source, 0, sizeof(t->source));
    if (src != NULL) {
        t->source.struct_size = sizeof(t->source);
        t->source.ctx = src->ctx;
        t->source.token = src->token;
        t->source.time_us = src->time_us;
        t->source.frames = src->frames;
        if (src->struct_size >= offsetof(galloc_trace_source_t, entry) + sizeof(src->entry))
            t->source.entry = src->entry;
    }
    if (mode_changed != NULL)
        *mode_changed = changed;
    return GALLOC_OK;
}

/* token's time for an entry of action; t's own clock for token 0 or a source without times. */
static int64_t token_time_us(const ga_trace_t *t, uint32_t token, ga_trace_action_t action)
{
    const galloc_trace_source_t *src = &t->source;
    if (token != 0 && src->time_us != NULL)
        return src->time_us(src->ctx, token, ga_trace_action_name(action));
    /* A call the replayer named no event for (or no times at all). */
    return t->clock_fn != NULL ? t->clock_fn(t->clock_ctx) : ga_trace_now_us();
}

int64_t ga_trace_source_time_us(const ga_trace_t *t, ga_trace_action_t action)
{
    const galloc_trace_source_t *src = &t->source;
    return token_time_us(t, src->time_us != NULL ? src->token(src->ctx) : 0, action);
}

void ga_trace_source_entry(const ga_trace_t *t, ga_trace_entry_t *e, ga_trace_action_t action, uint32_t stack_id)
{
    const galloc_trace_source_t *src = &t->source;
    uint32_t token = src->entry != NULL ? src->entry(src->ctx, ga_trace_action_name(action), e->addr, e->size) : 0;
    if (token == 0) {
        e->time_us = ga_trace_source_time_us(t, action);
        e->stack_id = t->context >= GALLOC_CONTEXT_ALLOC ? stack_id : 0;
        return;
    }
    e->time_us = token_time_us(t, token, action);
    e->stack_id = t->context >= GALLOC_CONTEXT_ALLOC ? token : 0;
}

static void stop(ga_trace_t *t)
{
    ga_trace_ring_stop(&t->events);
    ga_trace_ring_stop(&t->annotations);
    t->enabled = GALLOC_HISTORY_NONE;
    t->context = GALLOC_CONTEXT_NONE;
    t->max_entries = 0;
    t->skip = 0;
}

const char *ga_trace_configure_why(galloc_status_t st)
{
    return st == GALLOC_E_INVAL ? "bad options (struct_size, an enum value out of range or an unknown skip_actions bit)"
                                : galloc_strerror(st);
}

galloc_status_t ga_trace_configure(ga_trace_t *t, const galloc_history_options_t *opt)
{
    if (opt == NULL) {
        stop(t);
        return GALLOC_OK;
    }
    if (opt->struct_size < offsetof(galloc_history_options_t, max_entries) + sizeof(opt->max_entries))
        return GALLOC_E_INVAL;
    if ((unsigned)opt->enabled > GALLOC_HISTORY_ALL || (unsigned)opt->context > GALLOC_CONTEXT_ALL ||
        (unsigned)opt->stacks > GALLOC_STACKS_ALL)
        return GALLOC_E_INVAL;
    /* skip_actions came later: a caller compiled before it skips nothing. */
    uint32_t skip = opt->struct_size >= offsetof(galloc_history_options_t, skip_actions) + sizeof(opt->skip_actions)
                        ? opt->skip_actions
                        : 0;
    if ((skip & ~(uint32_t)GALLOC_SKIP_ALL) != 0)
        return GALLOC_E_INVAL;
    if (opt->enabled == GALLOC_HISTORY_NONE) {
        stop(t);
        return GALLOC_OK;
    }
    size_t max = opt->max_entries == 0 ? SIZE_MAX : opt->max_entries;
    bool want_trace = opt->enabled == GALLOC_HISTORY_ALL;
    bool restart = want_trace && (t->enabled != GALLOC_HISTORY_ALL || t->max_entries != max);
    if (restart) {
        /* Allocate both new rings before touching the old ones, so that a
         * failure leaves recording exactly as it was. */
        ga_trace_ring_t events, annotations;
        ga_trace_ring_init(&events);
        ga_trace_ring_init(&annotations);
        if (ga_trace_ring_start(&events, max, 0) != GALLOC_OK)
            return GALLOC_E_NOMEM;
        if (ga_trace_ring_start(&annotations, max, GA_TRACE_ANNOTATION_PREALLOC) != GALLOC_OK) {
            ga_trace_ring_stop(&events);
            return GALLOC_E_NOMEM;
        }
        ga_trace_ring_stop(&t->events);
        ga_trace_ring_stop(&t->annotations);
        t->events = events;
        t->annotations = annotations;
    } else if (!want_trace) {
        ga_trace_ring_stop(&t->events);
        ga_trace_ring_stop(&t->annotations);
    }
    t->enabled = opt->enabled;
    t->skip = skip; /* replaced, not merged: PyTorch's recordHistory clears the set first */
    t->context = opt->context;
    t->stacks_mode = opt->stacks;
    t->max_entries = want_trace ? max : 0;
    if (t->context != GALLOC_CONTEXT_NONE && t->stacks_mode == GALLOC_STACKS_ALL) {
        /* Warm the unwinder on this thread now rather than on the first
         * allocation (PyTorch calls unwind::unwind() here for the same reason). */
        ga_trace_raw_stack_t raw;
        ga_trace_stack_capture_raw(&raw, true, 0, NULL, NULL);
    }
    return GALLOC_OK;
}

__attribute__((noinline)) uint32_t ga_trace_capture(ga_trace_t *t, unsigned skip)
{
    if (t->enabled == GALLOC_HISTORY_NONE || t->context == GALLOC_CONTEXT_NONE)
        return 0;
    /* A replay names the recorded event; its frames come from the source
     * when a snapshot is written, of any depth and length. */
    if (ga_trace_tokens(t))
        return t->source.token(t->source.ctx);
    ga_trace_raw_stack_t raw;
    ga_trace_stack_capture_raw(&raw, ga_trace_capture_native(t), skip + 1, t->frames_fn, t->frames_ctx);
    return ga_trace_stacks_intern(&t->stacks, &raw);
}

uint32_t ga_trace_intern(ga_trace_t *t, const ga_trace_raw_stack_t *raw)
{
    if (t->enabled == GALLOC_HISTORY_NONE || t->context == GALLOC_CONTEXT_NONE)
        return 0;
    if (ga_trace_tokens(t)) /* stored ids are tokens: never mix a stack id in */
        return t->source.token(t->source.ctx);
    return ga_trace_stacks_intern(&t->stacks, raw);
}

void ga_trace_record_oom(ga_trace_t *t, uint64_t size, uint64_t stream, uint64_t device_free, const int64_t *mempool_id,
                         uint32_t stack_id)
{
    ga_trace_entry_t *e = ga_trace_push(t, GA_TRACE_OOM, 0, size, stream, mempool_id, stack_id);
    if (e != NULL)
        e->extra.device_free = device_free;
}

void ga_trace_record_snapshot(ga_trace_t *t, uint64_t active)
{
    /* PyTorch records it without a context; a replay's is the recorded one. */
    uint32_t stack = ga_trace_tokens(t) ? ga_trace_capture(t, 0) : 0;
    ga_trace_record(t, GA_TRACE_SNAPSHOT, 0, active, 0, NULL, stack);
}

galloc_status_t ga_trace_annotate(ga_trace_t *t, const char *stage, const char *name)
{
    if (!ga_trace_recording(t))
        return GALLOC_OK;
    uint32_t stage_id, name_id;
    if (ga_trace_strtab_intern(&t->strings, stage, stage != NULL ? strlen(stage) : 0, &stage_id) != GALLOC_OK ||
        ga_trace_strtab_intern(&t->strings, name, name != NULL ? strlen(name) : 0, &name_id) != GALLOC_OK)
        return GALLOC_E_NOMEM;
    ga_trace_entry_t *e = ga_trace_ring_push(&t->annotations);
    if (e == NULL)
        return GALLOC_OK;
    memset(e, 0, sizeof(*e));
    e->action = GA_TRACE_ANNOTATE;
    e->extra.annotation.name = name_id;
    e->extra.annotation.stage = stage_id;
    e->time_us = ga_trace_time_us(t, GA_TRACE_ANNOTATE);
    return GALLOC_OK;
}

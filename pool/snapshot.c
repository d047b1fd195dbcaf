/*
 * snapshot.c: the pool's state as PyTorch's snapshot dictionary
 * (DeviceCachingAllocator::snapshot in c10/cuda/CUDACachingAllocator.cpp),
 * built through trace/snapshot.h and written as pickle or JSON, plus the
 * history switches, trace source and annotations that feed it.
 *
 * Segments and blocks come from the pool's one walk (walk.h): expandable
 * segments as PyTorch reports them, one segment per contiguous mapped range
 * (unmapped address space is not memory), and a sleeping tag's segments as
 * they were before the sleep.
 */
#include "pool/ops.h"
#include "pool/walk.h"
#include "trace/snapshot.h"
#include "trace/summary.h"

/* The walk's states are PyTorch's snapshot states, value for value. */
_Static_assert((int)GALLOC_BLOCK_FREE == (int)GA_SNAPSHOT_INACTIVE &&
                   (int)GALLOC_BLOCK_ALLOCATED == (int)GA_SNAPSHOT_ACTIVE_ALLOCATED &&
                   (int)GALLOC_BLOCK_PENDING_FREE == (int)GA_SNAPSHOT_ACTIVE_PENDING_FREE,
               "block states");

/* A snapshot being filled from the walk. */
typedef struct add_ctx {
    ga_pool_t *p;       /* the pool walked */
    ga_snapshot_t *s;   /* the snapshot built */
    galloc_status_t st; /* the first failure */
} add_ctx_t;

/* One run (walk.h) as one snapshot segment and its blocks. */
static int add_run(void *ctx, const ga_pool_run_t *run)
{
    add_ctx_t *c = ctx;
    const ga_segment_t *seg = run->seg;
    galloc_mempool_id_t id = ga_pool_segment_pool_id(seg);
    ga_snapshot_segment_info_t info = {
        .device = c->p->device,
        .address = run->addr,
        .stream = seg->stream,
        .is_large = !seg->pool->is_small,
        .is_expandable = seg->expandable,
        .pool_id = {(int64_t)id.a, (int64_t)id.b},
        .stack_id = seg->stack_id,
    };
    c->st = ga_snapshot_segment(c->s, &info);
    for (const ga_block_t *b = run->first; b != run->end && c->st == GALLOC_OK; b = b->next)
        c->st = ga_snapshot_block(c->s, b->size, b->requested, (ga_snapshot_block_state_t)ga_pool_block_state(b),
                                  b->stack_id);
    return c->st != GALLOC_OK;
}

static galloc_status_t add_settings(ga_pool_t *p, ga_snapshot_t *s)
{
    char conf[1024];
    ga_conf_format_pytorch(&p->conf, conf, sizeof(conf)); /* PyTorch's keys only: no sim_capacity */
    ga_snapshot_settings_t set = {
        .alloc_conf = conf,
        .max_split_size = (int64_t)p->conf.max_split_size,
        .garbage_collection_threshold = p->conf.garbage_collection_threshold,
        .expandable_segments = p->conf.expandable_segments,
        .pinned_num_register_threads = p->conf.pinned_num_register_threads,
        .release_lock_on_cudamalloc = p->conf.release_lock_on_cudamalloc,
        .pinned_use_cuda_host_register = p->conf.pinned_use_cuda_host_register,
        .graph_capture_record_stream_reuse = p->conf.graph_capture_record_stream_reuse,
        .roundup_count = GA_CONF_DIVISION_INTERVALS,
    };
    for (size_t i = 0; i < GA_CONF_DIVISION_INTERVALS; i++)
        set.roundup_power2_divisions[i] = p->conf.roundup_power2_divisions[i];
    return ga_snapshot_settings(s, &set);
}

galloc_status_t ga_pool_snapshot(void *impl, const char *path, galloc_snapshot_format_t format)
{
    ga_pool_t *p = impl;
    ga_snapshot_t s;
    ga_snapshot_init(&s, &p->trace, p->device);
    /* A sleeping tag's segments as before the sleep (galloc_sleep.h). */
    add_ctx_t c = {.p = p, .s = &s, .st = GALLOC_OK};
    (void)ga_pool_walk(p, GA_WALK_AS_BEFORE, add_run, &c);
    galloc_status_t st = c.st;
    if (st == GALLOC_OK)
        st = add_settings(p, &s);
    char msg[GALLOC_ERROR_MAX];
    st = ga_snapshot_commit(&s, st, &p->trace, path, format, msg, sizeof(msg));
    return st == GALLOC_OK ? GALLOC_OK : ga_fail(p->err, st, "%s", msg);
}

/* Sum a run's active blocks (allocated or pending free) into *ctx. */
static int add_active(void *ctx, const ga_pool_run_t *run)
{
    uint64_t *active = ctx;
    for (const ga_block_t *b = run->first; b != run->end; b = b->next)
        if (ga_pool_block_state(b) != GALLOC_BLOCK_FREE)
            *active += b->size;
    return 0;
}

galloc_status_t ga_pool_snapshot_entry(void *impl)
{
    ga_pool_t *p = impl;
    if (!ga_trace_recording(&p->trace))
        return GALLOC_OK;
    uint64_t active = 0; /* what a snapshot would say: the same walk */
    (void)ga_pool_walk(p, GA_WALK_AS_BEFORE, add_active, &active);
    ga_trace_record_snapshot(&p->trace, active);
    return GALLOC_OK;
}

galloc_status_t ga_pool_record_history(void *impl, const galloc_history_options_t *opt)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_trace_configure(&p->trace, opt);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "record_memory_history: %s", ga_trace_configure_why(st));
    return GALLOC_OK;
}

galloc_status_t ga_pool_annotate(void *impl, const char *stage, const char *name)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_trace_annotate(&p->trace, stage, name);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "record_annotation: %s", galloc_strerror(st));
    return GALLOC_OK;
}

void ga_pool_set_frames(void *impl, galloc_frames_fn fn, void *ctx)
{
    ga_pool_t *p = impl;
    ga_trace_set_frames_fn(&p->trace, fn, ctx);
}

galloc_status_t ga_pool_set_trace_source(void *impl, const galloc_trace_source_t *src)
{
    ga_pool_t *p = impl;
    bool changed = false;
    galloc_status_t st = ga_trace_set_source(&p->trace, src, &changed);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "set_trace_source: struct_size too small, or token or frames NULL");
    if (!changed)
        return GALLOC_OK;
    /* The ids blocks and segments hold now mean something else (stack ids
     * or tokens): they lose their frames rather than show another's. Every
     * segment, a sleeping tag's too, stays on the list. */
    for (ga_segment_t *seg = p->segments; seg != NULL; seg = seg->next) {
        seg->stack_id = 0;
        for (ga_block_t *b = seg->head; b != NULL; b = b->next)
            b->stack_id = 0;
    }
    return GALLOC_OK;
}

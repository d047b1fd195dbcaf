/*
 * user.c: the user allocator (galloc_user.h) behind the allocator ops table:
 * the caller's malloc_fn/free_fn do the allocating, galloc keeps PyTorch's
 * counters, the history and the snapshot around them, the way PyTorch's
 * CUDAPluggableAllocator keeps allocation_metadata_ around its alloc_fn_ and
 * free_fn_ (torch/csrc/cuda/CUDAPluggableAllocator.cpp) but with the stats
 * PyTorch does not give a pluggable allocator.
 *
 * Each allocation is one segment holding one block (see galloc_user.h for
 * what every stat means). Invariant, checked by galloc_check: for each pool
 * index, the current values of allocation, segment and active equal the
 * number of live pointers, and those of allocated_bytes, reserved_bytes,
 * active_bytes and requested_bytes equal the sum of their sizes.
 *
 * The file's external symbols are ga_allocator_user and ga_user_create, which
 * galloc_allocator_create_user (front/allocator.c) calls to build the state.
 *
 * Locking: every ops member runs under the allocator's lock (front/allocator.c),
 * and so do the hooks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <galloc/galloc_user.h>
#include "allocators/allocator_ops.h"
#include "allocators/user/user.h"
#include "stats/stats.h"
#include "trace/snapshot.h"
#include "trace/trace.h"
#include "util/addrmap.h"
#include "util/err.h"

/* PyTorch's kSmallSize: blocks up to 1 MiB belong to the small pool. */
#define SMALL_SIZE ((size_t)1 << 20)

/* A live allocation (PyTorch's allocation_metadata_ entry), in the map. */
typedef struct user_ptr {
    uintptr_t addr;         /* the pointer malloc_fn returned (never 0): the key */
    size_t size;            /* the size asked for */
    galloc_stream_t stream; /* the stream it was allocated on */
    uint32_t stack_id;      /* trace stack of the allocation (0 = none) */
} user_ptr_t;

typedef struct user_impl {
    galloc_user_allocator_t u; /* the caller's table, members past its struct_size zeroed */
    char name[64];             /* u.name's copy (u.name points here) */
    int device;                /* passed to the hooks */
    ga_err_t *err;             /* the allocator's error sink */
    ga_addrmap_t live;         /* live pointers (user_ptr_t) */
    galloc_stats_t stats;      /* PyTorch's counters, see galloc_user.h */
    ga_trace_t trace;          /* history; the impl is heap-allocated, so it never moves */
} user_impl_t;

static galloc_stat_pool_t pool_of(size_t size)
{
    return size <= SMALL_SIZE ? GALLOC_STAT_SMALL_POOL : GALLOC_STAT_LARGE_POOL;
}

/* Count one allocation in (+1) or out (-1) as a block filling its own segment. */
static void account(user_impl_t *p, size_t size, int sign)
{
    galloc_stats_t *s = &p->stats;
    galloc_stat_pool_t pool = pool_of(size);
    int64_t n = sign * (int64_t)size;
    ga_stat_update(s->allocation, pool, sign);
    ga_stat_update(s->segment, pool, sign);
    ga_stat_update(s->active, pool, sign);
    ga_stat_update(s->allocated_bytes, pool, n);
    ga_stat_update(s->reserved_bytes, pool, n);
    ga_stat_update(s->active_bytes, pool, n);
    ga_stat_update(s->requested_bytes, pool, n);
    if (sign > 0)
        s->num_device_alloc++;
    else
        s->num_device_free++;
}

static void user_destroy(void *impl)
{
    user_impl_t *p = impl;
    /* Live pointers die with the allocator (as galloc_allocator_destroy says):
     * hand each back so the user allocator does not leak them. */
    for (size_t i = 0; i < p->live.cap; i++) {
        const user_ptr_t *e = ga_addrmap_slot(&p->live, i);
        if (e != NULL)
            p->u.free_fn(p->u.ctx, (void *)e->addr, e->size, p->device, e->stream);
    }
    ga_addrmap_destroy(&p->live);
    ga_trace_destroy(&p->trace);
    free(p);
}

static galloc_status_t user_malloc(void *impl, size_t size, galloc_stream_t stream, void **ptr)
{
    user_impl_t *p = impl;
    if (size == 0)
        return GALLOC_OK; /* *ptr is already NULL: nothing is counted, as in PyTorch */
    /* Room first: once malloc_fn has run, nothing may fail. */
    if (ga_addrmap_reserve(&p->live, 1) != GALLOC_OK)
        return ga_fail(p->err, GALLOC_E_NOMEM, "out of host memory for allocator bookkeeping");
    uint32_t stack = ga_trace_wants_stack(&p->trace, false) ? ga_trace_capture(&p->trace, 1) : 0;
    void *r = p->u.malloc_fn(p->u.ctx, size, p->device, stream);
    if (r == NULL) {
        p->stats.num_ooms++;
        ga_trace_record_oom(&p->trace, size, stream, 0, NULL, stack);
        return ga_fail(p->err, GALLOC_E_OOM, "user allocator '%s' could not allocate %zu bytes on device %d", p->name,
                       size, p->device);
    }
    if (ga_addrmap_find(&p->live, (uintptr_t)r) != NULL)
        return ga_fail(p->err, GALLOC_E_CORRUPT, "user allocator '%s' returned %p, which is already live", p->name, r);
    user_ptr_t *e = ga_addrmap_insert(&p->live, (uintptr_t)r);
    *e = (user_ptr_t){(uintptr_t)r, size, stream, stack};
    account(p, size, +1);
    /* PyTorch's order for a fresh segment: the device allocation, then the block. */
    ga_trace_record(&p->trace, GA_TRACE_SEGMENT_ALLOC, e->addr, size, stream, NULL, stack);
    ga_trace_record(&p->trace, GA_TRACE_ALLOC, e->addr, size, stream, NULL, stack);
    *ptr = r;
    return GALLOC_OK;
}

static galloc_status_t user_free(void *impl, void *ptr)
{
    user_impl_t *p = impl;
    if (ptr == NULL)
        return GALLOC_OK;
    user_ptr_t *found = ga_addrmap_find(&p->live, (uintptr_t)ptr);
    if (found == NULL)
        return ga_fail(p->err, GALLOC_E_NOT_OWNED, "free of %p: not a live allocation of user allocator '%s'", ptr,
                       p->name);
    user_ptr_t e = *found;
    uint32_t stack = ga_trace_wants_stack(&p->trace, true) ? ga_trace_capture(&p->trace, 1) : 0;
    ga_trace_record(&p->trace, GA_TRACE_FREE_REQUESTED, e.addr, e.size, e.stream, NULL, stack);
    p->u.free_fn(p->u.ctx, ptr, e.size, p->device, e.stream);
    ga_addrmap_remove(&p->live, found);
    account(p, e.size, -1);
    /* No stream events to wait for and no cache: the block completes and its
     * segment goes back at once. */
    ga_trace_record(&p->trace, GA_TRACE_FREE_COMPLETED, e.addr, e.size, e.stream, NULL, stack);
    ga_trace_record(&p->trace, GA_TRACE_SEGMENT_FREE, e.addr, e.size, e.stream, NULL, stack);
    return GALLOC_OK;
}

/* The size asked for: the whole block, as allocated_bytes counts it. */
static galloc_status_t user_usable_size(void *impl, const void *ptr, size_t *size)
{
    user_impl_t *p = impl;
    const user_ptr_t *e = ga_addrmap_find(&p->live, (uintptr_t)ptr);
    if (e == NULL)
        return ga_fail(p->err, GALLOC_E_NOT_OWNED, "usable_size of %p: not a live allocation of user allocator '%s'",
                       ptr, p->name);
    *size = e->size;
    return GALLOC_OK;
}

static galloc_status_t user_empty_cache(void *impl)
{
    user_impl_t *p = impl;
    if (p->u.empty_cache_fn != NULL)
        p->u.empty_cache_fn(p->u.ctx, p->device);
    return GALLOC_OK;
}

static galloc_status_t user_record_stream(void *impl, void *ptr, galloc_stream_t stream)
{
    user_impl_t *p = impl;
    if (ga_addrmap_find(&p->live, (uintptr_t)ptr) == NULL)
        return ga_fail(p->err, GALLOC_E_NOT_OWNED, "record_stream of %p: not a live allocation of '%s'", ptr, p->name);
    /* Without a hook there is nothing to do: PyTorch's pluggable allocator
     * also ignores recordStream when no record_stream_fn is set. */
    if (p->u.record_stream_fn != NULL)
        p->u.record_stream_fn(p->u.ctx, ptr, stream);
    return GALLOC_OK;
}

static galloc_status_t user_stream_synchronize(void *impl, galloc_stream_t stream)
{
    user_impl_t *p = impl;
    return ga_fail(p->err, GALLOC_E_UNSUPPORTED, "user allocator '%s' has no device streams (stream %#lx)", p->name,
                   (unsigned long)stream);
}

static galloc_status_t user_set_fraction(void *impl, double fraction)
{
    user_impl_t *p = impl;
    if (!(fraction >= 0.0 && fraction <= 1.0))
        return ga_fail(p->err, GALLOC_E_INVAL, "memory fraction %g is not in [0, 1]", fraction);
    return ga_fail(p->err, GALLOC_E_UNSUPPORTED, "user allocator '%s' has no device total to take a fraction of",
                   p->name);
}

static galloc_status_t user_memory_info(void *impl, size_t *free_bytes, size_t *total_bytes)
{
    user_impl_t *p = impl;
    (void)free_bytes;
    (void)total_bytes;
    return ga_fail(p->err, GALLOC_E_UNSUPPORTED, "user allocator '%s' has no device to query", p->name);
}

static void user_stats(void *impl, galloc_stats_t *out)
{
    user_impl_t *p = impl;
    ga_stats_copy(out, &p->stats);
}

static void user_reset_peak(void *impl)
{
    ga_stats_reset_peak(&((user_impl_t *)impl)->stats);
}

static void user_reset_accumulated(void *impl)
{
    ga_stats_reset_accumulated(&((user_impl_t *)impl)->stats);
}

static galloc_status_t user_check(void *impl)
{
    user_impl_t *p = impl;
    int64_t count[GALLOC_STAT_POOLS] = {0}, bytes[GALLOC_STAT_POOLS] = {0};
    if (!ga_addrmap_valid(&p->live))
        return ga_fail(p->err, GALLOC_E_CORRUPT, "the map of %zu live pointers is inconsistent",
                       ga_addrmap_count(&p->live));
    for (size_t i = 0; i < p->live.cap; i++) {
        const user_ptr_t *e = ga_addrmap_slot(&p->live, i);
        if (e == NULL)
            continue;
        galloc_stat_pool_t pool = pool_of(e->size);
        count[GALLOC_STAT_ALL]++;
        count[pool]++;
        bytes[GALLOC_STAT_ALL] += (int64_t)e->size;
        bytes[pool] += (int64_t)e->size;
    }
    const galloc_stats_t *s = &p->stats;
    for (int i = 0; i < GALLOC_STAT_POOLS; i++) {
        const galloc_stat_t *counts[] = {&s->allocation[i], &s->segment[i], &s->active[i]};
        const galloc_stat_t *sizes[] = {&s->allocated_bytes[i], &s->reserved_bytes[i], &s->active_bytes[i],
                                        &s->requested_bytes[i]};
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
            if (counts[k]->current != count[i])
                return ga_fail(p->err, GALLOC_E_CORRUPT, "pool %d: a count stat is %lld, live pointers %lld", i,
                               (long long)counts[k]->current, (long long)count[i]);
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
            if (sizes[k]->current != bytes[i])
                return ga_fail(p->err, GALLOC_E_CORRUPT, "pool %d: a bytes stat is %lld, live bytes %lld", i,
                               (long long)sizes[k]->current, (long long)bytes[i]);
    }
    return GALLOC_OK;
}

static galloc_status_t user_record_history(void *impl, const galloc_history_options_t *opt)
{
    user_impl_t *p = impl;
    galloc_status_t st = ga_trace_configure(&p->trace, opt);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "record_memory_history: %s", ga_trace_configure_why(st));
    return GALLOC_OK;
}

static galloc_status_t user_annotate(void *impl, const char *stage, const char *name)
{
    user_impl_t *p = impl;
    galloc_status_t st = ga_trace_annotate(&p->trace, stage, name);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "record_annotation: %s", galloc_strerror(st));
    return GALLOC_OK;
}

static void user_set_frames(void *impl, galloc_frames_fn fn, void *ctx)
{
    ga_trace_set_frames_fn(&((user_impl_t *)impl)->trace, fn, ctx);
}

static galloc_status_t user_set_trace_source(void *impl, const galloc_trace_source_t *src)
{
    user_impl_t *p = impl;
    bool changed = false;
    galloc_status_t st = ga_trace_set_source(&p->trace, src, &changed);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "set_trace_source: struct_size too small, or token or frames NULL");
    /* Live pointers' ids now mean something else (stack ids or tokens). */
    for (size_t i = 0; changed && i < p->live.cap; i++) {
        user_ptr_t *e = ga_addrmap_slot(&p->live, i);
        if (e != NULL)
            e->stack_id = 0;
    }
    return GALLOC_OK;
}

static galloc_status_t user_snapshot_entry(void *impl)
{
    user_impl_t *p = impl;
    if (!ga_trace_recording(&p->trace))
        return GALLOC_OK;
    uint64_t active = 0; /* every live pointer is an allocated block of its own */
    for (size_t i = 0; i < p->live.cap; i++) {
        const user_ptr_t *e = ga_addrmap_slot(&p->live, i);
        if (e != NULL)
            active += e->size;
    }
    ga_trace_record_snapshot(&p->trace, active);
    return GALLOC_OK;
}

static galloc_status_t user_snapshot(void *impl, const char *path, galloc_snapshot_format_t format)
{
    user_impl_t *p = impl;
    ga_snapshot_t s;
    ga_snapshot_init(&s, &p->trace, p->device);
    galloc_status_t st = GALLOC_OK;
    for (size_t i = 0; i < p->live.cap && st == GALLOC_OK; i++) {
        const user_ptr_t *e = ga_addrmap_slot(&p->live, i);
        if (e == NULL)
            continue;
        ga_snapshot_segment_info_t info = {
            .device = p->device,
            .address = e->addr,
            .stream = e->stream,
            .is_large = pool_of(e->size) == GALLOC_STAT_LARGE_POOL,
            .stack_id = e->stack_id,
        };
        st = ga_snapshot_segment(&s, &info);
        if (st == GALLOC_OK)
            st = ga_snapshot_block(&s, e->size, e->size, GA_SNAPSHOT_ACTIVE_ALLOCATED, e->stack_id);
    }
    /* No caching knobs apply: the settings are PyTorch's defaults. */
    ga_snapshot_settings_t set = {
        .alloc_conf = "",
        .max_split_size = -1,
        .pinned_num_register_threads = 1,
    };
    if (st == GALLOC_OK)
        st = ga_snapshot_settings(&s, &set);
    char msg[GALLOC_ERROR_MAX];
    st = ga_snapshot_commit(&s, st, &p->trace, path, format, msg, sizeof(msg));
    return st == GALLOC_OK ? GALLOC_OK : ga_fail(p->err, st, "%s", msg);
}

/* Built by galloc_allocator_create_user through ga_user_create, never
 * selected by a config string: create is NULL. No pool: fragmentation, the mempool members and segments_visit
 * are NULL. */
const ga_allocator_ops_t ga_allocator_user = {
    .name = "user",
    .destroy = user_destroy,
    .malloc = user_malloc,
    .free = user_free,
    .empty_cache = user_empty_cache,
    .record_stream = user_record_stream,
    .stream_synchronize = user_stream_synchronize,
    .set_fraction = user_set_fraction,
    .memory_info = user_memory_info,
    .stats = user_stats,
    .reset_peak = user_reset_peak,
    .reset_accumulated = user_reset_accumulated,
    .check = user_check,
    .record_history = user_record_history,
    .snapshot = user_snapshot,
    .annotate = user_annotate,
    .snapshot_entry = user_snapshot_entry,
    .set_frames = user_set_frames,
    .set_trace_source = user_set_trace_source,
    .usable_size = user_usable_size,
};

/* Bytes a caller's table must cover: everything up to the required free_fn. */
#define USER_V1_MIN_SIZE (offsetof(galloc_user_allocator_t, free_fn) + sizeof(((galloc_user_allocator_t *)0)->free_fn))

static const char *check_table(const galloc_user_allocator_t *u)
{
    if (u->struct_size < USER_V1_MIN_SIZE)
        return "galloc_allocator_create_user: struct_size too small for the required members";
    if (u->version != GALLOC_USER_ALLOCATOR_V1)
        return "galloc_allocator_create_user: unknown version (expected GALLOC_USER_ALLOCATOR_V1)";
    if (u->malloc_fn == NULL || u->free_fn == NULL)
        return "galloc_allocator_create_user: malloc_fn and free_fn are required";
    return NULL;
}

galloc_status_t ga_user_create(const galloc_user_allocator_t *user, int device, ga_err_t *err, void **impl)
{
    *impl = NULL;
    const char *why = check_table(user);
    if (why != NULL)
        return ga_fail(err, GALLOC_E_INVAL, "%s", why);
    user_impl_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return ga_fail(err, GALLOC_E_NOMEM, "out of host memory creating the allocator");
    /* Members past the caller's struct_size stay zero, i.e. NULL hooks. */
    memcpy(&p->u, user, user->struct_size < sizeof(p->u) ? user->struct_size : sizeof(p->u));
    p->u.struct_size = sizeof(p->u);
    snprintf(p->name, sizeof(p->name), "%s", user->name != NULL ? user->name : "user");
    p->u.name = p->name;
    p->device = device;
    p->err = err;
    ga_addrmap_init(&p->live, sizeof(user_ptr_t));
    ga_stats_init(&p->stats, UINT64_MAX);
    ga_trace_init(&p->trace, device);
    *impl = p;
    return GALLOC_OK;
}

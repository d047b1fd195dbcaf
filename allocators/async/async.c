/*
 * async.c: the stream-ordered allocator (backend:cudaMallocAsync) behind the
 * allocator ops table (ga_allocator_async, its only external symbol), as
 * PyTorch's CUDAMallocAsyncAllocator (pytorch/pytorch
 * c10/cuda/CUDAMallocAsyncAllocator.cpp): every malloc is the driver's
 * cuMemAllocAsync on the caller's stream from the device's default pool, every
 * free a cuMemFreeAsync; caching is the driver pool's, whose release threshold
 * the backend raises to UINT64_MAX when the pool is first used
 * (lazy_init_device), so freed memory stays reserved until empty_cache trims it.
 *
 * Per pointer it keeps what PyTorch's PtrUsage keeps: the size, the creation
 * stream and the streams record_stream added. A free with recorded streams
 * must not let the memory be reused before their work is done. PyTorch joins
 * them on device (cudaStreamWaitEvent onto a dummy "unifying" stream, then
 * cudaFreeAsync there); galloc has no stream of its own and no wait-event
 * member yet, so it waits on the host for every recorded stream
 * (stream_synchronize) and then frees on the creation stream, which orders the
 * free after the creation stream's work. Safe, but it blocks the caller.
 *
 * Stats are the driver pool's, as PyTorch's getDeviceStats reports them:
 * allocated_bytes.all and active_bytes.all current/peak = USED_MEM_CURRENT /
 * USED_MEM_HIGH, reserved_bytes.all current/peak = RESERVED_MEM_CURRENT /
 * RESERVED_MEM_HIGH; every other key stays 0 (PyTorch returns a fresh
 * DeviceStats, max_split_size included). reset_peak resets the driver's
 * high-water marks; reset_accumulated does nothing (PyTorch only warns).
 * memory fraction, OOM message and the 1 EB limit are mallocAsync's.
 *
 * It is not a caching pool: no private pools (the mempool members are NULL,
 * so galloc_mempool_* return GALLOC_E_UNSUPPORTED), no history or snapshots,
 * no segments of its own to walk (segments_visit is NULL),
 * and the caching knobs of the config string do not apply (PyTorch ignores
 * them too).
 *
 * Memory: the pointer map and stream-use records grow on the cold path only
 * (when the live count or uses pass their high mark); a steady state of
 * malloc/free allocates no host memory.
 *
 * Locking: the front end holds the allocator's lock around every member.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/allocator_ops.h"
#include "allocators/async/async.h"
#include "backend/backend.h"
#include "stats/stats.h"
#include "util/addrmap.h"
#include "util/err.h"
#include "util/size.h"

#define USE_CHUNK 64

typedef struct async_use {
    galloc_stream_t stream; /* a stream record_stream added */
    struct async_use *next; /* the pointer's list / the free list */
} async_use_t;

typedef struct use_chunk {
    struct use_chunk *next;
    async_use_t uses[USE_CHUNK];
} use_chunk_t;

/* A live allocation (PyTorch's PtrUsage), in the pointer map. */
typedef struct async_ptr {
    uintptr_t addr;         /* the driver's pointer (never 0): the key */
    size_t size;            /* bytes requested */
    galloc_stream_t stream; /* creation stream: the free is ordered on it */
    async_use_t *uses;      /* recorded streams other than the creation stream */
} async_ptr_t;

typedef struct async {
    ga_backend_t *backend;   /* the device (not owned) */
    ga_err_t *err;           /* error sink */
    int device;              /* device index, for messages */
    ga_addrmap_t ptrs;       /* live allocations by address (async_ptr_t) */
    async_use_t *free_uses;  /* recycled use records */
    use_chunk_t *use_chunks; /* every chunk, for destroy */
    uint64_t used_bytes;     /* PyTorch's pytorch_used_bytes: sum of live sizes */
    uint64_t limit;          /* pytorch_memory_limits: UINT64_MAX unless a fraction is set */
    uint64_t pool[4];        /* last pool usage read: reserved cur/high, used cur/high */
} async_t;

/* ---- Life cycle. ---- */

/* The setting in the device's own spelling: PyTorch's ROCm build also takes
 * backend:hipMallocAsync, and a HIP user should read that name back (the sim
 * device speaks as CUDA, see ga_backend_vendor). */
static const char *async_setting(const ga_backend_t *b)
{
    return strcmp(ga_backend_vendor(b), "HIP") == 0 ? "backend:hipMallocAsync" : "backend:cudaMallocAsync";
}

/* Whether the backend has the six stream-ordered calls; if not, msg says which are needed. */
static bool backend_ok(const ga_backend_t *b, char *msg, size_t len)
{
    const galloc_backend_ops_t *ops = b->ops;
    if (GA_BACKEND_HAS(ops, malloc_async) && GA_BACKEND_HAS(ops, free_async) && GA_BACKEND_HAS(ops, pool_trim) &&
        GA_BACKEND_HAS(ops, pool_usage) && GA_BACKEND_HAS(ops, device_synchronize) &&
        GA_BACKEND_HAS(ops, stream_synchronize))
        return true;
    snprintf(msg, len,
             "%s is not available on device backend \"%s\" (it needs stream-ordered "
             "allocation: malloc_async, free_async, pool_trim, pool_usage, device_synchronize and "
             "stream_synchronize)",
             async_setting(b), ops->name);
    return false;
}

static galloc_status_t async_create(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err, void **out)
{
    (void)conf; /* the native-only knobs do not apply; PyTorch ignores them too */
    *out = NULL;
    char why[GALLOC_ERROR_MAX];
    if (!backend_ok(backend, why, sizeof(why)))
        return ga_fail(err, GALLOC_E_UNAVAILABLE, "%s", why);
    async_t *a = calloc(1, sizeof(*a));
    if (a == NULL)
        return ga_fail(err, GALLOC_E_NOMEM, "out of host memory creating the allocator");
    a->backend = backend;
    a->err = err;
    a->device = device;
    a->limit = UINT64_MAX;
    ga_addrmap_init(&a->ptrs, sizeof(async_ptr_t));
    /* The first pool call sets the pool up (release threshold) and shows
     * whether this driver can allocate stream-ordered at all. */
    galloc_status_t st = ga_backend_pool_usage(backend, &a->pool[0], &a->pool[1], &a->pool[2], &a->pool[3]);
    if (st != GALLOC_OK) {
        ga_backend_error_string(backend, why, sizeof(why));
        free(a);
        if (st == GALLOC_E_UNSUPPORTED)
            return ga_fail(err, GALLOC_E_UNAVAILABLE, "%s is not available on device backend \"%s\": %s",
                           async_setting(backend), backend->ops->name, why);
        return ga_fail(err, st, "%s: setting up the device's memory pool failed: %s", async_setting(backend),
                       why[0] ? why : galloc_strerror(st));
    }
    *out = a;
    return GALLOC_OK;
}

/* Wait for every recorded stream, then free on the creation stream (see the
 * file comment). Nothing changes on failure: a retry waits again, harmlessly. */
static galloc_status_t free_ptr(async_t *a, async_ptr_t *e)
{
    char why[256];
    for (async_use_t *u = e->uses; u != NULL; u = u->next) {
        galloc_status_t st = ga_backend_stream_synchronize(a->backend, u->stream);
        if (st != GALLOC_OK) {
            ga_backend_error_string(a->backend, why, sizeof(why));
            return ga_fail(a->err, GALLOC_E_DEVICE, "free: waiting for stream %#lx, which used %#lx, failed: %s",
                           (unsigned long)u->stream, (unsigned long)e->addr, why);
        }
    }
    galloc_status_t st = ga_backend_free_async(a->backend, e->addr, e->stream);
    if (st != GALLOC_OK) {
        ga_backend_error_string(a->backend, why, sizeof(why));
        return ga_fail(a->err, GALLOC_E_DEVICE, "free(%#lx): %s", (unsigned long)e->addr, why);
    }
    async_use_t *u = e->uses;
    while (u != NULL) {
        async_use_t *next = u->next;
        u->next = a->free_uses;
        a->free_uses = u;
        u = next;
    }
    a->used_bytes -= e->size;
    ga_addrmap_remove(&a->ptrs, e);
    return GALLOC_OK;
}

static void async_destroy(void *impl)
{
    async_t *a = impl;
    if (a == NULL)
        return;
    /* The caller's pointers die with the allocator (as for the native pool);
     * whatever the driver refuses here the backend's close releases. */
    for (size_t i = 0; i < a->ptrs.cap; i++) {
        async_ptr_t *e;
        while ((e = ga_addrmap_slot(&a->ptrs, i)) != NULL && free_ptr(a, e) == GALLOC_OK)
            ; /* the shift may move another live entry into slot i */
    }
    if (ga_backend_device_synchronize(a->backend) == GALLOC_OK)
        (void)ga_backend_pool_trim(a->backend, 0);
    while (a->use_chunks != NULL) {
        use_chunk_t *next = a->use_chunks->next;
        free(a->use_chunks);
        a->use_chunks = next;
    }
    ga_addrmap_destroy(&a->ptrs);
    free(a);
}

/* ---- Allocation. ---- */

/* mallocAsync's out-of-memory report, in PyTorch's words and layout. */
static galloc_status_t oom(async_t *a, size_t size)
{
    size_t device_free = 0, device_total = 0;
    (void)ga_backend_mem_info(a->backend, &device_free, &device_total);
    char used[32], req[32], total[32], free_s[32], limit[32];
    ga_format_size(a->used_bytes, used, sizeof(used));
    ga_format_size(size, req, sizeof(req));
    ga_format_size(device_total, total, sizeof(total));
    ga_format_size(device_free, free_s, sizeof(free_s));
    ga_format_size(a->limit, limit, sizeof(limit));
    return ga_fail(a->err, GALLOC_E_OOM,
                   "Allocation on device %d would exceed allowed memory. (out of memory)\n"
                   "Currently allocated     : %s\n"
                   "Requested               : %s\n"
                   "Device limit            : %s\n"
                   "Free (according to CUDA): %s\n"
                   "PyTorch limit (set by user-supplied memory fraction)\n"
                   "                        : %s",
                   a->device, used, req, total, free_s, limit);
}

static galloc_status_t async_malloc(void *impl, size_t size, galloc_stream_t stream, void **out)
{
    async_t *a = impl;
    *out = NULL;
    if (size == 0)
        return GALLOC_OK; /* PyTorch returns a null pointer without a driver call */
    if ((uint64_t)size >= GA_ONE_EXABYTE)
        return ga_fail(a->err, GALLOC_E_OOM, "%s out of memory. Tried to allocate more than 1EB memory.",
                       ga_backend_vendor(a->backend));
    if (ga_addrmap_reserve(&a->ptrs, 1) != GALLOC_OK)
        return ga_fail(a->err, GALLOC_E_NOMEM, "out of host memory for allocator bookkeeping");
    if (a->limit != UINT64_MAX && a->used_bytes + size > a->limit)
        return oom(a, size);
    uintptr_t addr = 0;
    galloc_status_t st = ga_backend_malloc_async(a->backend, size, stream, &addr);
    if (st == GALLOC_E_OOM)
        return oom(a, size);
    if (st != GALLOC_OK) {
        char why[256];
        return ga_fail(a->err, st == GALLOC_E_UNSUPPORTED ? st : GALLOC_E_DEVICE, "malloc(%zu bytes): %s", size,
                       ga_backend_why(a->backend, st, why, sizeof(why)));
    }
    if (ga_addrmap_find(&a->ptrs, addr) != NULL)
        return ga_fail(a->err, GALLOC_E_CORRUPT, "the driver returned %#lx, which is still live", (unsigned long)addr);
    async_ptr_t *e = ga_addrmap_insert(&a->ptrs, addr);
    *e = (async_ptr_t){.addr = addr, .size = size, .stream = stream, .uses = NULL};
    a->used_bytes += size;
    *out = (void *)addr;
    return GALLOC_OK;
}

static galloc_status_t async_free(void *impl, void *ptr)
{
    async_t *a = impl;
    if (ptr == NULL)
        return GALLOC_OK;
    async_ptr_t *e = ga_addrmap_find(&a->ptrs, (uintptr_t)ptr);
    if (e == NULL)
        return ga_fail(a->err, GALLOC_E_NOT_OWNED, "free: %p is not a live allocation of this allocator", ptr);
    return free_ptr(a, e);
}

/* The bytes requested: the driver pool's USED_MEM counts what was asked for. */
static galloc_status_t async_usable_size(void *impl, const void *ptr, size_t *size)
{
    async_t *a = impl;
    const async_ptr_t *e = ga_addrmap_find(&a->ptrs, (uintptr_t)ptr);
    if (e == NULL)
        return ga_fail(a->err, GALLOC_E_NOT_OWNED, "usable_size: %p is not a live allocation of this allocator", ptr);
    *size = e->size;
    return GALLOC_OK;
}

static galloc_status_t async_record_stream(void *impl, void *ptr, galloc_stream_t stream)
{
    async_t *a = impl;
    async_ptr_t *e = ga_addrmap_find(&a->ptrs, (uintptr_t)ptr);
    if (e == NULL)
        return ga_fail(a->err, GALLOC_E_NOT_OWNED, "record_stream: %p is not a live allocation of this allocator", ptr);
    if (stream == e->stream) /* PyTorch warns that this has no effect */
        return GALLOC_OK;
    for (async_use_t *u = e->uses; u != NULL; u = u->next)
        if (u->stream == stream)
            return GALLOC_OK;
    if (a->free_uses == NULL) {
        use_chunk_t *c = malloc(sizeof(*c));
        if (c == NULL)
            return ga_fail(a->err, GALLOC_E_NOMEM, "record_stream: out of host memory");
        c->next = a->use_chunks;
        a->use_chunks = c;
        for (int i = 0; i < USE_CHUNK; i++) {
            c->uses[i].next = a->free_uses;
            a->free_uses = &c->uses[i];
        }
    }
    async_use_t *u = a->free_uses;
    a->free_uses = u->next;
    u->stream = stream;
    u->next = e->uses;
    e->uses = u;
    return GALLOC_OK;
}

/* ---- Device-wide calls. ---- */

static galloc_status_t device_fail(async_t *a, galloc_status_t st, const char *what)
{
    char why[256];
    return ga_fail(a->err, st, "%s: %s", what, ga_backend_why(a->backend, st, why, sizeof(why)));
}

static galloc_status_t async_stream_synchronize(void *impl, galloc_stream_t stream)
{
    async_t *a = impl;
    galloc_status_t st = ga_backend_stream_synchronize(a->backend, stream);
    return st == GALLOC_OK ? st : device_fail(a, st, "stream_synchronize");
}

/* PyTorch's emptyCache: cudaDeviceSynchronize, then cudaMemPoolTrimTo(pool, 0). */
static galloc_status_t async_empty_cache(void *impl)
{
    async_t *a = impl;
    galloc_status_t st = ga_backend_device_synchronize(a->backend);
    if (st != GALLOC_OK)
        return device_fail(a, st, "empty_cache");
    st = ga_backend_pool_trim(a->backend, 0);
    return st == GALLOC_OK ? st : device_fail(a, st, "empty_cache");
}

/* PyTorch's setMemoryFraction: a limit of fraction * device total on the bytes
 * this allocator has live, checked before each cudaMallocAsync. */
static galloc_status_t async_set_fraction(void *impl, double fraction)
{
    async_t *a = impl;
    if (!(fraction >= 0.0 && fraction <= 1.0))
        return ga_fail(a->err, GALLOC_E_INVAL, "invalid fraction:%g. Please set within (0, 1).", fraction);
    size_t device_free = 0, device_total = 0;
    galloc_status_t st = ga_backend_mem_info(a->backend, &device_free, &device_total);
    if (st != GALLOC_OK)
        return device_fail(a, st, "set_memory_fraction");
    a->limit = (uint64_t)(fraction * (double)device_total);
    return GALLOC_OK;
}

static galloc_status_t async_memory_info(void *impl, size_t *free_bytes, size_t *total_bytes)
{
    async_t *a = impl;
    galloc_status_t st = ga_backend_mem_info(a->backend, free_bytes, total_bytes);
    return st == GALLOC_OK ? st : device_fail(a, st, "memory_info");
}

static void async_stats(void *impl, galloc_stats_t *out)
{
    async_t *a = impl;
    /* A failed read keeps the last figures rather than report a drop to 0. */
    uint64_t v[4];
    if (ga_backend_pool_usage(a->backend, &v[0], &v[1], &v[2], &v[3]) == GALLOC_OK)
        memcpy(a->pool, v, sizeof(v));
    else
        (void)device_fail(a, GALLOC_E_DEVICE, "memory_stats: reading the memory pool's usage");
    galloc_stats_t s;
    memset(&s, 0, sizeof(s));
    s.struct_size = sizeof(s);
    s.reserved_bytes[GALLOC_STAT_ALL].current = (int64_t)a->pool[0];
    s.reserved_bytes[GALLOC_STAT_ALL].peak = (int64_t)a->pool[1];
    s.allocated_bytes[GALLOC_STAT_ALL].current = (int64_t)a->pool[2];
    s.allocated_bytes[GALLOC_STAT_ALL].peak = (int64_t)a->pool[3];
    s.active_bytes[GALLOC_STAT_ALL] = s.allocated_bytes[GALLOC_STAT_ALL];
    ga_stats_copy(out, &s);
}

static void async_reset_peak(void *impl)
{
    async_t *a = impl;
    galloc_status_t st = ga_backend_pool_reset_peak(a->backend);
    if (st != GALLOC_OK)
        (void)device_fail(a, st, "reset_peak_memory_stats");
}

static void async_reset_accumulated(void *impl)
{
    (void)impl; /* PyTorch: "For backend:cudaMallocAsync, resetAccumulatedStats has no effect." */
}

static galloc_status_t async_check(void *impl)
{
    async_t *a = impl;
    size_t count = ga_addrmap_count(&a->ptrs);
    uint64_t bytes = 0;
    if (!ga_addrmap_valid(&a->ptrs))
        return ga_fail(a->err, GALLOC_E_CORRUPT, "the map of %zu live pointers is inconsistent", count);
    for (size_t i = 0; i < a->ptrs.cap; i++) {
        const async_ptr_t *e = ga_addrmap_slot(&a->ptrs, i);
        if (e == NULL)
            continue;
        bytes += e->size;
        size_t n = 0;
        for (const async_use_t *u = e->uses; u != NULL; u = u->next)
            if (u->stream == e->stream || ++n > a->ptrs.cap * USE_CHUNK)
                return ga_fail(a->err, GALLOC_E_CORRUPT, "pointer %#lx: bad stream-use list", (unsigned long)e->addr);
    }
    if (bytes != a->used_bytes)
        return ga_fail(a->err, GALLOC_E_CORRUPT,
                       "recount: %zu live pointers of %llu bytes, bookkeeping says %llu bytes", count,
                       (unsigned long long)bytes, (unsigned long long)a->used_bytes);
    return GALLOC_OK;
}

const ga_allocator_ops_t ga_allocator_async = {
    .name = "cudaMallocAsync",
    .create = async_create,
    .destroy = async_destroy,
    .malloc = async_malloc,
    .free = async_free,
    .empty_cache = async_empty_cache,
    .record_stream = async_record_stream,
    .stream_synchronize = async_stream_synchronize,
    .set_fraction = async_set_fraction,
    .memory_info = async_memory_info,
    .stats = async_stats,
    .reset_peak = async_reset_peak,
    .reset_accumulated = async_reset_accumulated,
    .check = async_check,
    .usable_size = async_usable_size,
};

/*
 * pool_ops.c: the caching pool behind the allocator ops table:
 * ga_allocator_native, the file's only external symbol, adapts each member to
 * its ga_pool_* call (pool.h). Locking: the front end's lock is held, except
 * around the stripe path (malloc_fast, free_fast).
 */
#include <pthread.h>

#include "allocators/allocator_ops.h"
#include "pool/pool.h"

static galloc_status_t native_create(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err,
                                     void **impl)
{
    ga_pool_t *p = NULL;
    galloc_status_t st = ga_pool_create(conf, backend, device, err, &p);
    *impl = p;
    return st;
}

static void native_destroy(void *impl)
{
    ga_pool_destroy(impl);
}

static galloc_status_t native_malloc(void *impl, size_t size, galloc_stream_t stream, void **ptr)
{
    return ga_pool_malloc(impl, size, stream, ptr);
}

static galloc_status_t native_free(void *impl, void *ptr)
{
    return ga_pool_free(impl, ptr);
}

static galloc_status_t native_empty_cache(void *impl)
{
    return ga_pool_empty_cache(impl);
}

static galloc_status_t native_record_stream(void *impl, void *ptr, galloc_stream_t stream)
{
    return ga_pool_record_stream(impl, ptr, stream);
}

static galloc_status_t native_stream_synchronize(void *impl, galloc_stream_t stream)
{
    return ga_pool_stream_synchronize(impl, stream);
}

static galloc_status_t native_set_fraction(void *impl, double fraction)
{
    return ga_pool_set_fraction(impl, fraction);
}

static galloc_status_t native_memory_info(void *impl, size_t *free_bytes, size_t *total_bytes)
{
    return ga_pool_memory_info(impl, free_bytes, total_bytes);
}

static void native_stats(void *impl, galloc_stats_t *out)
{
    ga_pool_stats(impl, out);
}

static void native_reset_peak(void *impl)
{
    ga_pool_reset_peak(impl);
}

static void native_reset_accumulated(void *impl)
{
    ga_pool_reset_accumulated(impl);
}

static void native_fragmentation(void *impl, galloc_fragmentation_t *out)
{
    ga_pool_fragmentation(impl, out);
}

static galloc_status_t native_check(void *impl)
{
    return ga_pool_check(impl);
}

static galloc_status_t native_mempool_create(void *impl, galloc_mempool_id_t *id)
{
    return ga_pool_mempool_create(impl, &id->a, &id->b);
}

static galloc_status_t native_mempool_begin(void *impl, galloc_mempool_id_t id, galloc_route_t route,
                                            galloc_stream_t s)
{
    return ga_pool_mempool_begin(impl, id.a, id.b, (int)route, s, (uintptr_t)pthread_self());
}

static galloc_status_t native_mempool_end(void *impl, galloc_mempool_id_t id)
{
    return ga_pool_mempool_end(impl, id.a, id.b);
}

static galloc_status_t native_mempool_release(void *impl, galloc_mempool_id_t id)
{
    return ga_pool_mempool_release(impl, id.a, id.b);
}

static galloc_status_t native_record_history(void *impl, const galloc_history_options_t *opt)
{
    return ga_pool_record_history(impl, opt);
}

static galloc_status_t native_snapshot(void *impl, const char *path, galloc_snapshot_format_t format)
{
    return ga_pool_snapshot(impl, path, format);
}

static galloc_status_t native_annotate(void *impl, const char *stage, const char *name)
{
    return ga_pool_annotate(impl, stage, name);
}

static void native_set_frames(void *impl, galloc_frames_fn fn, void *ctx)
{
    ga_pool_set_frames(impl, fn, ctx);
}

static galloc_status_t native_set_trace_source(void *impl, const galloc_trace_source_t *src)
{
    return ga_pool_set_trace_source(impl, src);
}

static galloc_status_t native_tag_begin(void *impl, const char *tag)
{
    return ga_pool_tag_begin(impl, tag, (uintptr_t)pthread_self());
}

static galloc_status_t native_tag_end(void *impl, const char *tag)
{
    return ga_pool_tag_end(impl, tag);
}

static galloc_status_t native_mempool_set_tag(void *impl, galloc_mempool_id_t id, const char *tag)
{
    return ga_pool_mempool_set_tag(impl, id.a, id.b, tag);
}

static galloc_status_t native_sleep(void *impl, const char *tags, const char *offload_tags)
{
    return ga_pool_sleep(impl, tags, offload_tags);
}

static galloc_status_t native_wake(void *impl, const char *tags)
{
    return ga_pool_wake(impl, tags);
}

static galloc_status_t native_sleep_stats(void *impl, galloc_sleep_stats_t *out)
{
    ga_pool_sleep_stats(impl, out);
    return GALLOC_OK;
}

static galloc_status_t native_tag_asleep(void *impl, const char *tag, int *asleep)
{
    return ga_pool_tag_asleep(impl, tag, asleep);
}

static bool native_malloc_fast(void *impl, size_t size, galloc_stream_t stream, void **ptr)
{
    return ga_pool_malloc_fast(impl, size, stream, ptr);
}

static bool native_free_fast(void *impl, void *ptr)
{
    return ga_pool_free_fast(impl, ptr);
}

static void native_quiesce(void *impl)
{
    ga_pool_quiesce(impl);
}

static void native_resume(void *impl)
{
    ga_pool_resume(impl);
}

const ga_allocator_ops_t ga_allocator_native = {
    .name = "native",
    .create = native_create,
    .destroy = native_destroy,
    .malloc = native_malloc,
    .free = native_free,
    .empty_cache = native_empty_cache,
    .record_stream = native_record_stream,
    .stream_synchronize = native_stream_synchronize,
    .set_fraction = native_set_fraction,
    .memory_info = native_memory_info,
    .stats = native_stats,
    .reset_peak = native_reset_peak,
    .reset_accumulated = native_reset_accumulated,
    .check = native_check,
    .fragmentation = native_fragmentation,
    .record_history = native_record_history,
    .snapshot = native_snapshot,
    .annotate = native_annotate,
    .set_frames = native_set_frames,
    .set_trace_source = native_set_trace_source,
    .mempool_create = native_mempool_create,
    .mempool_begin = native_mempool_begin,
    .mempool_end = native_mempool_end,
    .mempool_release = native_mempool_release,
    .tag_begin = native_tag_begin,
    .tag_end = native_tag_end,
    .mempool_set_tag = native_mempool_set_tag,
    .sleep = native_sleep,
    .wake = native_wake,
    .sleep_stats = native_sleep_stats,
    .tag_asleep = native_tag_asleep,
    .malloc_fast = native_malloc_fast,
    .free_fast = native_free_fast,
    .quiesce = native_quiesce,
    .resume = native_resume,
};

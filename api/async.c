/* async.c: the stream-ordered allocator (pool/async.c, backend:cudaMallocAsync)
 * behind the allocator ops table. It has no private pools: the mempool members
 * are NULL, so galloc_mempool_* return GALLOC_E_UNSUPPORTED. */
#include "api/allocator_int.h"

static galloc_status_t async_create(const ga_conf_t *conf, ga_backend_t *backend, int device, ga_err_t *err,
                                    void **impl)
{
    (void)conf; /* the native-only knobs do not apply; PyTorch ignores them too */
    ga_async_t *a = NULL;
    galloc_status_t st = ga_async_create(backend, device, err, &a);
    *impl = a;
    return st;
}

static void async_destroy(void *impl)
{
    ga_async_destroy(impl);
}

static galloc_status_t async_malloc(void *impl, size_t size, galloc_stream_t stream, void **ptr)
{
    return ga_async_malloc(impl, size, stream, ptr);
}

static galloc_status_t async_free(void *impl, void *ptr)
{
    return ga_async_free(impl, ptr);
}

static galloc_status_t async_empty_cache(void *impl)
{
    return ga_async_empty_cache(impl);
}

static galloc_status_t async_record_stream(void *impl, void *ptr, galloc_stream_t stream)
{
    return ga_async_record_stream(impl, ptr, stream);
}

static galloc_status_t async_stream_synchronize(void *impl, galloc_stream_t stream)
{
    return ga_async_stream_synchronize(impl, stream);
}

static galloc_status_t async_set_fraction(void *impl, double fraction)
{
    return ga_async_set_fraction(impl, fraction);
}

static galloc_status_t async_memory_info(void *impl, size_t *free_bytes, size_t *total_bytes)
{
    return ga_async_memory_info(impl, free_bytes, total_bytes);
}

static void async_stats(void *impl, galloc_stats_t *out)
{
    ga_async_stats(impl, out);
}

static void async_reset_peak(void *impl)
{
    ga_async_reset_peak(impl);
}

static void async_reset_accumulated(void *impl)
{
    ga_async_reset_accumulated(impl);
}

static galloc_status_t async_check(void *impl)
{
    return ga_async_check(impl);
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
};

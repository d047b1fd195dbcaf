/*
 * host.c: the public host cache calls (api/galloc_host.h): each takes the
 * allocator's lock, as every locked call does, and runs the host layer's
 * call (host/host.h) on the allocator's cache. The cache is made at create
 * (nothing is pinned before the first galloc_host_malloc) and handed to the
 * implementation that wants it (the caching pool's sleep offload).
 */
#include "front/allocator_int.h"

galloc_status_t ga_front_host_attach(galloc_allocator_t *a)
{
    galloc_status_t st = ga_host_create(&a->conf, &a->backend, &a->err, &a->host);
    if (st == GALLOC_OK && a->ops->attach_host != NULL)
        a->ops->attach_host(a->impl, a->host);
    return st;
}

galloc_status_t galloc_host_malloc(galloc_allocator_t *a, size_t size, void **ptr)
{
    if (ptr != NULL)
        *ptr = NULL;
    GA_LIVE_OR_RETURN(a);
    if (ptr == NULL)
        return GALLOC_E_INVAL;
    galloc_status_t st;
    LOCKED(a, st = ga_host_malloc(a->host, size, ptr));
    return st;
}

galloc_status_t galloc_host_free(galloc_allocator_t *a, void *ptr)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, st = ga_host_free(a->host, ptr));
    return st;
}

galloc_status_t galloc_host_record_stream(galloc_allocator_t *a, void *ptr, galloc_stream_t s)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, st = ga_host_record_stream(a->host, ptr, s));
    return st;
}

galloc_status_t galloc_host_empty_cache(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    galloc_status_t st;
    LOCKED(a, st = ga_host_empty_cache(a->host));
    return st;
}

galloc_status_t galloc_host_memory_stats(galloc_allocator_t *a, galloc_host_stats_t *out)
{
    GA_LIVE_OR_RETURN(a);
    if (out == NULL || out->struct_size < sizeof(uint32_t))
        return GALLOC_E_INVAL;
    LOCKED(a, ga_host_stats(a->host, out));
    return GALLOC_OK;
}

galloc_status_t galloc_host_reset_peak_stats(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    LOCKED(a, ga_host_reset_peak(a->host));
    return GALLOC_OK;
}

galloc_status_t galloc_host_reset_accumulated_stats(galloc_allocator_t *a)
{
    GA_LIVE_OR_RETURN(a);
    LOCKED(a, ga_host_reset_accumulated(a->host));
    return GALLOC_OK;
}

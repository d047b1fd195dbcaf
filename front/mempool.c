/*
 * mempool.c: the public calls of galloc_mempool.h and galloc_sleep.h: private
 * pools (MemPools), tags, sleep and wake. Each is an optional member of the
 * allocator's ops table, called under the allocator's lock (allocator_int.h).
 */
#include <galloc/galloc_mempool.h>
#include <galloc/galloc_sleep.h>
#include "front/allocator_int.h"

galloc_status_t galloc_mempool_create(galloc_allocator_t *a, galloc_mempool_id_t *id)
{
    if (id == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, mempool_create, id);
}

galloc_status_t galloc_mempool_create_id(galloc_allocator_t *a, galloc_mempool_id_t id)
{
    MEMPOOL_CALL(a, mempool_create_id, id);
}

galloc_status_t galloc_mempool_begin_allocate(galloc_allocator_t *a, galloc_mempool_id_t id, galloc_route_t route,
                                              galloc_stream_t stream)
{
    MEMPOOL_CALL(a, mempool_begin, id, route, stream);
}

galloc_status_t galloc_mempool_end_allocate(galloc_allocator_t *a, galloc_mempool_id_t id)
{
    MEMPOOL_CALL(a, mempool_end, id);
}

galloc_status_t galloc_mempool_release(galloc_allocator_t *a, galloc_mempool_id_t id)
{
    MEMPOOL_CALL(a, mempool_release, id);
}

galloc_status_t galloc_mempool_set_flags(galloc_allocator_t *a, galloc_mempool_id_t id, unsigned flags)
{
    MEMPOOL_CALL(a, mempool_set_flags, id, flags);
}

galloc_status_t galloc_tag_begin(galloc_allocator_t *a, const char *tag)
{
    if (tag == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, tag_begin, tag);
}

galloc_status_t galloc_tag_end(galloc_allocator_t *a, const char *tag)
{
    if (tag == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, tag_end, tag);
}

galloc_status_t galloc_mempool_set_tag(galloc_allocator_t *a, galloc_mempool_id_t id, const char *tag)
{
    if (tag == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, mempool_set_tag, id, tag);
}

galloc_status_t galloc_sleep(galloc_allocator_t *a, const char *tags, const char *offload_tags)
{
    MEMPOOL_CALL(a, sleep, tags, offload_tags);
}

galloc_status_t galloc_wake(galloc_allocator_t *a, const char *tags)
{
    MEMPOOL_CALL(a, wake, tags);
}

galloc_status_t galloc_sleep_prepare(galloc_allocator_t *a, const char *tags, const char *offload_tags)
{
    MEMPOOL_CALL(a, sleep_prepare, tags, offload_tags);
}

galloc_status_t galloc_sleep_stats(galloc_allocator_t *a, galloc_sleep_stats_t *out)
{
    if (out == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, sleep_stats, out);
}

galloc_status_t galloc_tag_asleep(galloc_allocator_t *a, const char *tag, int *asleep)
{
    if (tag == NULL || asleep == NULL)
        return GALLOC_E_INVAL;
    MEMPOOL_CALL(a, tag_asleep, tag, asleep);
}

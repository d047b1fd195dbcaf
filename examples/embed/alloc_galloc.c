/*
 * alloc_galloc.c: galloc behind rt's allocator vtable; the only file of the
 * runtime that includes galloc. It uses galloc's device registry
 * (galloc_device.h) rather than one galloc_allocator_t per device because a
 * runtime already speaks in device indices: the registry creates each
 * device's caching allocator at its first use, from the same configuration,
 * and every call is safe from any thread.
 *
 * Status mapping: GALLOC_E_OOM is the one failure a runtime usually handles
 * (free something, retry, or report PyTorch's OOM text), so it gets its own
 * rt status; everything else is RT_ERROR with galloc's message kept for
 * last_error.
 */
#include <stdio.h>
#include <stdlib.h>

#include <galloc/galloc.h>
#include "examples/embed/runtime.h"

typedef struct galloc_rt {
    rt_allocator_t base; /* first: rt hands us back this pointer */
} galloc_rt_t;

static rt_status_t to_rt(galloc_status_t st)
{
    return st == GALLOC_OK ? RT_OK : st == GALLOC_E_OOM ? RT_OOM : RT_ERROR;
}

static rt_status_t g_alloc(rt_allocator_t *self, size_t bytes, int device, rt_stream_t stream, void **out)
{
    (void)self;
    return to_rt(galloc_device_malloc(device, bytes, (galloc_stream_t)stream, out));
}

static rt_status_t g_free(rt_allocator_t *self, void *ptr, int device)
{
    (void)self;
    return to_rt(galloc_device_free(device, ptr));
}

static rt_status_t g_record_stream(rt_allocator_t *self, void *ptr, int device, rt_stream_t stream)
{
    (void)self;
    galloc_allocator_t *a;
    galloc_status_t st = galloc_device_get(device, &a);
    if (st == GALLOC_OK)
        st = galloc_record_stream(a, ptr, (galloc_stream_t)stream);
    return to_rt(st);
}

static rt_status_t g_memory_stats(rt_allocator_t *self, int device, rt_memory_stats_t *out)
{
    (void)self;
    /* One copy of all 123 counters, taken under the device's lock, so the
     * figures below are consistent with each other. */
    galloc_stats_t s;
    s.struct_size = sizeof(s);
    galloc_status_t st = galloc_device_memory_stats(device, &s);
    if (st != GALLOC_OK)
        return to_rt(st);
    out->allocated = s.allocated_bytes[GALLOC_STAT_ALL].current;
    out->max_allocated = s.allocated_bytes[GALLOC_STAT_ALL].peak;
    out->reserved = s.reserved_bytes[GALLOC_STAT_ALL].current;
    out->max_reserved = s.reserved_bytes[GALLOC_STAT_ALL].peak;
    out->device_allocs = s.num_device_alloc;
    return RT_OK;
}

static rt_status_t g_empty_cache(rt_allocator_t *self, int device)
{
    (void)self;
    return to_rt(galloc_device_empty_cache(device));
}

static void g_last_error(rt_allocator_t *self, int device, char *buf, size_t len)
{
    (void)self;
    galloc_allocator_t *a;
    /* An allocator's own failures (OOM, foreign pointer) are kept by it; a
     * device whose allocator could not be created has only the registry's. */
    if (galloc_device_is_initialized(device) && galloc_device_get(device, &a) == GALLOC_OK)
        galloc_last_error(a, buf, len);
    else
        galloc_devices_last_error(buf, len);
}

static void g_destroy(rt_allocator_t *self)
{
    /* Every tensor must be gone by now: shutdown frees all device memory. */
    galloc_devices_shutdown();
    free(self);
}

static const rt_allocator_ops_t galloc_rt_ops = {
    .name = "galloc",
    .alloc = g_alloc,
    .free = g_free,
    .record_stream = g_record_stream,
    .memory_stats = g_memory_stats,
    .empty_cache = g_empty_cache,
    .last_error = g_last_error,
    .destroy = g_destroy,
};

rt_allocator_t *rt_galloc_allocator_create(const char *conf, char *err, size_t errlen)
{
    /* Configure before the first allocation: galloc, like PyTorch, reads its
     * settings once per device, when the device's allocator is created. */
    galloc_status_t st = galloc_device_configure(conf);
    if (st != GALLOC_OK) {
        char msg[GALLOC_ERROR_MAX];
        galloc_devices_last_error(msg, sizeof(msg));
        snprintf(err, errlen, "galloc: %s (%s)", msg, galloc_strerror(st));
        return NULL;
    }
    galloc_rt_t *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    g->base.ops = &galloc_rt_ops;
    return &g->base;
}

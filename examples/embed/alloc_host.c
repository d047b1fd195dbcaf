/*
 * alloc_host.c: plain malloc behind rt's allocator vtable, the baseline the
 * demo compares galloc with. It caches nothing, so reserved == allocated, and
 * counts sizes exactly as asked (no rounding). Streams mean nothing on the
 * host: record_stream only checks nothing. One mutex guards the counters.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/embed/runtime.h"

#define HOST_DEVICES 8

typedef struct host_rt {
    rt_allocator_t base;                   /* first: rt hands us back this pointer */
    pthread_mutex_t lock;                  /* guards the counters below */
    rt_memory_stats_t stats[HOST_DEVICES]; /* per device */
    char err[128];                         /* last failure */
} host_rt_t;

/* Each block carries its size in front so free can count it. */
typedef struct header {
    size_t bytes;
    size_t pad; /* keep the payload 16-byte aligned, as malloc's */
} header_t;

static host_rt_t *host(rt_allocator_t *self)
{
    return (host_rt_t *)self;
}

static rt_status_t h_alloc(rt_allocator_t *self, size_t bytes, int device, rt_stream_t stream, void **out)
{
    (void)stream;
    host_rt_t *h = host(self);
    *out = NULL;
    if (device < 0 || device >= HOST_DEVICES) {
        pthread_mutex_lock(&h->lock);
        snprintf(h->err, sizeof(h->err), "no device %d", device);
        pthread_mutex_unlock(&h->lock);
        return RT_ERROR;
    }
    header_t *b = malloc(sizeof(header_t) + bytes);
    if (b == NULL)
        return RT_OOM;
    b->bytes = bytes;
    pthread_mutex_lock(&h->lock);
    rt_memory_stats_t *s = &h->stats[device];
    s->allocated += (int64_t)bytes;
    s->reserved = s->allocated;
    if (s->allocated > s->max_allocated)
        s->max_allocated = s->max_reserved = s->allocated;
    s->device_allocs++;
    pthread_mutex_unlock(&h->lock);
    *out = b + 1;
    return RT_OK;
}

static rt_status_t h_free(rt_allocator_t *self, void *ptr, int device)
{
    host_rt_t *h = host(self);
    if (ptr == NULL)
        return RT_OK;
    header_t *b = (header_t *)ptr - 1;
    pthread_mutex_lock(&h->lock);
    h->stats[device].allocated -= (int64_t)b->bytes;
    h->stats[device].reserved = h->stats[device].allocated;
    pthread_mutex_unlock(&h->lock);
    free(b);
    return RT_OK;
}

static rt_status_t h_record_stream(rt_allocator_t *self, void *ptr, int device, rt_stream_t stream)
{
    (void)self, (void)ptr, (void)device, (void)stream;
    return RT_OK;
}

static rt_status_t h_memory_stats(rt_allocator_t *self, int device, rt_memory_stats_t *out)
{
    host_rt_t *h = host(self);
    if (device < 0 || device >= HOST_DEVICES)
        return RT_ERROR;
    pthread_mutex_lock(&h->lock);
    *out = h->stats[device];
    pthread_mutex_unlock(&h->lock);
    return RT_OK;
}

static rt_status_t h_empty_cache(rt_allocator_t *self, int device)
{
    (void)self, (void)device;
    return RT_OK;
}

static void h_last_error(rt_allocator_t *self, int device, char *buf, size_t len)
{
    (void)device;
    host_rt_t *h = host(self);
    pthread_mutex_lock(&h->lock);
    snprintf(buf, len, "%s", h->err);
    pthread_mutex_unlock(&h->lock);
}

static void h_destroy(rt_allocator_t *self)
{
    host_rt_t *h = host(self);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

static const rt_allocator_ops_t host_rt_ops = {
    .name = "host",
    .alloc = h_alloc,
    .free = h_free,
    .record_stream = h_record_stream,
    .memory_stats = h_memory_stats,
    .empty_cache = h_empty_cache,
    .last_error = h_last_error,
    .destroy = h_destroy,
};

rt_allocator_t *rt_host_allocator_create(void)
{
    host_rt_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return NULL;
    if (pthread_mutex_init(&h->lock, NULL) != 0) {
        free(h);
        return NULL;
    }
    h->base.ops = &host_rt_ops;
    return &h->base;
}

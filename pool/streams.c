/*
 * streams.c: blocks used on more than one stream, as PyTorch's recordStream,
 * insert_events, process_events and synchronize_and_free_events do
 * (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp).
 *
 * A block belongs to the stream it was allocated on. record_stream(ptr, s)
 * notes that stream s uses it too. When such a block is freed, an event is
 * recorded on every stream that used it and the block stays active ("active
 * pending free" in snapshots) until all of them completed; the allocation
 * counters drop at the free, the active ones when the block returns to its
 * pool. Pending events are polled at the start of every malloc, and waited for
 * by empty_cache and by the last retry before an OOM. A failed poll or wait
 * fails that call (PyTorch throws) and leaves the event and every later one
 * queued, their blocks still active: a block is never reused on a guess.
 *
 * Memory: event records and their backend events are created by record_stream
 * (never by free, so a free cannot fail for lack of host memory or events) and
 * recycled through a free list for the allocator's lifetime.
 */
#include <stdlib.h>

#include "pool/capture.h"
#include "pool/free.h"
#include "pool/ops.h"
#include "pool/streams.h"
#include "pool/stripe.h"
#include "pool/tags.h"

#define EVENT_CHUNK 64

typedef struct event_chunk {
    struct event_chunk *next;
    ga_event_t events[EVENT_CHUNK];
} event_chunk_t;

/* One pooled event record with a live backend event (cold path). */
static galloc_status_t event_get(ga_pool_t *p, ga_event_t **out)
{
    if (p->events_free == NULL) {
        event_chunk_t *c = calloc(1, sizeof(*c));
        if (c == NULL)
            return GALLOC_E_NOMEM;
        c->next = p->event_chunks;
        p->event_chunks = c;
        /* Handles are created lazily below; 0 marks "not created yet". */
        for (int i = EVENT_CHUNK - 1; i >= 0; i--) {
            c->events[i].next = p->events_free;
            p->events_free = &c->events[i];
        }
    }
    ga_event_t *e = p->events_free;
    if (e->handle == 0) {
        galloc_status_t st = ga_backend_event_create(p->backend, &e->handle);
        if (st != GALLOC_OK) {
            e->handle = 0;
            return st;
        }
    }
    p->events_free = e->next;
    e->next = NULL;
    e->block = NULL;
    *out = e;
    return GALLOC_OK;
}

static void event_put(ga_pool_t *p, ga_event_t *e)
{
    e->block = NULL;
    e->next = p->events_free;
    p->events_free = e;
}

galloc_status_t ga_pool_record_stream(void *impl, void *ptr, galloc_stream_t stream)
{
    ga_pool_t *p = impl;
    ga_block_t *b = ga_pool_allocated_block(p, (uintptr_t)ptr);
    if (b == NULL) /* a sleeping tag's block is live too */
        b = ga_pool_held_block(p, (uintptr_t)ptr);
    if (b == NULL)
        return ga_fail(p->err, GALLOC_E_NOT_OWNED, "record_stream: %p is not a live block of this allocator", ptr);
    /* The allocation stream needs no event: work on it is ordered already. */
    if (stream == b->stream)
        return GALLOC_OK;
    for (ga_event_t *e = b->uses; e != NULL; e = e->next)
        if (e->stream == stream)
            return GALLOC_OK;
    ga_event_t *e = NULL;
    galloc_status_t st = event_get(p, &e);
    if (st == GALLOC_E_UNSUPPORTED)
        return ga_fail(p->err, st, "record_stream: device backend \"%s\" has no events", p->backend->ops->name);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "record_stream: could not create an event: %s", galloc_strerror(st));
    e->stream = stream;
    e->next = b->uses;
    b->uses = e;
    return GALLOC_OK;
}

void ga_pool_uses_release(ga_pool_t *p, ga_block_t *b)
{
    ga_event_t *e = b->uses;
    b->uses = NULL;
    while (e != NULL) {
        ga_event_t *next = e->next;
        event_put(p, e);
        e = next;
    }
}

galloc_status_t ga_pool_insert_events(ga_pool_t *p, ga_block_t *b)
{
    /* Record every event first, so that a device failure leaves the block as it was. */
    for (ga_event_t *e = b->uses; e != NULL; e = e->next) {
        galloc_status_t st = ga_backend_event_record(p->backend, e->handle, e->stream);
        if (st != GALLOC_OK)
            return ga_fail(p->err, GALLOC_E_DEVICE, "free: recording an event on stream %#lx failed: %s",
                           (unsigned long)e->stream, galloc_strerror(st));
    }
    ga_event_t *e = b->uses;
    b->uses = NULL;
    while (e != NULL) {
        ga_event_t *next = e->next;
        e->block = b;
        e->next = NULL;
        if (p->pending_tail != NULL)
            p->pending_tail->next = e;
        else
            p->pending_head = e;
        p->pending_tail = e;
        b->event_count++;
        e = next;
    }
    p->pending_blocks++;
    return GALLOC_OK;
}

/* One event has completed: the block returns to its pool with its last one. */
static void event_done(ga_pool_t *p, ga_event_t *e)
{
    ga_block_t *b = e->block;
    event_put(p, e);
    if (--b->event_count == 0) {
        p->pending_blocks--;
        ga_pool_free_block(p, b);
    }
}

/* A failed event query or wait: GALLOC_E_DEVICE with the backend's own words. */
static galloc_status_t event_fail(ga_pool_t *p, galloc_status_t st, const char *what, const ga_event_t *e)
{
    char why[256];
    return ga_fail(p->err, GALLOC_E_DEVICE, "%s an event on stream %#lx failed: %s", what, (unsigned long)e->stream,
                   ga_backend_why(p->backend, st, why, sizeof(why)));
}

#define MAX_BLOCKED_STREAMS 16

galloc_status_t ga_pool_process_events(ga_pool_t *p)
{
    galloc_status_t deferred = ga_pool_insert_deferred(p);
    if (deferred != GALLOC_OK)
        return deferred;
    /* Work on a stream completes in order: once one of its events is not
     * ready, later ones are not queried (PyTorch stops per stream too). */
    galloc_stream_t blocked[MAX_BLOCKED_STREAMS];
    size_t nblocked = 0;
    ga_event_t **link = &p->pending_head, *prev = NULL;
    while (*link != NULL) {
        ga_event_t *e = *link;
        bool skip = false;
        for (size_t i = 0; i < nblocked && !skip; i++)
            skip = blocked[i] == e->stream;
        galloc_status_t st = skip ? GALLOC_E_NOT_READY : ga_backend_event_query(p->backend, e->handle);
        if (st == GALLOC_E_NOT_READY) {
            if (!skip && nblocked < MAX_BLOCKED_STREAMS)
                blocked[nblocked++] = e->stream;
            prev = e;
            link = &e->next;
            continue;
        }
        /* PyTorch throws here (C10_CUDA_CHECK). The queue stays as it is from
         * this event on, so its block is not reused while the device may still
         * use it; the blocks returned before it stay returned. */
        if (st != GALLOC_OK)
            return event_fail(p, st, "querying", e);
        *link = e->next;
        if (p->pending_tail == e)
            p->pending_tail = prev;
        event_done(p, e);
    }
    return GALLOC_OK;
}

galloc_status_t ga_pool_synchronize_and_free_events(ga_pool_t *p)
{
    /* Counted once per call before any wait, failed or not, as PyTorch does. */
    p->stats.num_sync_all_streams++;
    galloc_status_t deferred = ga_pool_insert_deferred(p); /* none while a route is active */
    if (deferred != GALLOC_OK)
        return deferred;
    while (p->pending_head != NULL) {
        ga_event_t *e = p->pending_head;
        /* PyTorch throws on a failed wait (C10_CUDA_CHECK on cudaEventSynchronize):
         * the device may still be using the block, so it must not be reused.
         * This event and those after it stay queued, their blocks active
         * pending free; a later sync or poll retries them. */
        galloc_status_t st = ga_backend_event_synchronize(p->backend, e->handle);
        if (st != GALLOC_OK)
            return event_fail(p, st, "waiting for", e);
        p->pending_head = e->next;
        if (p->pending_head == NULL)
            p->pending_tail = NULL;
        event_done(p, e);
    }
    return GALLOC_OK;
}

galloc_status_t ga_pool_stream_synchronize(void *impl, galloc_stream_t stream)
{
    ga_pool_t *p = impl;
    galloc_status_t st = ga_backend_stream_synchronize(p->backend, stream);
    if (st != GALLOC_OK)
        return ga_fail(p->err, st, "stream_synchronize(%#lx): %s", (unsigned long)stream, galloc_strerror(st));
    return GALLOC_OK;
}

void ga_pool_events_destroy(ga_pool_t *p)
{
    event_chunk_t *c = p->event_chunks;
    while (c != NULL) {
        event_chunk_t *next = c->next;
        for (int i = 0; i < EVENT_CHUNK; i++)
            if (c->events[i].handle != 0)
                (void)ga_backend_event_destroy(p->backend, c->events[i].handle);
        free(c);
        c = next;
    }
    p->event_chunks = NULL;
    p->events_free = p->pending_head = p->pending_tail = NULL;
}

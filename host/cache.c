/*
 * cache.c: the host cache's policy (host.h): PyTorch's
 * CachingHostAllocatorImpl (aten/src/ATen/core/CachingHostAllocator.h, main
 * after PRs #171662 and #192722; facts restated, no code copied), on one
 * lock (the allocator's) instead of its per-bucket, blocks and events
 * mutexes, which changes no figure.
 *
 * - allocate: size 0 gives nothing; process_events (galloc always: it runs
 *   no background thread); roundSize is PowerOf2Ceil(size) when size <=
 *   pinned_max_round_threshold and size <= pinned_max_cached_size, else
 *   size; get_free_block scans its bucket (ceil(log2)) from the back for the
 *   first block of at least roundSize (#192722) and counts the block's size
 *   as active; a miss pins roundSize bytes (pin.c) and add_allocated_block
 *   counts one allocation and one active block of that size.
 * - free: a block without streams goes through maybe_cache_block at once;
 *   otherwise one event per stream is recorded and queued (newest in front)
 *   and the block waits. maybe_cache_block (#171662) makes it inactive and
 *   either caches it at the back of its bucket's list or, when its size is
 *   above pinned_max_cached_size, gives it back (free_block) at once.
 * - process_events: from the oldest event on, each completed event releases
 *   its block's count, a block at 0 goes through maybe_cache_block; the walk
 *   stops at the first event not complete (head-of-line: a later block whose
 *   events are done waits for it, as in PyTorch).
 * - empty_cache: process_events, then every block of every free list, bucket
 *   by bucket, is removed from the counts and given back.
 *
 * Where galloc differs, on purpose: a failed driver call changes nothing
 * (PyTorch throws mid-way): a refused event record leaves the block
 * allocated with its streams, a failed event query is treated as "not yet"
 * (the block is never reused early), a refused give-back keeps the block
 * cached and counted; record_stream and free name the block by its exact
 * pointer (PyTorch also finds it by its context), and a pointer that is no
 * live block is GALLOC_E_NOT_OWNED (PyTorch's record_event returns false,
 * its free trusts the caller).
 */
#include <stdlib.h>
#include <string.h>

#include "host/host_int.h"
#include "stats/stats.h"

/* ---- Records, lists, the pointer map. ---- */

static void list_push_back(ga_host_list_t *l, ga_host_block_t *b)
{
    b->next = NULL;
    b->prev = l->tail;
    if (l->tail != NULL)
        l->tail->next = b;
    else
        l->head = b;
    l->tail = b;
}

static void list_remove(ga_host_list_t *l, ga_host_block_t *b)
{
    if (b->prev != NULL)
        b->prev->next = b->next;
    else
        l->head = b->next;
    if (b->next != NULL)
        b->next->prev = b->prev;
    else
        l->tail = b->prev;
    b->prev = b->next = NULL;
}

static ga_host_block_t *block_find(const ga_host_t *h, const void *ptr)
{
    const ga_host_ptr_t *e = ptr != NULL ? ga_addrmap_find(&h->ptrs, (uintptr_t)ptr) : NULL;
    return e != NULL ? e->block : NULL;
}

/* A record from the recycle list, else a new one (the cold path, a miss). */
static ga_host_block_t *record_get(ga_host_t *h)
{
    ga_host_block_t *b = h->spare;
    if (b != NULL)
        h->spare = b->next;
    else if ((b = malloc(sizeof(*b))) == NULL)
        return NULL;
    memset(b, 0, sizeof(*b));
    b->streams = b->inline_streams;
    b->cap_streams = GA_HOST_INLINE_STREAMS;
    return b;
}

static void record_put(ga_host_t *h, ga_host_block_t *b)
{
    if (b->streams != b->inline_streams)
        free(b->streams);
    b->streams = NULL;
    b->next = h->spare;
    h->spare = b;
}

/* ---- Statistics, as HostStatsStaged moves them. ---- */

static void count_active(ga_host_t *h, const ga_host_block_t *b, bool on)
{
    unsigned i = ga_host_bucket(b->size);
    if (on) {
        ga_stat_increase(&h->active[i], 1);
        ga_stat_increase(&h->active_bytes[i], (int64_t)b->size);
    } else {
        ga_stat_decrease(&h->active[i], 1);
        ga_stat_decrease(&h->active_bytes[i], (int64_t)b->size);
    }
}

/* ---- Giving back and caching. ---- */

/* A given-back block leaves the counts, the pointer map and its record. */
static void forget(ga_host_t *h, ga_host_block_t *b)
{
    ga_stat_decrease(&h->allocations, 1);
    ga_stat_decrease(&h->allocated_bytes, (int64_t)b->size);
    ga_addrmap_remove(&h->ptrs, ga_addrmap_find(&h->ptrs, (uintptr_t)b->ptr));
    record_put(h, b);
}

static void cache_push(ga_host_t *h, ga_host_block_t *b, bool kept)
{
    b->kept = kept;
    b->orphan = false;
    if (kept)
        h->kept_bytes += b->size;
    list_push_back(&h->free[ga_host_bucket(b->size)], b);
}

/* A free block whose give-back the driver refused: cached, marked for a retry. */
static void orphan_push(ga_host_t *h, ga_host_block_t *b)
{
    cache_push(h, b, false);
    b->orphan = true;
}

static void cache_take(ga_host_t *h, ga_host_block_t *b)
{
    if (b->kept)
        h->kept_bytes -= b->size;
    b->kept = b->orphan = false;
    list_remove(&h->free[ga_host_bucket(b->size)], b);
}

/* maybe_cache_block: a block nothing uses any more. Above the cap it is given
 * back at once; a refused give-back caches it after all (empty_cache tries
 * again). */
static void maybe_cache_block(ga_host_t *h, ga_host_block_t *b, bool kept)
{
    count_active(h, b, false);
    if ((uint64_t)b->size > h->max_cached && ga_host_unpin(h, b->ptr, b->size, (ga_host_kind_t)b->kind) == GALLOC_OK) {
        forget(h, b);
        return;
    }
    cache_push(h, b, kept);
}

/* ---- Events. ---- */

static size_t q_index(const ga_host_t *h, size_t k)
{
    return (h->q_first + k) & (h->q_cap - 1);
}

/* Room for n more queue entries and idle events (the free path's cold part). */
static galloc_status_t events_reserve(ga_host_t *h, size_t n)
{
    if (h->q_n + n > h->q_cap) {
        size_t cap = h->q_cap > 0 ? h->q_cap : 16;
        while (cap < h->q_n + n)
            cap *= 2;
        ga_host_event_t *q = malloc(cap * sizeof(*q));
        if (q == NULL)
            return ga_fail(h->err, GALLOC_E_NOMEM, "host_free: out of host memory for the event queue");
        for (size_t k = 0; k < h->q_n; k++)
            q[k] = h->queue[q_index(h, k)];
        free(h->queue);
        h->queue = q;
        h->q_cap = cap;
        h->q_first = 0;
    }
    /* Every event ever created must fit among the idle ones. */
    if (h->n_events + n > h->cap_idle) {
        size_t cap = h->cap_idle > 0 ? h->cap_idle : 16;
        while (cap < h->n_events + n)
            cap *= 2;
        uintptr_t *idle = realloc(h->idle, cap * sizeof(*idle));
        if (idle == NULL)
            return ga_fail(h->err, GALLOC_E_NOMEM, "host_free: out of host memory for the event pool");
        h->idle = idle;
        h->cap_idle = cap;
    }
    return GALLOC_OK;
}

/* An event from the pool, else a new one (room reserved). */
static galloc_status_t event_get(ga_host_t *h, uintptr_t *e)
{
    if (h->n_idle > 0) {
        *e = h->idle[--h->n_idle];
        return GALLOC_OK;
    }
    galloc_status_t st = ga_backend_event_create(h->backend, e);
    if (st == GALLOC_OK)
        h->n_events++;
    return st;
}

static void event_put(ga_host_t *h, uintptr_t e)
{
    h->idle[h->n_idle++] = e; /* room: cap_idle >= n_events */
}

/* process_events: release every block whose events have all completed, oldest
 * event first, up to the first that has not. A query that fails is taken as
 * "not complete": the block waits (and the next call asks again). */
static void process_events(ga_host_t *h)
{
    while (h->q_n > 0) {
        ga_host_event_t *q = &h->queue[h->q_first];
        if (ga_backend_event_query(h->backend, q->event) != GALLOC_OK)
            return;
        ga_host_block_t *b = q->block;
        event_put(h, q->event);
        h->q_first = (h->q_first + 1) & (h->q_cap - 1);
        h->q_n--;
        if (--b->event_count == 0)
            maybe_cache_block(h, b, false);
    }
}

/* ---- The public calls. ---- */

galloc_status_t ga_host_create(const ga_conf_t *conf, ga_backend_t *backend, ga_err_t *err, ga_host_t **out)
{
    ga_host_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return GALLOC_E_NOMEM;
    h->backend = backend;
    h->err = err;
    h->round_threshold = conf->pinned_max_round_threshold;
    h->max_cached = conf->pinned_max_cached_size;
    h->reserve_size = conf->pinned_reserve_segment_size;
    h->use_register = conf->pinned_use_cuda_host_register;
    h->register_threads = conf->pinned_num_register_threads;
    ga_addrmap_init(&h->ptrs, sizeof(ga_host_ptr_t));
    *out = h;
    return GALLOC_OK;
}

void ga_host_destroy(ga_host_t *h)
{
    if (h == NULL)
        return;
    for (size_t k = 0; k < h->q_n; k++) /* pending blocks are given back below with the rest */
        event_put(h, h->queue[q_index(h, k)].event);
    for (size_t i = 0; i < h->n_idle; i++)
        (void)ga_backend_event_destroy(h->backend, h->idle[i]);
    for (size_t i = 0; i < h->ptrs.cap; i++) {
        ga_host_ptr_t *e = ga_addrmap_slot(&h->ptrs, i);
        if (e == NULL)
            continue;
        ga_host_block_t *b = e->block;
        if (ga_host_unpin(h, b->ptr, b->size, (ga_host_kind_t)b->kind) != GALLOC_OK)
            (void)ga_host_unpin(h, b->ptr, b->size, (ga_host_kind_t)b->kind); /* once more, then left */
        if (b->streams != b->inline_streams)
            free(b->streams);
        free(b);
    }
    ga_host_pin_close(h);
    for (ga_host_block_t *b = h->spare, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    ga_addrmap_destroy(&h->ptrs);
    free(h->queue);
    free(h->idle);
    free(h);
}

/* get_free_block (#192722): from the back of the bucket, the first block of
 * at least size bytes (exact: of exactly size bytes). */
static ga_host_block_t *get_free_block(ga_host_t *h, size_t size, bool exact)
{
    for (ga_host_block_t *b = h->free[ga_host_bucket(size)].tail; b != NULL; b = b->prev)
        if (exact ? b->size == size : b->size >= size)
            return b;
    return NULL;
}

static galloc_status_t host_malloc(ga_host_t *h, size_t size, void **ptr, bool exact, bool *fresh)
{
    *fresh = false;
    if (ptr == NULL)
        return ga_fail(h->err, GALLOC_E_INVAL, "host_malloc: ptr is NULL");
    *ptr = NULL;
    if (size == 0)
        return GALLOC_OK;
    if (size > GA_HOST_MAX_BLOCK)
        return ga_fail(h->err, GALLOC_E_NOMEM, "host_malloc: %zu bytes of pinned host memory: more than 2^63 bytes",
                       size);
    process_events(h);
    size_t round = size;
    if (!exact && size <= h->round_threshold && size <= h->max_cached)
        round = (size_t)1 << ga_host_bucket(size); /* PowerOf2Ceil */
    ga_host_block_t *b = get_free_block(h, round, exact);
    if (b != NULL) {
        cache_take(h, b);
        b->allocated = true;
        count_active(h, b, true);
        *ptr = b->ptr;
        return GALLOC_OK;
    }
    /* A miss: every allocation that can fail comes before the driver's. */
    if (ga_addrmap_reserve(&h->ptrs, 1) != GALLOC_OK)
        return ga_fail(h->err, GALLOC_E_NOMEM, "host_malloc: out of host memory for the block table");
    b = record_get(h);
    if (b == NULL)
        return ga_fail(h->err, GALLOC_E_NOMEM, "host_malloc: out of host memory for a block record");
    ga_host_kind_t kind;
    galloc_status_t st = ga_host_pin(h, round, &b->ptr, &kind);
    if (st != GALLOC_OK) {
        record_put(h, b);
        return st;
    }
    b->size = round;
    b->kind = (uint8_t)kind;
    b->allocated = true;
    ((ga_host_ptr_t *)ga_addrmap_insert(&h->ptrs, (uintptr_t)b->ptr))->block = b;
    ga_stat_increase(&h->allocations, 1);
    ga_stat_increase(&h->allocated_bytes, (int64_t)round);
    count_active(h, b, true);
    *ptr = b->ptr;
    *fresh = true;
    return GALLOC_OK;
}

galloc_status_t ga_host_malloc(ga_host_t *h, size_t size, void **ptr)
{
    bool fresh;
    return host_malloc(h, size, ptr, false, &fresh);
}

galloc_status_t ga_host_take_exact(ga_host_t *h, size_t size, void **ptr, bool *fresh)
{
    return host_malloc(h, size, ptr, true, fresh);
}

static ga_host_block_t *live_block(ga_host_t *h, const char *what, void *ptr)
{
    ga_host_block_t *b = block_find(h, ptr);
    if (b == NULL || !b->allocated) {
        (void)ga_fail(h->err, GALLOC_E_NOT_OWNED, "%s(%p): not a live pinned host block of this allocator%s", what, ptr,
                      b != NULL ? " (freed already)" : "");
        return NULL;
    }
    return b;
}

/* How a free leaves a block that nothing uses any more. */
typedef enum how { CACHE, KEEP, RELEASE } how_t;

static galloc_status_t host_free(ga_host_t *h, void *ptr, how_t how)
{
    if (ptr == NULL)
        return GALLOC_OK;
    ga_host_block_t *b = live_block(h, "host_free", ptr);
    if (b == NULL)
        return GALLOC_E_NOT_OWNED;
    if (b->n_streams == 0) {
        b->allocated = false;
        if (how != RELEASE) {
            maybe_cache_block(h, b, how == KEEP);
            return GALLOC_OK;
        }
        count_active(h, b, false);
        if (ga_host_unpin(h, b->ptr, b->size, (ga_host_kind_t)b->kind) == GALLOC_OK)
            forget(h, b);
        else
            orphan_push(h, b);
        return GALLOC_OK;
    }
    galloc_status_t st = events_reserve(h, b->n_streams);
    if (st != GALLOC_OK)
        return st;
    /* Record on every stream first; a failure gives the events back and
     * leaves the block as it was. */
    uintptr_t ev[GA_HOST_INLINE_STREAMS], *events = ev;
    if (b->n_streams > GA_HOST_INLINE_STREAMS && (events = malloc(b->n_streams * sizeof(*events))) == NULL)
        return ga_fail(h->err, GALLOC_E_NOMEM, "host_free: out of host memory recording %u events", b->n_streams);
    uint32_t got = 0;
    char why[256];
    for (; got < b->n_streams; got++) {
        st = event_get(h, &events[got]);
        if (st == GALLOC_OK && (st = ga_backend_event_record(h->backend, events[got], b->streams[got])) != GALLOC_OK)
            event_put(h, events[got]);
        if (st != GALLOC_OK)
            break;
    }
    if (st != GALLOC_OK) {
        ga_backend_why(h->backend, st, why, sizeof(why));
        while (got > 0)
            event_put(h, events[--got]);
        if (events != ev)
            free(events);
        return ga_fail(h->err, st, "host_free(%p): recording an event on stream %#lx failed: %s", ptr,
                       (unsigned long)b->streams[got], why);
    }
    for (uint32_t i = 0; i < got; i++) {
        h->queue[q_index(h, h->q_n)] = (ga_host_event_t){.event = events[i], .block = b};
        h->q_n++;
    }
    if (events != ev)
        free(events);
    b->event_count += got;
    b->n_streams = 0;
    b->allocated = false;
    return GALLOC_OK;
}

galloc_status_t ga_host_free(ga_host_t *h, void *ptr)
{
    return host_free(h, ptr, CACHE);
}

galloc_status_t ga_host_free_kept(ga_host_t *h, void *ptr)
{
    return host_free(h, ptr, KEEP);
}

galloc_status_t ga_host_free_release(ga_host_t *h, void *ptr)
{
    return host_free(h, ptr, RELEASE);
}

galloc_status_t ga_host_record_stream(ga_host_t *h, void *ptr, galloc_stream_t s)
{
    ga_host_block_t *b = live_block(h, "host_record_stream", ptr);
    if (b == NULL)
        return GALLOC_E_NOT_OWNED;
    if (!GA_BACKEND_HAS(h->backend->ops, event_record) || !GA_BACKEND_HAS(h->backend->ops, event_query))
        return ga_fail(h->err, GALLOC_E_UNSUPPORTED, "host_record_stream: device backend \"%s\" has no events",
                       h->backend->ops->name);
    for (uint32_t i = 0; i < b->n_streams; i++)
        if (b->streams[i] == s)
            return GALLOC_OK; /* a set: once is enough */
    if (b->n_streams == b->cap_streams) {
        uint32_t cap = b->cap_streams * 2;
        galloc_stream_t *grown = malloc(cap * sizeof(*grown));
        if (grown == NULL)
            return ga_fail(h->err, GALLOC_E_NOMEM, "host_record_stream: out of host memory for %u streams", cap);
        memcpy(grown, b->streams, b->n_streams * sizeof(*grown));
        if (b->streams != b->inline_streams)
            free(b->streams);
        b->streams = grown;
        b->cap_streams = cap;
    }
    b->streams[b->n_streams++] = s;
    return GALLOC_OK;
}

/* Give back every free block, or only those `only` selects (kept, orphan);
 * the first refusal's status is returned after trying the rest, and a
 * refused block stays cached and counted (a kept one becomes an orphan). */
typedef enum which { ALL_FREE, KEPT, ORPHANS } which_t;

static galloc_status_t release_free(ga_host_t *h, which_t only)
{
    galloc_status_t first = GALLOC_OK;
    for (unsigned i = 0; i < GA_HOST_BUCKETS; i++) {
        for (ga_host_block_t *b = h->free[i].head, *next; b != NULL; b = next) {
            next = b->next;
            if ((only == KEPT && !b->kept) || (only == ORPHANS && !b->orphan))
                continue;
            galloc_status_t st = ga_host_unpin(h, b->ptr, b->size, (ga_host_kind_t)b->kind);
            if (st != GALLOC_OK) {
                if (first == GALLOC_OK)
                    first = st;
                if (b->kept) {
                    h->kept_bytes -= b->size;
                    b->kept = false;
                    b->orphan = true;
                }
                continue;
            }
            cache_take(h, b);
            forget(h, b);
        }
    }
    return first;
}

galloc_status_t ga_host_empty_cache(ga_host_t *h)
{
    process_events(h);
    return release_free(h, ALL_FREE);
}

galloc_status_t ga_host_release_kept(ga_host_t *h)
{
    return release_free(h, KEPT);
}

void ga_host_retry_orphans(ga_host_t *h)
{
    (void)release_free(h, ORPHANS);
}

uint64_t ga_host_kept_bytes(const ga_host_t *h)
{
    return h->kept_bytes;
}

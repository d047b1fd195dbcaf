/*
 * capture.c: frees of blocks used on other streams while a route is active
 * (PyTorch's deferred_blocks), and graph_capture_record_stream_reuse
 * (c10/cuda/CUDACachingAllocator.cpp: free, record_free_markers,
 * update_visited, free_safe_blocks_in_capture, PRs #158352 and #162186).
 *
 * While any route is active (in PyTorch, a graph capture or a MemPool context
 * is underway) a block freed with stream uses records no event: an event
 * queried during a capture would invalidate it. The block waits on the
 * deferred list, active pending free, with event_count 1 standing for the
 * deferral. The first malloc, empty_cache or synchronize once no route is
 * active records its events (PyTorch's insert_events_deferred_until_no_capture),
 * and from then on it waits as any block with events does.
 *
 * graph_capture_record_stream_reuse:True. At the free, the capture frontier
 * of every stream that used the block (its own stream and each record_stream
 * use) becomes the block's free markers, when all of them are capturing into
 * one capture. A malloc on stream s during a route walks the capture graph
 * back from s's frontier. A deferred block of stream s whose markers are all
 * on that frontier or behind it is free again: whatever is queued on s from
 * now on follows every use of the block in the graph. It returns to its pool
 * with no event, its uses forgotten, and may serve this very malloc. The
 * nodes found behind a stream's frontier are kept per stream and capture, and
 * a later walk stops at them: a capture graph only grows, and a stream's
 * frontier only moves forward.
 *
 * Failures cost memory, never safety: markers that cannot be read or kept
 * (a backend without capture_info, a stream that is not capturing, streams in
 * different captures, an empty frontier, no host memory) leave the block
 * waiting for the end of the routes, as PyTorch does without the setting; a
 * walk that fails frees nothing and forgets the stream's nodes.
 */
#include <stdlib.h>

#include "pool/capture.h"
#include "pool/free.h"
#include "pool/streams.h"

/* The nodes found behind one stream's frontier in one capture. */
typedef struct walk {
    galloc_stream_t stream;
    uint64_t capture_id;
    ga_addrmap_t seen; /* seen_t entries */
} walk_t;

typedef struct seen {
    uintptr_t node; /* the key */
} seen_t;

typedef struct ga_capture {
    walk_t *walks;
    size_t n_walks, cap_walks;
    uintptr_t *buf; /* scratch: a frontier, the walk's stack */
    size_t cap_buf;
} ga_capture_t;

static ga_capture_t *capture_of(ga_pool_t *p)
{
    if (p->capture == NULL)
        p->capture = calloc(1, sizeof(ga_capture_t));
    return p->capture;
}

/* Room for n node handles in the scratch buffer. */
static bool buf_room(ga_capture_t *c, size_t n)
{
    if (n <= c->cap_buf)
        return true;
    size_t cap = c->cap_buf ? c->cap_buf : 64;
    while (cap < n)
        cap *= 2;
    uintptr_t *nb = realloc(c->buf, cap * sizeof(*nb));
    if (nb == NULL)
        return false;
    c->buf = nb;
    c->cap_buf = cap;
    return true;
}

/* A list the backend gives, appended to the scratch at *len: with node 0,
 * stream s's capture (*id, 0 when s is not capturing, with nothing appended)
 * and its frontier; else node's dependencies. The backend says how many there
 * are, so a list that did not fit is read again into a larger scratch.
 * false on any failure. */
static bool read_list(ga_pool_t *p, ga_capture_t *c, galloc_stream_t s, uintptr_t node, uint64_t *id, size_t *len)
{
    for (;;) {
        size_t n = 0, room = c->cap_buf - *len;
        galloc_status_t st = node == 0 ? ga_backend_capture_info(p->backend, s, id, c->buf + *len, room, &n)
                                       : ga_backend_node_deps(p->backend, node, c->buf + *len, room, &n);
        if (st != GALLOC_OK)
            return false;
        if (n <= room) {
            *len += n;
            return true;
        }
        if (!buf_room(c, *len + n))
            return false;
    }
}

/* Stream s's capture and its frontier, appended to the scratch at *len. */
static bool read_frontier(ga_pool_t *p, ga_capture_t *c, galloc_stream_t s, uint64_t *id, size_t *len)
{
    return read_list(p, c, s, 0, id, len);
}

/* The block's free markers: [count, node...], or NULL to wait for the end of
 * the routes (record_free_markers' empty vector). */
static uintptr_t *free_markers(ga_pool_t *p, const ga_block_t *b)
{
    ga_capture_t *c = capture_of(p);
    if (c == NULL || !buf_room(c, 16))
        return NULL;
    uint64_t first = 0, id = 0;
    size_t len = 0;
    if (!read_frontier(p, c, b->stream, &first, &len) || first == 0)
        return NULL;
    for (const ga_event_t *e = b->uses; e != NULL; e = e->next)
        if (!read_frontier(p, c, e->stream, &id, &len) || id != first)
            return NULL; /* not capturing, or another capture: PyTorch asserts one graph */
    if (len == 0)
        return NULL;
    uintptr_t *m = malloc((len + 1) * sizeof(*m));
    if (m == NULL)
        return NULL;
    m[0] = len;
    for (size_t i = 0; i < len; i++)
        m[i + 1] = c->buf[i];
    return m;
}

galloc_status_t ga_pool_free_uses(ga_pool_t *p, ga_block_t *b)
{
    if (p->n_routes == 0)
        return ga_pool_insert_events(p, b);
    b->markers = p->conf.graph_capture_record_stream_reuse ? free_markers(p, b) : NULL;
    b->event_count = 1; /* the deferral */
    p->pending_blocks++;
    b->link = NULL;
    ga_block_t **tail = &p->deferred;
    while (*tail != NULL)
        tail = &(*tail)->link;
    *tail = b;
    return GALLOC_OK;
}

/* Unlink *link's block from the deferred list, its markers gone; its counts
 * are the caller's to change. */
static ga_block_t *unlink_deferred(ga_block_t **link)
{
    ga_block_t *b = *link;
    *link = b->link;
    b->link = NULL;
    free(b->markers);
    b->markers = NULL;
    return b;
}

galloc_status_t ga_pool_insert_deferred(ga_pool_t *p)
{
    if (p->n_routes > 0)
        return GALLOC_OK; /* they wait for the end of the routes */
    while (p->deferred != NULL) {
        ga_block_t *b = p->deferred;
        /* insert_events counts the block and its events afresh, and changes
         * nothing when it fails: the deferral's count goes first and comes
         * back on a failure. */
        b->event_count = 0;
        p->pending_blocks--;
        galloc_status_t st = ga_pool_insert_events(p, b);
        if (st != GALLOC_OK) {
            b->event_count = 1;
            p->pending_blocks++;
            return st;
        }
        (void)unlink_deferred(&p->deferred);
    }
    return GALLOC_OK;
}

static void walk_forget(walk_t *w)
{
    ga_addrmap_destroy(&w->seen);
}

/* The walk of stream s in capture id: an existing one (reset when the stream
 * is in a new capture) or a new one; NULL without host memory. */
static walk_t *walk_for(ga_capture_t *c, galloc_stream_t s, uint64_t id)
{
    for (size_t i = 0; i < c->n_walks; i++) {
        walk_t *w = &c->walks[i];
        if (w->stream != s)
            continue;
        if (w->capture_id != id) {
            walk_forget(w);
            w->capture_id = id;
        }
        return w;
    }
    if (c->n_walks == c->cap_walks) {
        size_t cap = c->cap_walks ? 2 * c->cap_walks : 4;
        walk_t *nw = realloc(c->walks, cap * sizeof(*nw));
        if (nw == NULL)
            return NULL;
        c->walks = nw;
        c->cap_walks = cap;
    }
    walk_t *w = &c->walks[c->n_walks++];
    w->stream = s;
    w->capture_id = id;
    ga_addrmap_init(&w->seen, sizeof(seen_t));
    return w;
}

/* Every node behind the frontier in c->buf[0, len) into w->seen (PyTorch's
 * update_visited: a depth-first walk over node dependencies). */
static bool walk_back(ga_pool_t *p, ga_capture_t *c, walk_t *w, size_t len)
{
    while (len > 0) {
        uintptr_t v = c->buf[--len];
        if (v == 0 || ga_addrmap_find(&w->seen, v) != NULL)
            continue;
        if (ga_addrmap_reserve(&w->seen, 1) != GALLOC_OK)
            return false;
        (void)ga_addrmap_insert(&w->seen, v);
        if (!read_list(p, c, 0, v, NULL, &len))
            return false;
    }
    return true;
}

static bool behind(const walk_t *w, const uintptr_t *m)
{
    for (uintptr_t i = 1; i <= m[0]; i++)
        if (ga_addrmap_find(&w->seen, m[i]) == NULL)
            return false;
    return true;
}

void ga_pool_capture_reuse(ga_pool_t *p, galloc_stream_t stream)
{
    ga_block_t *b = p->deferred;
    while (b != NULL && (b->stream != stream || b->markers == NULL))
        b = b->link;
    if (b == NULL)
        return; /* nothing of this stream could come back */
    ga_capture_t *c = capture_of(p);
    uint64_t id = 0;
    size_t len = 0;
    if (c == NULL || !buf_room(c, 16) || !read_frontier(p, c, stream, &id, &len) || id == 0 || len == 0)
        return;
    walk_t *w = walk_for(c, stream, id);
    if (w == NULL)
        return;
    if (!walk_back(p, c, w, len)) {
        walk_forget(w); /* a node may be marked without its dependencies */
        return;
    }
    ga_block_t **link = &p->deferred;
    while (*link != NULL) {
        b = *link;
        if (b->stream != stream || b->markers == NULL || !behind(w, b->markers)) {
            link = &b->link;
            continue;
        }
        (void)unlink_deferred(link);
        b->event_count = 0; /* the deferral is over */
        p->pending_blocks--;
        ga_pool_uses_release(p, b); /* the graph orders them: no event needed */
        ga_pool_free_block(p, b);
    }
}

void ga_pool_capture_forget(ga_pool_t *p)
{
    ga_capture_t *c = p->capture;
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_walks; i++)
        walk_forget(&c->walks[i]);
    free(c->walks);
    free(c->buf);
    free(c);
    p->capture = NULL;
}

void ga_pool_capture_destroy(ga_pool_t *p)
{
    for (ga_block_t *b = p->deferred; b != NULL; b = b->link) {
        free(b->markers);
        b->markers = NULL;
    }
    p->deferred = NULL;
    ga_pool_capture_forget(p);
}

/*
 * fake_gpu_graph.c: the fake driver's stream capture into graphs (see
 * Capture in fake_gpu.h): the test's controls that begin, extend, join, end
 * and invalidate captures, and the driver's reads of them (capture_info,
 * node_deps), what galloc's backend needs for PyTorch's
 * graph_capture_record_stream_reuse.
 *
 * A capture (fg_capture_t) is its graph too; nodes point at it. Streams in a
 * capture point at it and hold their own frontier. Captures and nodes are
 * kept in fg.captures / fg.nodes until reset, so a node handle stays valid
 * after its capture ended, as a graph outlives its capture; an unknown
 * handle is found out by a search of fg.nodes, never dereferenced.
 */
#include "tests/fake_cuda/fake_gpu_int.h"

/* A test-owned live stream, or NULL (stream 0, the legacy stream, never captures). */
static fg_stream_t *owned_stream(uintptr_t stream)
{
    for (size_t i = 0; stream != 0 && i < fg.n_streams; i++)
        if ((uintptr_t)fg.streams[i] == stream)
            return fg.streams[i];
    return NULL;
}

static bool frontier_has(const fg_stream_t *s, const fg_node_t *n)
{
    for (size_t i = 0; i < s->n_frontier; i++)
        if (s->frontier[i] == n)
            return true;
    return false;
}

/* Add n to s's frontier unless it is there (false: out of host memory). */
static bool frontier_add(fg_stream_t *s, fg_node_t *n)
{
    if (frontier_has(s, n))
        return true;
    if (!fgi_grow((void **)&s->frontier, &s->cap_frontier, s->n_frontier + 1, sizeof(fg_node_t *)))
        return false;
    s->frontier[s->n_frontier++] = n;
    return true;
}

/* Every stream taking part in c leaves it. */
static void capture_finish(fg_capture_t *c)
{
    for (size_t i = 0; i < fg.n_streams; i++)
        if (fg.streams[i]->capture == c) {
            fg.streams[i]->capture = NULL;
            fg.streams[i]->n_frontier = 0;
        }
    c->status = FGI_CAPTURE_ENDED;
    c->origin = NULL;
}

int fg_capture_begin(uintptr_t stream)
{
    FG_LOCK();
    int rc = -1;
    fg_stream_t *s = owned_stream(stream);
    fg_capture_t *c = NULL;
    if (s != NULL && s->capture == NULL && (c = calloc(1, sizeof(*c))) != NULL) {
        if (FG_PUSH(captures, c)) {
            *c = (fg_capture_t){.id = ++fg.next_capture_id, .status = FG_CAPTURE_ACTIVE, .origin = s};
            s->capture = c;
            s->n_frontier = 0;
            rc = 0;
        } else {
            free(c);
        }
    }
    FG_UNLOCK();
    return rc;
}

int fg_capture_launch(uintptr_t stream, uintptr_t *node)
{
    FG_LOCK();
    int rc = -1;
    fg_stream_t *s = owned_stream(stream);
    if (s != NULL && node != NULL && s->capture != NULL && s->capture->status == FG_CAPTURE_ACTIVE) {
        fg_node_t *n = calloc(1, sizeof(*n));
        fg_node_t **deps = s->n_frontier > 0 ? malloc(s->n_frontier * sizeof(fg_node_t *)) : NULL;
        /* Everything that can fail first, the push last: a failure changes nothing. */
        if (n != NULL && (s->n_frontier == 0 || deps != NULL) &&
            fgi_grow((void **)&s->frontier, &s->cap_frontier, 1, sizeof(fg_node_t *)) && FG_PUSH(nodes, n)) {
            if (s->n_frontier > 0)
                memcpy(deps, s->frontier, s->n_frontier * sizeof(fg_node_t *));
            *n = (fg_node_t){.magic = FG_MAGIC_NODE, .graph = s->capture, .deps = deps, .n_deps = s->n_frontier};
            s->frontier[0] = n;
            s->n_frontier = 1;
            *node = (uintptr_t)n;
            rc = 0;
        } else {
            free(deps);
            free(n);
        }
    }
    FG_UNLOCK();
    return rc;
}

int fg_capture_join(uintptr_t from, uintptr_t to)
{
    FG_LOCK();
    int rc = -1;
    fg_stream_t *f = owned_stream(from), *t = owned_stream(to);
    if (f != NULL && t != NULL && f != t && f->capture != NULL && f->capture->status == FG_CAPTURE_ACTIVE &&
        (t->capture == NULL || t->capture == f->capture)) {
        if (t->capture == NULL)
            t->n_frontier = 0; /* joins with from's frontier only */
        rc = 0;
        for (size_t i = 0; rc == 0 && i < f->n_frontier; i++)
            if (!frontier_add(t, f->frontier[i]))
                rc = -1;
        if (rc == 0)
            t->capture = f->capture;
        else if (t->capture == NULL)
            t->n_frontier = 0;
    }
    FG_UNLOCK();
    return rc;
}

int fg_capture_end(uintptr_t stream)
{
    FG_LOCK();
    fg_stream_t *s = owned_stream(stream);
    int rc = s != NULL && s->capture != NULL && s->capture->origin == s ? 0 : -1;
    if (rc == 0)
        capture_finish(s->capture);
    FG_UNLOCK();
    return rc;
}

int fg_capture_invalidate(uintptr_t stream)
{
    FG_LOCK();
    fg_stream_t *s = owned_stream(stream);
    int rc = s != NULL && s->capture != NULL ? 0 : -1;
    if (rc == 0)
        s->capture->status = FG_CAPTURE_INVALIDATED;
    FG_UNLOCK();
    return rc;
}

/* ---- The driver's side. ---- */

fg_rc_t fg_capture_info(uintptr_t stream, int *status, uint64_t *id, void **graph, void *const **deps, size_t *n)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && status == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "captureStatus_out is NULL");
    fg_stream_t *s = rc == FG_OK ? fgi_stream(stream, device) : NULL;
    if (rc == FG_OK && s == NULL)
        rc = FG_INVALID_HANDLE;
    if (s != NULL) {
        const fg_capture_t *c = s->capture;
        bool active = c != NULL && c->status == FG_CAPTURE_ACTIVE;
        *status = c == NULL ? FG_CAPTURE_NONE : c->status;
        if (id != NULL)
            *id = active ? c->id : 0;
        if (graph != NULL)
            *graph = active ? (void *)c : NULL;
        if (deps != NULL)
            *deps = active ? (void *const *)s->frontier : NULL;
        if (n != NULL)
            *n = active ? s->n_frontier : 0;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_node_deps(void *node, void **deps, size_t *n)
{
    FG_LOCK();
    fg_rc_t rc = fg.initialized ? FG_OK : fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized");
    if (rc == FG_OK && n == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "numDependencies is NULL");
    const fg_node_t *nd = NULL;
    for (size_t i = 0; rc == FG_OK && nd == NULL && i < fg.n_nodes; i++)
        if ((void *)fg.nodes[i] == node)
            nd = fg.nodes[i];
    if (rc == FG_OK && nd == NULL)
        rc = fgi_violation(FG_INVALID_HANDLE, "%p is not a node of a graph", node);
    if (nd != NULL && deps == NULL) {
        *n = nd->n_deps;
    } else if (nd != NULL) {
        size_t k = 0;
        for (; k < *n && k < nd->n_deps; k++)
            deps[k] = nd->deps[k];
        for (size_t j = k; j < *n; j++)
            deps[j] = NULL;
        *n = k;
    }
    FG_UNLOCK();
    return rc;
}

/* ---- For the rest of the core. ---- */

fg_rc_t fgi_graph_refuse_sync(fg_stream_t *s)
{
    s->capture->status = FG_CAPTURE_INVALIDATED;
    return fgi_violation(FG_CAPTURE_UNSUPPORTED,
                         "stream %p is capturing (capture %llu): synchronizing it is not "
                         "permitted and invalidates the capture",
                         (void *)s, (unsigned long long)s->capture->id);
}

void fgi_graph_forget_stream(fg_stream_t *s)
{
    if (s->capture != NULL && s->capture->origin == s)
        capture_finish(s->capture);
    s->capture = NULL;
    free(s->frontier);
    s->frontier = NULL;
    s->n_frontier = s->cap_frontier = 0;
}

void fgi_graph_release_all(void)
{
    for (size_t i = 0; i < fg.n_streams; i++)
        fgi_graph_forget_stream(fg.streams[i]);
    for (size_t i = 0; i < fg.n_nodes; i++) {
        fg.nodes[i]->magic = 0;
        free(fg.nodes[i]->deps);
        free(fg.nodes[i]);
    }
    for (size_t i = 0; i < fg.n_captures; i++)
        free(fg.captures[i]);
    free(fg.nodes);
    free(fg.captures);
    fg.nodes = NULL;
    fg.captures = NULL;
    fg.n_nodes = fg.cap_nodes = fg.n_captures = fg.cap_captures = 0;
}

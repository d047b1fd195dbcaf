/*
 * fake_gpu_sync.c: the fake driver's streams and events (see fake_gpu.h).
 * A stream counts the work queued on it (submitted) and finished (completed);
 * in automatic mode both move together, in manual mode completion waits for a
 * synchronization or the test. An event remembers its stream and position.
 */
#include "tests/fake_cuda/fake_gpu_int.h"

void fgi_complete(fg_stream_t *s, uint64_t upto)
{
    uint64_t to = upto < s->submitted ? upto : s->submitted;
    if (s->completed < to)
        s->completed = to;
}

/* A stream handle valid on device: 0 is the default stream, anything else must
 * be a live stream of that device. NULL (violation counted) otherwise. */
fg_stream_t *fgi_stream(uintptr_t stream, int device)
{
    if (stream == 0)
        return &fg.dev[device].stream0;
    for (size_t i = 0; i < fg.n_streams; i++) {
        if ((uintptr_t)fg.streams[i] != stream)
            continue;
        if (fg.streams[i]->device != device) {
            fgi_violation(FG_INVALID_HANDLE, "stream %#lx belongs to device %d, device %d is current",
                          (unsigned long)stream, fg.streams[i]->device, device);
            return NULL;
        }
        return fg.streams[i];
    }
    fgi_violation(FG_INVALID_HANDLE, "%#lx is not a live stream", (unsigned long)stream);
    return NULL;
}

static size_t event_index(void *e)
{
    size_t i = 0;
    while (i < fg.n_events && (void *)fg.events[i] != e)
        i++;
    return i;
}

/* An event last recorded on a capturing stream: refused (a violation) for a
 * query or a wait, as the real drivers refuse it (CUDA_ERROR_CAPTURED_EVENT). */
static fg_rc_t refuse_captured(const fg_event_t *e)
{
    return fgi_violation(FG_CAPTURED_EVENT, "event %p was last recorded on a capturing stream", (const void *)e);
}

/* A live event of the current device, or NULL with a violation counted. */
static fg_event_t *event_get(void *e, int device, fg_rc_t *rc)
{
    size_t i = event_index(e);
    if (i == fg.n_events) {
        *rc = fgi_violation(FG_INVALID_HANDLE, "%p is not a live event", e);
        return NULL;
    }
    if (fg.events[i]->device != device) {
        *rc = fgi_violation(FG_INVALID_CONTEXT, "event %p belongs to device %d, device %d is current", e,
                            fg.events[i]->device, device);
        return NULL;
    }
    return fg.events[i];
}

fg_rc_t fg_event_create(void **event, bool timing)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && event == NULL)
        rc = fgi_violation(FG_INVALID_VALUE, "phEvent is NULL");
    fg_event_t *e = NULL;
    if (rc == FG_OK && (!fgi_grow((void **)&fg.events, &fg.cap_events, fg.n_events + 1, sizeof(fg_event_t *)) ||
                        (e = calloc(1, sizeof(*e))) == NULL))
        rc = FG_OUT_OF_MEMORY;
    if (rc == FG_OK) {
        *e = (fg_event_t){.magic = FG_MAGIC_EVENT, .device = device, .timing = timing};
        fg.events[fg.n_events++] = e;
        fg.events_with_timing += timing;
        *event = e;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_event_create_flags(void **event, unsigned flags, unsigned allowed)
{
    if ((flags & ~allowed) != 0 || ((flags & 0x4u) && !(flags & 0x2u)))
        return fg_violation(FG_INVALID_VALUE, "bad event flags %#x", flags);
    return fg_event_create(event, (flags & 0x2u) == 0);
}

fg_rc_t fg_event_destroy(void *event)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_event_t *e = rc == FG_OK ? event_get(event, device, &rc) : NULL;
    if (e != NULL) {
        FG_REMOVE(events, event_index(e));
        e->magic = 0;
        free(e);
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_event_record(void *event, uintptr_t stream)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_event_t *e = rc == FG_OK ? event_get(event, device, &rc) : NULL;
    fg_stream_t *s = e != NULL ? fgi_stream(stream, device) : NULL;
    if (e != NULL && s == NULL)
        rc = FG_INVALID_HANDLE;
    if (s != NULL && s->capture != NULL) {
        e->stream = NULL; /* a node of the capture graph: nothing runs now */
        e->captured = true;
    } else if (s != NULL) {
        e->stream = s;
        e->seq = ++s->submitted;
        e->captured = false;
        if (!fg.manual)
            s->completed = s->submitted;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_event_query(void *event)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_event_t *e = rc == FG_OK ? event_get(event, device, &rc) : NULL;
    if (e != NULL && e->captured)
        rc = refuse_captured(e);
    else if (e != NULL && e->stream != NULL && e->stream->completed < e->seq)
        rc = FG_NOT_READY; /* an answer, not a violation */
    FG_UNLOCK();
    return rc;
}

/* Waiting for an event finishes its stream's work up to that record. */
fg_rc_t fg_event_synchronize(void *event)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_event_t *e = rc == FG_OK ? event_get(event, device, &rc) : NULL;
    if (e != NULL && e->captured) {
        rc = refuse_captured(e);
    } else if (e != NULL && e->stream != NULL) {
        fgi_complete(e->stream, e->seq);
        fgi_pool_settle(device);
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_stream_synchronize(uintptr_t stream)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    fg_stream_t *s = rc == FG_OK ? fgi_stream(stream, device) : NULL;
    if (rc == FG_OK && s == NULL)
        rc = FG_INVALID_HANDLE;
    if (s != NULL && s->capture != NULL) {
        rc = fgi_graph_refuse_sync(s);
    } else if (s != NULL) {
        fgi_complete(s, UINT64_MAX);
        fgi_pool_settle(device);
    }
    FG_UNLOCK();
    return rc;
}

uint64_t fgi_sync_release_all(int device)
{
    uint64_t live = 0;
    for (size_t i = 0; i < fg.n_events;) {
        if (device >= 0 && fg.events[i]->device != device) {
            i++;
            continue;
        }
        live++;
        fg.events[i]->magic = 0;
        free(fg.events[i]);
        FG_REMOVE(events, i);
    }
    return live;
}

/* ---- Test-owned streams. ---- */

int fg_stream_create(int device, uintptr_t *stream)
{
    FG_LOCK();
    int rc = -1;
    fg_stream_t *s = NULL;
    if (device >= 0 && device < fg.ndev && stream != NULL &&
        fgi_grow((void **)&fg.streams, &fg.cap_streams, fg.n_streams + 1, sizeof(fg_stream_t *)) &&
        (s = calloc(1, sizeof(*s))) != NULL) {
        *s = (fg_stream_t){.magic = FG_MAGIC_STREAM, .device = device};
        fg.streams[fg.n_streams++] = s;
        *stream = (uintptr_t)s;
        rc = 0;
    }
    FG_UNLOCK();
    return rc;
}

int fg_stream_destroy(uintptr_t stream)
{
    FG_LOCK();
    size_t i = 0;
    while (i < fg.n_streams && (uintptr_t)fg.streams[i] != stream)
        i++;
    int rc = i < fg.n_streams ? 0 : -1;
    if (rc == 0) {
        fg_stream_t *s = fg.streams[i];
        /* Nothing may point at it any more: its work counts as done. */
        for (size_t j = 0; j < fg.n_events; j++)
            if (fg.events[j]->stream == s)
                fg.events[j]->stream = NULL;
        for (size_t j = 0; j < fg.n_allocs; j++)
            if (fg.allocs[j].free_stream == s) {
                fg.allocs[j].free_stream = &fg.dev[s->device].stream0;
                fg.allocs[j].free_seq = 0;
            }
        fgi_graph_forget_stream(s);
        FG_REMOVE(streams, i);
        s->magic = 0;
        free(s);
    }
    FG_UNLOCK();
    return rc;
}

int fg_stream_complete(int device, uintptr_t stream)
{
    FG_LOCK();
    int rc = -1;
    if (device >= 0 && device < fg.ndev) {
        fg_stream_t *s = stream == 0 ? &fg.dev[device].stream0 : NULL;
        for (size_t i = 0; s == NULL && i < fg.n_streams; i++)
            if ((uintptr_t)fg.streams[i] == stream)
                s = fg.streams[i];
        if (s != NULL) {
            fgi_complete(s, UINT64_MAX);
            rc = 0;
        }
    }
    FG_UNLOCK();
    return rc;
}

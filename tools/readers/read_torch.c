/*
 * read_torch.c: PyTorch memory snapshots (torch.cuda.memory._dump_snapshot),
 * decoded by pickle_read.c, walked by torch_snapshot.c and turned into replay
 * events.
 *
 * What is replayed, per device ("unit") of device_traces:
 *  - alloc -> GA_EV_ALLOC (addr is the id, size is the request, PyTorch records
 *    orig_size there);
 *  - free_requested immediately followed by free_completed of the same address
 *    -> GA_EV_FREE (MemoryViz.js merges the pair the same way);
 *  - free_requested on its own -> GA_EV_FREE_PENDING: the block was used on
 *    other streams and PyTorch waits for their events before reuse; a later
 *    free_completed -> GA_EV_FREE_COMPLETED;
 *  - oom -> GA_EV_OOM (size: the rounded request PyTorch failed to place);
 *  - annotate with a str user_metadata -> GA_EV_ANNOTATE;
 *  - any other entry whose user_metadata (2.9+, the recording thread's
 *    _set_memory_metadata string) is a non-empty str that differs from the
 *    last one seen in the unit -> a GA_EV_ANNOTATE with it, just before the
 *    entry's own event: the point where the user's label changed ("step 8847")
 *    is kept as a marker, not repeated on every entry. compile_context is
 *    read (torch_snapshot.h) but not replayed. An entry's 'device', when a
 *    file has one, must be its list's index; its 'pool_id' goes with the
 *    event (ga_event_t.pool_id);
 *  - a unit with free_completed entries and no free_requested (recorded with
 *    skip_actions=["free_requested"]): each free_completed -> GA_EV_FREE, and
 *    the prologue takes them as the frees;
 *  - snapshot -> GA_EV_SNAPSHOT (size: the active bytes it recorded): a
 *    marker, which a replay's recorded history keeps in its place;
 *  - a run of segment_free/unmap not followed by an oom -> GA_EV_EMPTY_CACHE
 *    with size = the next segment's, which the replay performs only if the
 *    device had room for that segment (see release_run_may_be_empty_cache);
 *  - segment_alloc/map and the other segment_free/unmap entries are the
 *    allocator's own decisions, which the replay recomputes: counted as
 *    skipped, as are actions this reader does not know (newer PyTorch releases);
 *    a segment_alloc's or segment_map's address goes with the next alloc
 *    (ga_event_t.place) for sim_placement:recorded.
 *
 * Older layouts: a bare list of segments (torch.cuda.memory_snapshot(),
 * PyTorch 1.13's _snapshot()) has no trace, so it replays as its prologue
 * alone: the blocks live when it was taken, which shows what that state
 * costs under each configuration; with no live block it is refused (nothing
 * to replay). PyTorch 2.0 blocks without 'address' or 'requested_size' get
 * them from the walker (torch_snapshot.h).
 *
 * The trace is a ring buffer (max_entries), so it may start mid-run. Blocks
 * live before its first entry are recreated first, as a prologue: those freed
 * in the trace without having been allocated in it (in the order of their
 * frees), then those still live in `segments` at the end whose address the
 * trace never mentions (in segment and address order). Their original
 * allocation order is unknown, so the prologue is an approximation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/idmap.h"
#include "tools/readers/reader_int.h"
#include "tools/readers/torch_int.h"
#include "tools/snapshot/pickle_read.h"
#include "tools/snapshot/snapfile.h"
#include "tools/snapshot/torch_snapshot.h"

int ga_torch_rd_entry_err(ga_reader_t *r, char *err, size_t errlen, size_t i, const char *what)
{
    ga_torch_rd_t *t = r->impl;
    snprintf(err, errlen, "%s: device_traces[%d][%zu]: %s", r->in.path, t->devices[r->unit], i, what);
    return -1;
}

static int torch_begin(ga_reader_t *r, size_t unit, char *err, size_t errlen)
{
    ga_torch_rd_t *t = r->impl;
    t->trace = ga_torch_trace(&t->snap, (size_t)t->devices[unit]);
    t->next = 0;
    t->place = 0;
    t->meta = NULL;
    t->meta_len = 0;
    t->meta_done = 0;
    bool requested = false, completed = false;
    if (ga_torch_rd_load_annotations(r, err, errlen) != 0)
        return -1;
    free(t->pro);
    t->pro = NULL;
    t->n_pro = t->pro_next = t->pro_cap = 0;
    for (size_t i = 0; i < t->trace.n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(&t->trace, i, &e);
        if (!e.is_dict)
            return ga_torch_rd_entry_err(r, err, errlen, i, "not a dict");
        if (e.action == GA_ACT_FREE_REQUESTED)
            requested = true;
        else if (e.action == GA_ACT_FREE_COMPLETED)
            completed = true;
    }
    t->completed_only = completed && !requested;
    ga_idmap_t live, seen;
    ga_idmap_init(&live);
    ga_idmap_init(&seen);
    int rc = ga_torch_rd_prologue_trace(r, &live, &seen, err, errlen);
    if (rc == 0)
        rc = ga_torch_rd_prologue_segments(r, &seen, err, errlen);
    ga_idmap_free(&live);
    ga_idmap_free(&seen);
    r->notes.prologue = t->n_pro;
    return rc;
}

/*
 * A run of segment_free / segment_unmap entries (t->next is just past its
 * first) is either the release path of a malloc (the OOM path, garbage
 * collection, releasing oversize blocks: PyTorch then allocates or fails, so
 * a segment_alloc, segment_map or oom comes next) or torch.cuda.empty_cache(),
 * which the replay must perform itself: the allocator frees cached segments
 * outside any allocation only there. Skips the run's other entries. Returns
 * false when an oom follows (certainly a malloc's release); otherwise true,
 * with *next_segment the size of the segment_alloc / segment_map that
 * follows (0 if none): the replay decides whether the device had room for it
 * (then PyTorch's allocation could not have failed: empty_cache) or not
 * (then the next malloc's own OOM path reproduces the release).
 */
static bool release_run_may_be_empty_cache(ga_torch_rd_t *t, uint64_t *next_segment)
{
    *next_segment = 0;
    uint64_t released = 0, n;
    for (size_t i = t->next - 1; i < t->trace.n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(&t->trace, i, &e);
        if (e.action == GA_ACT_SEGMENT_FREE || e.action == GA_ACT_SEGMENT_UNMAP) {
            if (ga_torch_int_get(e.size, true, 0, &n))
                released += n;
            t->next = i + 1;
            continue;
        }
        if (e.action == GA_ACT_OOM) {
            t->released = released; /* for the oom's event: how far the flush brought reserved down */
            return false;
        }
        if ((e.action == GA_ACT_SEGMENT_ALLOC || e.action == GA_ACT_SEGMENT_MAP) &&
            !ga_torch_int_get(e.size, true, 0, next_segment))
            *next_segment = 0;
        return true;
    }
    return true; /* released at the end of the trace: nothing else explains it */
}

/* An alloc, free_requested, free_completed or oom entry i as its event. */
static int block_event(ga_reader_t *r, const ga_torch_entry_t *e, size_t i, ga_event_t *ev, char *err, size_t errlen)
{
    ga_torch_rd_t *t = r->impl;
    bool oom = e->action == GA_ACT_OOM;
    if (!ga_torch_int_get(e->addr, !oom, 0, &ev->id) || !ga_torch_int_get(e->size, true, 0, &ev->size) ||
        !ga_torch_int_get(e->stream, false, 0, &ev->stream))
        return ga_torch_rd_entry_err(r, err, errlen, i, "'addr', 'size' and 'stream' must be ints ('size' present)");
    if ((int64_t)ev->size < 0)
        return ga_torch_rd_entry_err(r, err, errlen, i, "negative 'size'");
    ev->frames = e->frames; /* the user's code, for the snapshot galloc writes of the replay */
    if (e->time_us.kind == GA_TORCH_INT)
        ev->time_us = (int64_t)e->time_us.v;
    if (e->action == GA_ACT_ALLOC || oom)
        ga_torch_rd_set_stack(t, ev, e->frames, e->time_us.kind == GA_TORCH_INT);
    if (e->action == GA_ACT_ALLOC) {
        ev->kind = GA_EV_ALLOC;
        ev->place = t->place; /* PyTorch records a segment_alloc just before the alloc it serves */
        t->place = 0;
    } else if (oom) {
        ev->kind = GA_EV_OOM;
        ev->id = 0;
        uint64_t device_free;
        ev->device_free = ga_torch_int_get(e->device_free, false, 0, &device_free) ? device_free : 0;
        ev->released = t->released;
        t->released = 0;
    } else if (e->action == GA_ACT_FREE_COMPLETED && t->completed_only) {
        ev->kind = GA_EV_FREE; /* its free_requested was skipped: this is the free */
        ev->stream = GA_STREAM_NONE;
    } else if (e->action == GA_ACT_FREE_COMPLETED) {
        ev->kind = GA_EV_FREE_COMPLETED;
    } else {
        ev->kind = GA_EV_FREE_PENDING;
        if (t->next < t->trace.n) {
            ga_torch_entry_t n;
            uint64_t naddr;
            ga_torch_entry(&t->trace, t->next, &n);
            if (n.action == GA_ACT_FREE_COMPLETED && ga_torch_int_get(n.addr, true, 0, &naddr) && naddr == ev->id) {
                ev->kind = GA_EV_FREE; /* the common case: no other stream used the block */
                ev->stream = GA_STREAM_NONE;
                t->next++;
            }
        }
    }
    return 1;
}

/* Whether entry i's user_metadata starts a new non-empty label (compared
 * once per entry: the entry is read again after its annotation). */
static bool metadata_changed(ga_torch_rd_t *t, const ga_torch_entry_t *e, size_t i)
{
    if (t->meta_done == i + 1 || e->text == NULL)
        return false;
    t->meta_done = i + 1;
    if (t->meta != NULL && e->text_len == t->meta_len && memcmp(e->text, t->meta, t->meta_len) == 0)
        return false;
    t->meta = e->text;
    t->meta_len = e->text_len;
    return e->text_len > 0; /* cleared: nothing to mark */
}

static int torch_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen)
{
    ga_torch_rd_t *t = r->impl;
    memset(ev, 0, sizeof(*ev));
    if (t->pro_next < t->n_pro) {
        const ga_torch_pro_block_t *p = &t->pro[t->pro_next++];
        ev->kind = GA_EV_ALLOC;
        ev->flags = GA_EVF_PROLOGUE;
        ev->id = p->addr;
        ev->size = p->size;
        ev->stream = p->stream;
        ga_torch_rd_set_stack(t, ev, p->frames, false); /* live at the end: its allocation's stack */
        return 1;
    }
    while (t->next < t->trace.n) {
        size_t i = t->next;
        ga_torch_entry_t e;
        ga_torch_entry(&t->trace, i, &e);
        if (e.action == GA_ACT_NONE) {
            t->next++;
            return ga_torch_rd_entry_err(r, err, errlen, i, "'action' is missing or not a str");
        }
        if (e.device.kind == GA_TORCH_WRONG ||
            (e.device.kind == GA_TORCH_INT && (int64_t)e.device.v != t->devices[r->unit])) {
            t->next++;
            return ga_torch_rd_entry_err(r, err, errlen, i, "'device' is not the index of its list in device_traces");
        }
        ev->where = i;
        if (e.action != GA_ACT_ANNOTATE && metadata_changed(t, &e, i)) {
            ev->kind = GA_EV_ANNOTATE; /* the entry itself comes next */
            ev->text = e.text;
            ev->text_len = e.text_len;
            return 1;
        }
        t->next++;
        ev->pool_id[0] = e.pool_id[0];
        ev->pool_id[1] = e.pool_id[1];
        switch (e.action) {
        case GA_ACT_ANNOTATE:
            if (e.text == NULL)
                break;
            ev->kind = GA_EV_ANNOTATE;
            ev->text = e.text;
            ev->text_len = e.text_len;
            return 1;
        case GA_ACT_SEGMENT_FREE:
        case GA_ACT_SEGMENT_UNMAP:
            if (!release_run_may_be_empty_cache(t, &ev->size))
                break;
            ev->kind = GA_EV_EMPTY_CACHE;
            return 1;
        case GA_ACT_SNAPSHOT:
            if (!ga_torch_int_get(e.size, false, 0, &ev->size) || (int64_t)ev->size < 0)
                ev->size = 0; /* a marker: what it says about the bytes is not needed to replay */
            if (e.time_us.kind == GA_TORCH_INT)
                ev->time_us = (int64_t)e.time_us.v;
            ev->kind = GA_EV_SNAPSHOT;
            return 1;
        case GA_ACT_SEGMENT_ALLOC:
        case GA_ACT_SEGMENT_MAP:
            /* An expandable segment's first map starts at its reservation's
             * base (PyTorch maps a new segment from offset 0); a later one
             * lies inside a live reservation, where sim will not place one. */
            if (!ga_torch_int_get(e.addr, true, 0, &t->place))
                t->place = 0;
            break; /* an address for the next alloc, no event */
        case GA_ACT_ALLOC:
        case GA_ACT_FREE_REQUESTED:
        case GA_ACT_FREE_COMPLETED:
        case GA_ACT_OOM: return block_event(r, &e, i, ev, err, errlen);
        default: break; /* unknown actions */
        }
        r->notes.skipped++;
    }
    return 0;
}

static double torch_progress(const ga_reader_t *r)
{
    const ga_torch_rd_t *t = r->impl;
    size_t total = t->trace.n + t->n_pro;
    return total ? (double)(t->next + t->pro_next) / (double)total : 1.0;
}

static void torch_close(ga_reader_t *r)
{
    ga_torch_rd_t *t = r->impl;
    if (t == NULL)
        return;
    ga_snapfile_close(t->file);
    free(t->pro);
    free(t->an);
    free(t);
    r->impl = NULL;
}

static int torch_device(const ga_reader_t *r, size_t unit)
{
    const ga_torch_rd_t *t = r->impl;
    return unit < r->units ? t->devices[unit] : -1;
}

static const ga_reader_ops_t torch_ops = {.begin = torch_begin,
                                          .next = torch_next,
                                          .progress = torch_progress,
                                          .close = torch_close,
                                          .unit_device = torch_device};

/* The decoded snapshot (a file mapped or inflated, stdin read whole): parsed
 * once; the job reads its settings, verify view and start state from it
 * (ga_reader_snapshot). */
static int load(ga_reader_t *r, ga_torch_rd_t *t, char *err, size_t errlen)
{
    int rc;
    if (strcmp(r->in.path, "-") != 0) {
        rc = ga_snapfile_open(r->in.path, &t->file, err, errlen);
    } else {
        uint8_t *buf;
        size_t len;
        if (ga_input_slurp(&r->in, GA_SNAPFILE_MAX, &buf, &len, err, errlen) != 0)
            return -1;
        rc = ga_snapfile_adopt(buf, len, r->in.path, &t->file, err, errlen);
    }
    if (rc != 0)
        return -1;
    t->len = ga_snapfile_len(t->file);
    t->snap = *ga_snapfile_snapshot(t->file);
    return 0;
}

const ga_torch_snapshot_t *ga_torch_reader_snapshot(const ga_reader_t *r)
{
    const ga_torch_rd_t *t = r->impl;
    return t != NULL && t->file != NULL ? &t->snap : NULL;
}

/* The document's shape: a dict with lists where the replay walks. */
static int check_shape(ga_reader_t *r, const ga_torch_snapshot_t *s, char *err, size_t errlen)
{
    const char *path = r->in.path;
    if (!s->is_dict && !s->is_list) {
        snprintf(err, errlen,
                 "%s: expected a snapshot dict (torch.cuda.memory._dump_snapshot) or a list of "
                 "segments (torch.cuda.memory_snapshot()); the pickle holds a %s",
                 path, s->root_type);
        return -1;
    }
    if (!s->traces.present && !s->segments.present) {
        snprintf(err, errlen,
                 "%s: expected a snapshot dict with 'device_traces' or 'segments'; the dict has "
                 "neither: not a memory snapshot",
                 path);
        return -1;
    }
    if (s->traces.present && !s->traces.is_list) {
        snprintf(err, errlen, "%s: 'device_traces' is a %s, not a list", path, s->traces.type);
        return -1;
    }
    if (s->traces.n > GA_TORCH_MAX_DEVICES) {
        snprintf(err, errlen, "%s: 'device_traces' lists %zu devices (at most %d)", path, s->traces.n,
                 GA_TORCH_MAX_DEVICES);
        return -1;
    }
    for (size_t d = 0; d < s->traces.n; d++) {
        ga_torch_list_t tr = ga_torch_trace(s, d);
        if (!tr.is_list) {
            snprintf(err, errlen, "%s: device_traces[%zu] is a %s, not a list", path, d, tr.type);
            return -1;
        }
    }
    if (s->segments.present && !s->segments.is_list) {
        snprintf(err, errlen, "%s: 'segments' is a %s, not a list", path, s->segments.type);
        return -1;
    }
    return 0;
}

/* Whether any segment holds an allocated or pending-free block. */
static bool has_live_block(const ga_torch_snapshot_t *s)
{
    for (size_t i = 0; i < s->segments.n; i++) {
        ga_torch_segment_t g;
        ga_torch_segment(s, i, &g);
        for (size_t b = 0; g.blocks.is_list && b < g.blocks.n; b++) {
            ga_torch_block_t blk;
            ga_torch_block(&g, b, &blk);
            if (blk.state == GA_STATE_ALLOCATED || blk.state == GA_STATE_PENDING_FREE)
                return true;
        }
    }
    return false;
}

static int torch_open(ga_reader_t *r, char *err, size_t errlen)
{
    ga_torch_rd_t *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    r->impl = t;
    r->ops = &torch_ops; /* from here torch_close frees whatever was made */
    if (load(r, t, err, errlen) != 0 || check_shape(r, &t->snap, err, errlen) != 0)
        return -1;
    /* Units: every device with trace entries or live blocks; device 0 if none. */
    size_t bad = 0;
    r->units = ga_torch_devices(&t->snap, t->devices, &bad);
    if (r->units == 0) {
        snprintf(err, errlen, "%s: segments[%zu]: not a segment dict with a device index below %d", r->in.path, bad,
                 GA_TORCH_MAX_DEVICES);
        return -1;
    }
    if (t->snap.is_list && !has_live_block(&t->snap)) {
        snprintf(err, errlen,
                 "%s: a list of %zu segment%s (torch.cuda.memory_snapshot(), or PyTorch 1.13's "
                 "_snapshot()) with no allocated block: it holds no trace, so there is nothing to "
                 "replay (record one with torch.cuda.memory._record_memory_history() and "
                 "_dump_snapshot())",
                 r->in.path, t->snap.segments.n, t->snap.segments.n == 1 ? "" : "s");
        return -1;
    }
    return torch_begin(r, 0, err, errlen);
}

/* A pickle of protocol 2 to 5 starts with PROTO and its number. */
static int torch_probe(const char *p, size_t n)
{
    return n >= 2 && (unsigned char)p[0] == 0x80 && p[1] >= 2 && p[1] <= 5 ? GA_PROBE_MAGIC : 0;
}

const ga_format_desc_t ga_format_torch = {
    .name = "torch",
    .aliases = {"pytorch", "snapshot"},
    .what = "PyTorch memory snapshot (torch.cuda.memory._dump_snapshot pickle)",
    .probe = torch_probe,
    .open = torch_open,
};

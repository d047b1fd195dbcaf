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

#include "util/grow.h"
#include "tools/idmap.h"
#include "tools/readers/reader_int.h"
#include "tools/snapshot/pickle_read.h"
#include "tools/snapshot/snapfile.h"
#include "tools/snapshot/torch_snapshot.h"

typedef struct pro_block {
    uint64_t addr, size, stream;
    const ga_pk_value_t *frames; /* a block live at the end: its allocation's stack; NULL if unknown */
} pro_block_t;

/* A record_function range's start or end (external_annotations), in time order. */
typedef struct annot {
    int64_t time_us;
    size_t idx; /* its place in external_annotations: ties keep the file's order */
    bool start;
    const char *name;
    size_t len;
} annot_t;

#define MAX_OPEN 16 /* ranges in force at once that an event's stack names (deeper: the outermost kept) */

/* What an event's ga_stack_t reads: the entry's frames, then the ranges in
 * force, innermost (latest started) first. */
typedef struct stack_data {
    const ga_pk_value_t *frames;
    size_t n_frames;
    size_t n_open;
    const annot_t *open[MAX_OPEN];
} stack_data_t;

typedef struct torch {
    ga_snapfile_t *file;               /* the parsed file (read whole from stdin) */
    size_t len;                        /* the file's length */
    ga_torch_snapshot_t snap;          /* its schema walker */
    int devices[GA_TORCH_MAX_DEVICES]; /* device index of each unit */
    ga_torch_list_t trace;             /* the current unit's entries (n = 0 when it has none) */
    size_t next;                       /* next entry of trace */
    pro_block_t *pro;                  /* the current unit's prologue */
    size_t n_pro, pro_next, pro_cap;
    uint64_t place;    /* the address of a segment_alloc or segment_map not yet given to its alloc */
    uint64_t released; /* bytes of the segment_free/unmap run just before an oom entry */
    const char *meta;  /* the last non-annotate entry's str user_metadata in this unit (NULL: none yet) */
    size_t meta_len;
    size_t meta_done; /* 1 + the entry whose user_metadata was last compared (0: none) */
    /* The unit has free_completed entries and no free_requested: recorded with
     * _record_memory_history(skip_actions=["free_requested"]) (PR #168183), so
     * each free_completed is the user's free as well. */
    bool completed_only;
    annot_t *an; /* the current unit's device's external_annotations, by time */
    size_t n_an, an_next;
    const annot_t *open[MAX_OPEN]; /* the ranges started and not ended before the last event read */
    size_t n_open;
    stack_data_t sd; /* the last event's stack */
} torch_t;

static int entry_err(ga_reader_t *r, char *err, size_t errlen, size_t i, const char *what)
{
    torch_t *t = r->impl;
    snprintf(err, errlen, "%s: device_traces[%d][%zu]: %s", r->in.path, t->devices[r->unit], i, what);
    return -1;
}

static int push_pro(torch_t *t, pro_block_t b)
{
    pro_block_t *np = ga_grow(t->pro, &t->pro_cap, t->n_pro, sizeof(*np), 64);
    if (np == NULL)
        return -1;
    t->pro = np;
    t->pro[t->n_pro++] = b;
    return 0;
}

/* Prologue step 1: frees of addresses the trace never allocated before. */
static int prologue_from_trace(ga_reader_t *r, ga_idmap_t *live, ga_idmap_t *seen, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    ga_idmap_val_t none = {0};
    for (size_t i = 0; i < t->trace.n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(&t->trace, i, &e);
        uint64_t addr, size, stream;
        bool is_alloc = e.action == GA_ACT_ALLOC;
        bool is_free = e.action == (t->completed_only ? GA_ACT_FREE_COMPLETED : GA_ACT_FREE_REQUESTED);
        if (!is_alloc && !is_free)
            continue;
        if (!ga_torch_int_get(e.addr, true, 0, &addr) || !ga_torch_int_get(e.size, true, 0, &size) ||
            !ga_torch_int_get(e.stream, false, 0, &stream))
            return entry_err(r, err, errlen, i, "'addr', 'size' and 'stream' must be ints ('addr' and 'size' present)");
        if (is_alloc) {
            if (ga_idmap_put(live, addr, none, NULL, NULL) != 0 || ga_idmap_put(seen, addr, none, NULL, NULL) != 0)
                return entry_err(r, err, errlen, i, "out of host memory");
            continue;
        }
        if (ga_idmap_remove(live, addr, NULL) || ga_idmap_get(seen, addr, NULL))
            continue;
        if (ga_idmap_put(seen, addr, none, NULL, NULL) != 0 ||
            push_pro(t, (pro_block_t){addr, size, stream, NULL}) != 0)
            return entry_err(r, err, errlen, i, "out of host memory");
    }
    return 0;
}

static const char *int_found(ga_torch_int_t f)
{
    return f.kind == GA_TORCH_INT ? "an int" : f.kind == GA_TORCH_MISSING ? "missing" : "not an int";
}

/* A live block the replay cannot recreate: what was expected, what was found. */
static int block_err(ga_reader_t *r, const ga_torch_segment_t *g, size_t s, size_t b, const ga_torch_block_t *blk,
                     char *err, size_t errlen)
{
    const char *why = "";
    if (blk->address.kind == GA_TORCH_MISSING)
        why = g->address.kind != GA_TORCH_INT ? ", and no int segment 'address'"
                                              : ", and a block before without int 'size'";
    else if (blk->requested_size.kind == GA_TORCH_WRONG)
        why = ", 'requested_size' not an int";
    snprintf(err, errlen,
             "%s: segments[%zu].blocks[%zu]: expected a live block with int 'size' and 'address' (PyTorch 2.1+) or "
             "a segment 'address' to count from (2.0); found 'size' %s, 'address' %s%s",
             r->in.path, s, b, int_found(blk->size), int_found(blk->address), why);
    return -1;
}

/* Prologue step 2, one segment: its live blocks the trace never mentions. */
static int segment_prologue(ga_reader_t *r, const ga_torch_segment_t *g, size_t s, uint64_t stream,
                            const ga_idmap_t *seen, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    for (size_t b = 0; b < g->blocks.n; b++) {
        ga_torch_block_t blk;
        ga_torch_block(g, b, &blk);
        uint64_t addr, size, req;
        if (blk.state != GA_STATE_ALLOCATED && blk.state != GA_STATE_PENDING_FREE)
            continue;
        if (!ga_torch_int_get(blk.address, true, 0, &addr) || !ga_torch_int_get(blk.size, true, 0, &size) ||
            !ga_torch_int_get(blk.requested_size, false, size, &req))
            return block_err(r, g, s, b, &blk, err, errlen);
        if (ga_idmap_get(seen, addr, NULL))
            continue;
        if (push_pro(t, (pro_block_t){addr, req, stream, blk.frames}) != 0) {
            snprintf(err, errlen, "%s: out of host memory", r->in.path);
            return -1;
        }
    }
    return 0;
}

/* Prologue step 2: blocks live at the end that the trace never mentions. */
static int prologue_from_segments(ga_reader_t *r, const ga_idmap_t *seen, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    int dev = t->devices[r->unit];
    /* Python writes every block dict once, so a real file holds fewer blocks
     * than bytes; more visits mean shared lists, a hostile file's way to make
     * a small input cost quadratic time. */
    size_t budget = t->len;
    for (size_t s = 0; s < t->snap.segments.n; s++) {
        ga_torch_segment_t g;
        ga_torch_segment(&t->snap, s, &g);
        uint64_t sdev, stream;
        if (!g.is_dict || !ga_torch_int_get(g.device, false, 0, &sdev) ||
            !ga_torch_int_get(g.stream, false, 0, &stream) || (g.blocks.present && !g.blocks.is_list)) {
            snprintf(err, errlen, "%s: segments[%zu]: not a segment dict (device, stream, blocks)", r->in.path, s);
            return -1;
        }
        if ((int64_t)sdev != dev || !g.blocks.present)
            continue;
        if (g.blocks.n > budget) {
            snprintf(err, errlen, "%s: segments[%zu]: more blocks than the file can hold (shared lists?)", r->in.path,
                     s);
            return -1;
        }
        budget -= g.blocks.n;
        if (segment_prologue(r, &g, s, stream, seen, err, errlen) != 0)
            return -1;
    }
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const annot_t *x = a, *y = b;
    if (x->time_us != y->time_us)
        return x->time_us < y->time_us ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The device's record_function ranges (external_annotations), by time. A
 * START or END without an int time or a str name is left out; one without a
 * device applies to every device. */
static int load_annotations(ga_reader_t *r, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    free(t->an);
    t->an = NULL;
    t->n_an = t->an_next = t->n_open = 0;
    if (!t->snap.annotations.is_list || t->snap.annotations.n == 0)
        return 0;
    t->an = malloc(t->snap.annotations.n * sizeof(*t->an));
    if (t->an == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    for (size_t i = 0; i < t->snap.annotations.n; i++) {
        ga_torch_annotation_t a;
        ga_torch_annotation(&t->snap, i, &a);
        if (a.stage == GA_STAGE_OTHER || a.name == NULL || a.time_us.kind != GA_TORCH_INT ||
            (a.device.kind == GA_TORCH_INT && (int64_t)a.device.v != t->devices[r->unit]))
            continue;
        t->an[t->n_an++] = (annot_t){(int64_t)a.time_us.v, i, a.stage == GA_STAGE_START, a.name, a.name_len};
    }
    if (t->n_an > 0)
        qsort(t->an, t->n_an, sizeof(*t->an), by_time);
    return 0;
}

/* Bring the ranges in force up to time us: a range started at or before it
 * and not ended at or before it. An END closes the latest open range of its
 * name (ranges of one thread nest; an unmatched END is ignored). */
static void advance_annotations(torch_t *t, int64_t us)
{
    while (t->an_next < t->n_an && t->an[t->an_next].time_us <= us) {
        const annot_t *a = &t->an[t->an_next++];
        if (a->start) {
            if (t->n_open == MAX_OPEN) { /* deeper than kept: drop the outermost */
                memmove(t->open, t->open + 1, (MAX_OPEN - 1) * sizeof(t->open[0]));
                t->n_open--;
            }
            t->open[t->n_open++] = a;
            continue;
        }
        for (size_t k = t->n_open; k-- > 0;)
            if (t->open[k]->len == a->len && memcmp(t->open[k]->name, a->name, a->len) == 0) {
                memmove(t->open + k, t->open + k + 1, (t->n_open - k - 1) * sizeof(t->open[0]));
                t->n_open--;
                break;
            }
    }
}

static void stack_frame(const void *data, size_t i, ga_frame_t *out)
{
    const stack_data_t *d = data;
    memset(out, 0, sizeof(*out));
    if (i < d->n_frames) {
        ga_torch_frame_t f;
        ga_torch_frame(d->frames, i, &f);
        *out = (ga_frame_t){f.filename, f.filename_len, f.name, f.name_len, f.line};
        return;
    }
    const annot_t *a = d->open[d->n_open - 1 - (i - d->n_frames)]; /* innermost: the latest started */
    out->name = a->name;
    out->name_len = a->len;
}

/* Frames are shared dicts in PyTorch's pickles (the memo), and a range's
 * name is its own object: pointers tell equal frames apart cheaply. */
static uintptr_t stack_key(const void *data, size_t i)
{
    const stack_data_t *d = data;
    if (i < d->n_frames)
        return (uintptr_t)d->frames->u.seq.items[i];
    return (uintptr_t)d->open[d->n_open - 1 - (i - d->n_frames)]->name;
}

/* ev's stack: frames (NULL: none) and, at its time, the ranges in force. */
static void set_stack(torch_t *t, ga_event_t *ev, const ga_pk_value_t *frames, bool timed)
{
    stack_data_t *d = &t->sd;
    d->frames = frames;
    d->n_frames = ga_torch_frames_count(frames);
    d->n_open = 0;
    if (timed) {
        advance_annotations(t, ev->time_us);
        d->n_open = t->n_open;
        memcpy(d->open, t->open, t->n_open * sizeof(t->open[0]));
    }
    if (d->n_frames + d->n_open == 0)
        return;
    ev->stack = (ga_stack_t){
        .kind = GA_STACK_FRAMES, .n = d->n_frames + d->n_open, .data = d, .frame = stack_frame, .key = stack_key};
}

static int torch_begin(ga_reader_t *r, size_t unit, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    t->trace = ga_torch_trace(&t->snap, (size_t)t->devices[unit]);
    t->next = 0;
    t->place = 0;
    t->meta = NULL;
    t->meta_len = 0;
    t->meta_done = 0;
    bool requested = false, completed = false;
    if (load_annotations(r, err, errlen) != 0)
        return -1;
    free(t->pro);
    t->pro = NULL;
    t->n_pro = t->pro_next = t->pro_cap = 0;
    for (size_t i = 0; i < t->trace.n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(&t->trace, i, &e);
        if (!e.is_dict)
            return entry_err(r, err, errlen, i, "not a dict");
        if (e.action == GA_ACT_FREE_REQUESTED)
            requested = true;
        else if (e.action == GA_ACT_FREE_COMPLETED)
            completed = true;
    }
    t->completed_only = completed && !requested;
    ga_idmap_t live, seen;
    ga_idmap_init(&live);
    ga_idmap_init(&seen);
    int rc = prologue_from_trace(r, &live, &seen, err, errlen);
    if (rc == 0)
        rc = prologue_from_segments(r, &seen, err, errlen);
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
static bool release_run_may_be_empty_cache(torch_t *t, uint64_t *next_segment)
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
    torch_t *t = r->impl;
    bool oom = e->action == GA_ACT_OOM;
    if (!ga_torch_int_get(e->addr, !oom, 0, &ev->id) || !ga_torch_int_get(e->size, true, 0, &ev->size) ||
        !ga_torch_int_get(e->stream, false, 0, &ev->stream))
        return entry_err(r, err, errlen, i, "'addr', 'size' and 'stream' must be ints ('size' present)");
    if ((int64_t)ev->size < 0)
        return entry_err(r, err, errlen, i, "negative 'size'");
    ev->frames = e->frames; /* the user's code, for the snapshot galloc writes of the replay */
    if (e->time_us.kind == GA_TORCH_INT)
        ev->time_us = (int64_t)e->time_us.v;
    if (e->action == GA_ACT_ALLOC || oom)
        set_stack(t, ev, e->frames, e->time_us.kind == GA_TORCH_INT);
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
static bool metadata_changed(torch_t *t, const ga_torch_entry_t *e, size_t i)
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
    torch_t *t = r->impl;
    memset(ev, 0, sizeof(*ev));
    if (t->pro_next < t->n_pro) {
        const pro_block_t *p = &t->pro[t->pro_next++];
        ev->kind = GA_EV_ALLOC;
        ev->flags = GA_EVF_PROLOGUE;
        ev->id = p->addr;
        ev->size = p->size;
        ev->stream = p->stream;
        set_stack(t, ev, p->frames, false); /* live at the end: its allocation's stack */
        return 1;
    }
    while (t->next < t->trace.n) {
        size_t i = t->next;
        ga_torch_entry_t e;
        ga_torch_entry(&t->trace, i, &e);
        if (e.action == GA_ACT_NONE) {
            t->next++;
            return entry_err(r, err, errlen, i, "'action' is missing or not a str");
        }
        if (e.device.kind == GA_TORCH_WRONG ||
            (e.device.kind == GA_TORCH_INT && (int64_t)e.device.v != t->devices[r->unit])) {
            t->next++;
            return entry_err(r, err, errlen, i, "'device' is not the index of its list in device_traces");
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
    const torch_t *t = r->impl;
    size_t total = t->trace.n + t->n_pro;
    return total ? (double)(t->next + t->pro_next) / (double)total : 1.0;
}

static void torch_close(ga_reader_t *r)
{
    torch_t *t = r->impl;
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
    const torch_t *t = r->impl;
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
static int load(ga_reader_t *r, torch_t *t, char *err, size_t errlen)
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
    const torch_t *t = r->impl;
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
    torch_t *t = calloc(1, sizeof(*t));
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

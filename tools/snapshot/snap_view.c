/*
 * snap_view.c: the device events and final segments of one device of a
 * PyTorch snapshot (snap_view.h), read the same way from a snapshot PyTorch
 * recorded and from one galloc wrote of its replay, so both sides of the
 * comparison pass through one reader.
 *
 * Segment identity: a segment_alloc gets the next ordinal; the address maps
 * to it until the segment_free of that address, which takes the ordinal
 * along; a final segment whose address is still mapped carries it. Addresses
 * are used only within one file, never compared across files.
 *
 * Orphans (snap_view.h): segment orphans are found on the way through the
 * trace; a free of an address not allocated before it is only a candidate
 * until the final segments are read, since whether a segment held it at the
 * first entry depends on them (classify).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/idmap.h"
#include "tools/snapshot/snap_view.h"
#include "tools/snapshot/snapfile.h"
#include "tools/snapshot/torch_snapshot.h"

/* The device events, by the walker's action (GA_ACT_NONE where not one). */
static const struct {
    ga_torch_action_t act;
    ga_dev_action_t dev;
    const char *name;
} dev_actions[] = {
    {GA_ACT_SEGMENT_ALLOC, GA_DEV_SEGMENT_ALLOC, "segment_alloc"},
    {GA_ACT_SEGMENT_FREE, GA_DEV_SEGMENT_FREE, "segment_free"},
    {GA_ACT_SEGMENT_MAP, GA_DEV_SEGMENT_MAP, "segment_map"},
    {GA_ACT_SEGMENT_UNMAP, GA_DEV_SEGMENT_UNMAP, "segment_unmap"},
    {GA_ACT_OOM, GA_DEV_OOM, "oom"},
    {GA_ACT_ALLOC, GA_DEV_ALLOC, "alloc"},
    {GA_ACT_FREE_REQUESTED, GA_DEV_FREE_REQUESTED, "free_requested"},
    {GA_ACT_FREE_COMPLETED, GA_DEV_FREE_COMPLETED, "free_completed"},
};
#define N_DEV_ACTIONS (sizeof(dev_actions) / sizeof(dev_actions[0]))

const char *ga_dev_action_name(ga_dev_action_t a)
{
    return (unsigned)a < N_DEV_ACTIONS ? dev_actions[a].name : "?";
}

/* Grow *p (n used, *cap allocated, elements of size sz) to hold one more. */
static int grow(void *p, size_t n, size_t *cap, size_t sz)
{
    void *np = ga_grow(*(void **)p, cap, n, sz, 64);
    if (np == NULL)
        return -1;
    *(void **)p = np;
    return 0;
}

#define UNMAPPED_MAX 256 /* unmapped ranges remembered (walk_t.unmapped) */

/* An address range [lo, hi). */
typedef struct range {
    uint64_t lo, hi;
} range_t;

typedef struct ranges {
    range_t *v;
    size_t n, cap;
} ranges_t;

/* A free of an address the trace had not allocated before it. */
typedef struct cand {
    size_t bev;  /* its index in bev */
    bool paired; /* the free_completed of a candidate free_requested: the same block, counted once */
} cand_t;

typedef struct walk {
    ga_idmap_t seen;      /* block addresses allocated (or freed) in the trace; val.stream 1 while the
                             last word on it is a candidate free_requested (its free_completed goes
                             with it) */
    ga_idmap_t live_seg;  /* segment address -> ordinal (in val.stream) */
    ga_idmap_t freed_seg; /* addresses of segments freed in the trace, until a segment_alloc there */
    ranges_t start;       /* what segments held at the first entry (for classify) */
    ranges_t unmapped;    /* pages the trace unmapped and has not mapped again */
    cand_t *cand;         /* n_cand frees of addresses not allocated before them */
    size_t n_cand, cand_cap;
    size_t ev_cap, bev_cap, seg_cap, blk_cap;
    int64_t n_seg_alloc; /* segment_alloc ordinals handed out */
} walk_t;

/* The end of size bytes from lo (saturated: a garbled size must not wrap). */
static uint64_t span_end(uint64_t lo, uint64_t size)
{
    return lo + size < lo ? UINT64_MAX : lo + size;
}

static int push_range(ranges_t *r, uint64_t lo, uint64_t size)
{
    if (grow(&r->v, r->n, &r->cap, sizeof(*r->v)) != 0)
        return -1;
    r->v[r->n++] = (range_t){lo, span_end(lo, size)};
    return 0;
}

/* d is an orphan entry: marked, counted, and the earliest kept. */
static void note_orphan(ga_snap_view_t *v, ga_dev_event_t *d)
{
    d->orphan = true;
    if (v->orphans++ == 0 || d->entry < v->first_orphan.entry)
        v->first_orphan = *d;
}

/* Block events: appended to bev (entry i); which addresses the trace
 * allocated, and frees of addresses it had not allocated before them
 * (candidates: blocks from before the trace, or orphans). Returns 1 when e
 * was one, 0 when not, -1 on host memory. */
static int block_event(ga_snap_view_t *v, walk_t *w, const ga_torch_entry_t *e, size_t i)
{
    ga_idmap_val_t none = {0};
    ga_dev_action_t k = e->action == GA_ACT_ALLOC            ? GA_DEV_ALLOC
                        : e->action == GA_ACT_FREE_REQUESTED ? GA_DEV_FREE_REQUESTED
                        : e->action == GA_ACT_FREE_COMPLETED ? GA_DEV_FREE_COMPLETED
                                                             : GA_DEV_N_ACTIONS;
    if (k == GA_DEV_N_ACTIONS)
        return 0;
    if (grow(&v->bev, v->n_bev, &w->bev_cap, sizeof(*v->bev)) != 0)
        return -1;
    v->bev[v->n_bev++] = (ga_dev_event_t){.action = k, .size = e->size.v, .addr = e->addr.v, .entry = i, .segment = -1};
    if (e->action == GA_ACT_ALLOC)
        return ga_idmap_put(&w->seen, e->addr.v, none, NULL, NULL) != 0 ? -1 : 1;
    ga_idmap_val_t was;
    bool seen = ga_idmap_get(&w->seen, e->addr.v, &was);
    bool paired = seen && was.stream == 1 && e->action == GA_ACT_FREE_COMPLETED;
    if (seen && !paired)
        return 1;
    /* freed, never allocated: from before the trace, or an orphan. Seen from
     * here on; a free_requested's free_completed goes with it (paired). */
    ga_idmap_val_t mark = {.ptr = NULL, .stream = e->action == GA_ACT_FREE_REQUESTED};
    if (grow(&w->cand, w->n_cand, &w->cand_cap, sizeof(*w->cand)) != 0 ||
        ga_idmap_put(&w->seen, e->addr.v, mark, NULL, NULL) != 0)
        return -1;
    w->cand[w->n_cand++] = (cand_t){v->n_bev - 1, paired};
    return 1;
}

/* Whether [lo, hi) lies within one range of the unmapped pages; a map drops
 * every range it touches (coarse, so an unmap is never wrongly an orphan). */
static bool was_unmapped(const walk_t *w, uint64_t lo, uint64_t hi)
{
    for (size_t k = 0; k < w->unmapped.n; k++)
        if (w->unmapped.v[k].lo <= lo && hi <= w->unmapped.v[k].hi)
            return true;
    return false;
}

static void mapped(walk_t *w, uint64_t lo, uint64_t hi)
{
    size_t n = 0;
    for (size_t k = 0; k < w->unmapped.n; k++)
        if (w->unmapped.v[k].hi <= lo || hi <= w->unmapped.v[k].lo)
            w->unmapped.v[n++] = w->unmapped.v[k];
    w->unmapped.n = n;
}

/* A device event (entry i): appended, with its segment's ordinal. */
static int device_event(ga_snap_view_t *v, walk_t *w, const ga_torch_entry_t *e, ga_dev_action_t action, size_t i)
{
    if (grow(&v->ev, v->n_ev, &w->ev_cap, sizeof(*v->ev)) != 0)
        return -1;
    ga_dev_event_t *d = &v->ev[v->n_ev++];
    *d = (ga_dev_event_t){.action = action, .size = e->size.v, .addr = e->addr.v, .entry = i, .segment = -1};
    if (action == GA_DEV_OOM) {
        d->extra = e->device_free.v;
        d->addr = 0;
    } else if (action == GA_DEV_SEGMENT_ALLOC) {
        d->segment = w->n_seg_alloc++;
        ga_idmap_val_t ord = {.ptr = NULL, .stream = (uint64_t)d->segment};
        ga_idmap_remove(&w->freed_seg, e->addr.v, NULL);
        if (ga_idmap_put(&w->live_seg, e->addr.v, ord, NULL, NULL) != 0)
            return -1;
    } else if (action == GA_DEV_SEGMENT_FREE) {
        ga_idmap_val_t ord, none = {0};
        bool traced = ga_idmap_remove(&w->live_seg, e->addr.v, &ord);
        if (traced)
            d->segment = (int64_t)ord.stream;
        else if (ga_idmap_get(&w->freed_seg, e->addr.v, NULL))
            note_orphan(v, d);                                     /* freed twice, no segment_alloc between */
        else if (push_range(&w->start, e->addr.v, e->size.v) != 0) /* made before the trace */
            return -1;
        if (!d->orphan && ga_idmap_put(&w->freed_seg, e->addr.v, none, NULL, NULL) != 0)
            return -1;
    } else if (action == GA_DEV_SEGMENT_MAP) {
        mapped(w, e->addr.v, span_end(e->addr.v, e->size.v));
    } else if (action == GA_DEV_SEGMENT_UNMAP) {
        if (was_unmapped(w, e->addr.v, span_end(e->addr.v, e->size.v)))
            note_orphan(v, d); /* unmapped twice, no segment_map between */
        /* Pages that may have been mapped at the first entry. The unmapped
         * list is searched at every map and unmap, so it is kept short
         * (a real trace holds a few unmaps between maps): past UNMAPPED_MAX
         * ranges a repeated unmap is no longer told, never wrongly told. */
        else if (push_range(&w->start, e->addr.v, e->size.v) != 0 ||
                 (w->unmapped.n < UNMAPPED_MAX && push_range(&w->unmapped, e->addr.v, e->size.v) != 0))
            return -1;
    }
    return 0;
}

static int trace_events(ga_snap_view_t *v, walk_t *w, const ga_torch_list_t *trace, const char *path, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < trace->n; i++) {
        ga_torch_entry_t e;
        ga_torch_entry(trace, i, &e);
        if (e.action == GA_ACT_NONE) {
            snprintf(err, errlen, "%s: device_traces[%d][%zu]: 'action' is missing or not a str", path, v->device, i);
            return -1;
        }
        int rc = block_event(v, w, &e, i);
        size_t k = 0;
        while (rc == 0 && k < GA_DEV_ALLOC && dev_actions[k].act != e.action)
            k++;
        if (rc == 0 && k < GA_DEV_ALLOC) /* else snapshot and annotate entries: not device events */
            rc = device_event(v, w, &e, dev_actions[k].dev, i);
        if (rc < 0)
            goto nomem;
    }
    v->trace_entries = trace->n;
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of host memory", path);
    return -1;
}

/* The blocks of one final segment g (segments[s]) into v. */
static int segment_blocks(ga_snap_view_t *v, walk_t *w, const ga_torch_segment_t *g, size_t s, const char *path,
                          char *err, size_t errlen)
{
    for (size_t b = 0; b < g->blocks.n; b++) {
        ga_torch_block_t blk;
        ga_torch_block(g, b, &blk);
        if (blk.size.kind != GA_TORCH_INT || blk.state == GA_STATE_NONE) {
            snprintf(err, errlen, "%s: segments[%zu].blocks[%zu]: 'size' (int) and 'state' (str) needed", path, s, b);
            return -1;
        }
        ga_block_state_t state = blk.state == GA_STATE_ALLOCATED      ? GA_BLOCK_ALLOCATED
                                 : blk.state == GA_STATE_PENDING_FREE ? GA_BLOCK_PENDING_FREE
                                                                      : GA_BLOCK_INACTIVE;
        if (state != GA_BLOCK_INACTIVE && !ga_idmap_get(&w->seen, blk.address.v, NULL))
            v->untraced_blocks++; /* live at the end, allocated before the trace began */
        if (grow(&v->blk, v->n_blk, &w->blk_cap, sizeof(*v->blk)) != 0) {
            snprintf(err, errlen, "%s: out of host memory", path);
            return -1;
        }
        v->blk[v->n_blk++] = (ga_snap_block_t){blk.size.v, state};
    }
    return 0;
}

static int final_segments(ga_snap_view_t *v, walk_t *w, const ga_torch_snapshot_t *snap, const char *path, char *err,
                          size_t errlen)
{
    /* Shared block lists in a hostile file are bounded by its size (see read_torch.c). */
    size_t budget = GA_SNAPFILE_MAX;
    for (size_t s = 0; s < snap->segments.n; s++) {
        ga_torch_segment_t g;
        ga_torch_segment(snap, s, &g);
        if (!g.is_dict || g.address.kind != GA_TORCH_INT || g.total_size.kind != GA_TORCH_INT ||
            (g.blocks.present && !g.blocks.is_list)) {
            snprintf(err, errlen, "%s: segments[%zu]: not a segment dict (address, total_size, blocks)", path, s);
            return -1;
        }
        if ((int64_t)g.device.v != v->device)
            continue;
        if (grow(&v->seg, v->n_seg, &w->seg_cap, sizeof(*v->seg)) != 0) {
            snprintf(err, errlen, "%s: out of host memory", path);
            return -1;
        }
        ga_snap_segment_t *vs = &v->seg[v->n_seg++];
        ga_idmap_val_t ord;
        *vs = (ga_snap_segment_t){.addr = g.address.v,
                                  .total_size = g.total_size.v,
                                  .segment = -1,
                                  .first_block = v->n_blk,
                                  .expandable = g.expandable,
                                  .pool_id = {g.pool_id[0], g.pool_id[1]}};
        if (ga_idmap_get(&w->live_seg, g.address.v, &ord))
            vs->segment = (int64_t)ord.stream;
        else if (!vs->expandable)
            v->untraced_segments++;
        if (g.blocks.n > budget) {
            snprintf(err, errlen, "%s: segments[%zu]: more blocks than the file can hold", path, s);
            return -1;
        }
        budget -= g.blocks.n;
        if (segment_blocks(v, w, &g, s, path, err, errlen) != 0)
            return -1;
        vs = &v->seg[v->n_seg - 1];
        vs->n_blocks = g.blocks.n;
        /* made before the trace (or an expandable segment's pages): it held its addresses at the first entry */
        if ((vs->segment < 0 || vs->expandable) && push_range(&w->start, vs->addr, vs->total_size) != 0) {
            snprintf(err, errlen, "%s: out of host memory", path);
            return -1;
        }
    }
    return 0;
}

static int by_lo(const void *a, const void *b)
{
    const range_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The candidates (block_event): a block from before the trace where a
 * segment held the address at the first entry, else an orphan. The ranges
 * are sorted by start with each end raised to the largest so far, so the
 * last range starting at or below an address tells whether any covers it. */
static void classify(ga_snap_view_t *v, walk_t *w)
{
    range_t *r = w->start.v;
    size_t n = w->start.n;
    if (n > 0) /* qsort's array must not be NULL even for no elements (C11 7.1.4) */
        qsort(r, n, sizeof(*r), by_lo);
    for (size_t k = 1; k < n; k++)
        if (r[k].hi < r[k - 1].hi)
            r[k].hi = r[k - 1].hi;
    for (size_t c = 0; c < w->n_cand; c++) {
        ga_dev_event_t *b = &v->bev[w->cand[c].bev];
        size_t lo = 0, hi = n;
        while (lo < hi) { /* the first range starting above the address */
            size_t m = lo + (hi - lo) / 2;
            if (r[m].lo <= b->addr)
                lo = m + 1;
            else
                hi = m;
        }
        if (lo > 0 && b->addr < r[lo - 1].hi)
            v->untraced_blocks += !w->cand[c].paired;
        else
            note_orphan(v, b);
    }
}

/* The device's size is at least what was reserved plus what the device still
 * had free when an allocation failed; reserved then is the final reserved
 * minus the device events after the failure. */
static void device_bound(ga_snap_view_t *v)
{
    int64_t reserved = 0;
    for (size_t s = 0; s < v->n_seg; s++)
        reserved += (int64_t)v->seg[s].total_size;
    for (size_t k = v->n_ev; k-- > 0;) { /* back to the state before the trace's first device event */
        const ga_dev_event_t *e = &v->ev[k];
        if (e->action == GA_DEV_SEGMENT_ALLOC || e->action == GA_DEV_SEGMENT_MAP)
            reserved -= (int64_t)e->size;
        else if (e->action == GA_DEV_SEGMENT_FREE || e->action == GA_DEV_SEGMENT_UNMAP)
            reserved += (int64_t)e->size;
    }
    for (size_t k = 0; k < v->n_ev; k++) {
        const ga_dev_event_t *e = &v->ev[k];
        if (e->action == GA_DEV_SEGMENT_ALLOC || e->action == GA_DEV_SEGMENT_MAP)
            reserved += (int64_t)e->size;
        else if (e->action == GA_DEV_SEGMENT_FREE || e->action == GA_DEV_SEGMENT_UNMAP)
            reserved -= (int64_t)e->size;
        else if (reserved >= 0 && (uint64_t)reserved + e->extra > v->device_memory)
            v->device_memory = (uint64_t)reserved + e->extra;
    }
}

/* The device unit `unit` replays: devices with trace entries or segments, in
 * index order, as the trace reader numbers its units. */
static int unit_device(const ga_torch_snapshot_t *snap, size_t unit, const char *path, char *err, size_t errlen)
{
    int devices[GA_TORCH_MAX_DEVICES];
    size_t bad = 0, n = ga_torch_devices(snap, devices, &bad);
    if (n == 0) {
        snprintf(err, errlen, "%s: segments[%zu]: not a segment dict with a device index below %d", path, bad,
                 GA_TORCH_MAX_DEVICES);
        return -1;
    }
    return unit < n ? devices[unit] : 0;
}

int ga_snap_view_load(const ga_torch_snapshot_t *s, const char *path, int device, size_t unit, ga_snap_view_t *v,
                      char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    const ga_torch_snapshot_t snap = *s;
    walk_t w;
    memset(&w, 0, sizeof(w));
    ga_idmap_init(&w.seen);
    ga_idmap_init(&w.live_seg);
    ga_idmap_init(&w.freed_seg);
    int rc = -1;
    /* a bare list of segments (torch.cuda.memory_snapshot()) is read as segments without a trace */
    if (!(snap.is_dict || snap.is_list) || (snap.traces.present && !snap.traces.is_list) ||
        (snap.segments.present && !snap.segments.is_list)) {
        snprintf(err, errlen, "%s: not a PyTorch 2.x snapshot dict (segments, device_traces lists)", path);
        goto out;
    }
    v->device = device >= 0 ? device : unit_device(&snap, unit, path, err, errlen);
    if (v->device < 0)
        goto out;
    ga_torch_list_t trace = ga_torch_trace(&snap, (size_t)v->device);
    if (trace.present && !trace.is_list) {
        snprintf(err, errlen, "%s: device_traces[%d] is not a list", path, v->device);
        goto out;
    }
    if (trace_events(v, &w, &trace, path, err, errlen) != 0 || final_segments(v, &w, &snap, path, err, errlen) != 0)
        goto out;
    classify(v, &w);
    device_bound(v);
    rc = 0;
out:
    ga_idmap_free(&w.seen);
    ga_idmap_free(&w.live_seg);
    ga_idmap_free(&w.freed_seg);
    free(w.start.v);
    free(w.unmapped.v);
    free(w.cand);
    if (rc != 0)
        ga_snap_view_free(v);
    return rc;
}

void ga_snap_view_free(ga_snap_view_t *v)
{
    free(v->ev);
    free(v->bev);
    free(v->seg);
    free(v->blk);
    memset(v, 0, sizeof(*v));
}

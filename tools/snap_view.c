/*
 * snap_view.c: the device events and final segments of one device of a
 * PyTorch snapshot (verify.h), read the same way from a snapshot PyTorch
 * recorded and from one galloc wrote of its replay, so both sides of the
 * comparison pass through one reader.
 *
 * Segment identity: a segment_alloc gets the next ordinal; the address maps
 * to it until the segment_free of that address, which takes the ordinal
 * along; a final segment whose address is still mapped carries it. Addresses
 * are used only within one file, never compared across files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/idmap.h"
#include "tools/pickle_read.h"
#include "tools/snapfile.h"
#include "tools/verify.h"

#define MAX_DEVICES 1024            /* as the trace reader: larger indices are garbled input */

const char *ga_dev_action_name(ga_dev_action_t a)
{
    static const char *const names[] = {"segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom"};
    return (unsigned)a < sizeof(names) / sizeof(names[0]) ? names[a] : "?";
}

static bool get_int(const ga_pk_value_t *d, const char *key, uint64_t *out)
{
    const ga_pk_value_t *v = ga_pk_dict_get(d, key);
    *out = v != NULL && v->type == GA_PK_INT ? (uint64_t)v->u.i : 0;
    return v != NULL && v->type == GA_PK_INT;
}

/* Grow *p (n used, *cap allocated, elements of size sz) to hold one more. */
static int grow(void *p, size_t n, size_t *cap, size_t sz)
{
    if (n < *cap)
        return 0;
    size_t nc = *cap ? *cap * 2 : 64;
    void *np = realloc(*(void **)p, nc * sz);
    if (np == NULL)
        return -1;
    *(void **)p = np;
    *cap = nc;
    return 0;
}

/* The device of unit `unit`: devices with trace entries or segments, in
 * index order (the trace reader's units); device 0 when there is none. */
static int unit_device(const ga_pk_value_t *traces, const ga_pk_value_t *segments, size_t unit)
{
    bool used[MAX_DEVICES] = {false};
    for (size_t d = 0; traces != NULL && d < traces->u.seq.n && d < MAX_DEVICES; d++)
        used[d] = traces->u.seq.items[d]->type == GA_PK_LIST && traces->u.seq.items[d]->u.seq.n > 0;
    for (size_t s = 0; segments != NULL && s < segments->u.seq.n; s++) {
        uint64_t d;
        if (get_int(segments->u.seq.items[s], "device", &d) && d < MAX_DEVICES)
            used[d] = true;
    }
    size_t k = 0;
    for (int d = 0; d < MAX_DEVICES; d++)
        if (used[d] && k++ == unit)
            return d;
    return 0;
}

typedef struct walk {
    ga_idmap_t seen;     /* block addresses allocated (or freed) in the trace */
    ga_idmap_t live_seg; /* segment address -> ordinal (in val.stream) */
    size_t ev_cap, seg_cap, blk_cap;
    int64_t n_seg_alloc; /* segment_alloc ordinals handed out */
} walk_t;

static int trace_events(ga_snap_view_t *v, walk_t *w, const ga_pk_value_t *trace, const char *path, char *err,
                        size_t errlen)
{
    static const char *const names[] = {"segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom"};
    ga_idmap_val_t none = {0};
    for (size_t i = 0; trace != NULL && i < trace->u.seq.n; i++) {
        const ga_pk_value_t *e = trace->u.seq.items[i];
        const ga_pk_value_t *a = ga_pk_dict_get(e, "action");
        if (a == NULL || a->type != GA_PK_STR) {
            snprintf(err, errlen, "%s: device_traces[%d][%zu]: 'action' is missing or not a str", path, v->device,
                     i);
            return -1;
        }
        uint64_t addr, size;
        get_int(e, "addr", &addr);
        get_int(e, "size", &size);
        if (ga_pk_str_eq(a, "alloc")) {
            if (ga_idmap_put(&w->seen, addr, none, NULL, NULL) != 0)
                goto nomem;
            continue;
        }
        if (ga_pk_str_eq(a, "free_requested")) {
            if (!ga_idmap_get(&w->seen, addr, NULL)) { /* freed, never allocated: from before the trace */
                v->untraced_blocks++;
                if (ga_idmap_put(&w->seen, addr, none, NULL, NULL) != 0)
                    goto nomem;
            }
            continue;
        }
        int k = 0;
        while (k < 5 && !ga_pk_str_eq(a, names[k]))
            k++;
        if (k == 5)
            continue; /* block events, snapshot and annotate entries: not device events */
        if (grow(&v->ev, v->n_ev, &w->ev_cap, sizeof(*v->ev)) != 0)
            goto nomem;
        ga_dev_event_t *d = &v->ev[v->n_ev++];
        memset(d, 0, sizeof(*d));
        d->action = (ga_dev_action_t)k;
        d->size = size;
        d->addr = addr;
        d->entry = i;
        d->segment = -1;
        if (d->action == GA_DEV_OOM) {
            get_int(e, "device_free", &d->extra);
            d->addr = 0;
        } else if (d->action == GA_DEV_SEGMENT_ALLOC) {
            d->segment = w->n_seg_alloc++;
            ga_idmap_val_t ord = {.ptr = NULL, .stream = (uint64_t)d->segment};
            if (ga_idmap_put(&w->live_seg, addr, ord, NULL, NULL) != 0)
                goto nomem;
        } else if (d->action == GA_DEV_SEGMENT_FREE) {
            ga_idmap_val_t ord;
            if (ga_idmap_remove(&w->live_seg, addr, &ord))
                d->segment = (int64_t)ord.stream;
        }
    }
    v->trace_entries = trace != NULL ? trace->u.seq.n : 0;
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of host memory", path);
    return -1;
}

static int final_segments(ga_snap_view_t *v, walk_t *w, const ga_pk_value_t *segments, const char *path, char *err,
                          size_t errlen)
{
    size_t budget = GA_SNAPFILE_MAX; /* shared block lists in a hostile file are bounded by its size (see read_torch.c) */
    for (size_t s = 0; segments != NULL && s < segments->u.seq.n; s++) {
        const ga_pk_value_t *sd = segments->u.seq.items[s];
        uint64_t dev, addr, total;
        const ga_pk_value_t *blocks = ga_pk_dict_get(sd, "blocks");
        if (sd->type != GA_PK_DICT || !get_int(sd, "address", &addr) || !get_int(sd, "total_size", &total) ||
            (blocks != NULL && blocks->type != GA_PK_LIST)) {
            snprintf(err, errlen, "%s: segments[%zu]: not a segment dict (address, total_size, blocks)", path, s);
            return -1;
        }
        get_int(sd, "device", &dev);
        if ((int64_t)dev != v->device)
            continue;
        if (grow(&v->seg, v->n_seg, &w->seg_cap, sizeof(*v->seg)) != 0)
            goto nomem;
        ga_snap_segment_t *g = &v->seg[v->n_seg++];
        const ga_pk_value_t *ex = ga_pk_dict_get(sd, "is_expandable");
        ga_idmap_val_t ord;
        *g = (ga_snap_segment_t){.addr = addr, .total_size = total, .segment = -1, .first_block = v->n_blk,
                                 .expandable = ex != NULL && ex->type == GA_PK_BOOL && ex->u.b};
        if (ga_idmap_get(&w->live_seg, addr, &ord))
            g->segment = (int64_t)ord.stream;
        else if (!g->expandable)
            v->untraced_segments++;
        size_t nb = blocks != NULL ? blocks->u.seq.n : 0;
        if (nb > budget) {
            snprintf(err, errlen, "%s: segments[%zu]: more blocks than the file can hold", path, s);
            return -1;
        }
        budget -= nb;
        for (size_t b = 0; b < nb; b++) {
            const ga_pk_value_t *bd = blocks->u.seq.items[b];
            const ga_pk_value_t *st = ga_pk_dict_get(bd, "state");
            uint64_t size, baddr;
            if (!get_int(bd, "size", &size) || st == NULL || st->type != GA_PK_STR) {
                snprintf(err, errlen, "%s: segments[%zu].blocks[%zu]: 'size' (int) and 'state' (str) needed", path,
                         s, b);
                return -1;
            }
            get_int(bd, "address", &baddr);
            ga_block_state_t state = ga_pk_str_eq(st, "active_allocated")      ? GA_BLOCK_ALLOCATED
                                     : ga_pk_str_eq(st, "active_pending_free") ? GA_BLOCK_PENDING_FREE
                                                                                : GA_BLOCK_INACTIVE;
            if (state != GA_BLOCK_INACTIVE && !ga_idmap_get(&w->seen, baddr, NULL))
                v->untraced_blocks++; /* live at the end, allocated before the trace began */
            if (grow(&v->blk, v->n_blk, &w->blk_cap, sizeof(*v->blk)) != 0)
                goto nomem;
            v->blk[v->n_blk++] = (ga_snap_block_t){size, state};
        }
        g->n_blocks = nb;
    }
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of host memory", path);
    return -1;
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

int ga_snap_view_load(const char *path, int device, size_t unit, ga_snap_view_t *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof(*v));
    const ga_pickle_t *pk = NULL;
    walk_t w;
    memset(&w, 0, sizeof(w));
    ga_idmap_init(&w.seen);
    ga_idmap_init(&w.live_seg);
    int rc = -1;
    if (ga_snapfile_get(path, &pk, NULL, err, errlen) != 0)
        goto out;
    const ga_pk_value_t *root = ga_pickle_root(pk);
    const ga_pk_value_t *traces = ga_pk_dict_get(root, "device_traces");
    const ga_pk_value_t *segments = ga_pk_dict_get(root, "segments");
    if (root->type != GA_PK_DICT || (traces != NULL && traces->type != GA_PK_LIST) ||
        (segments != NULL && segments->type != GA_PK_LIST)) {
        snprintf(err, errlen, "%s: not a PyTorch 2.x snapshot dict (segments, device_traces lists)", path);
        goto out;
    }
    v->device = device >= 0 ? device : unit_device(traces, segments, unit);
    const ga_pk_value_t *trace = NULL;
    if (traces != NULL && (size_t)v->device < traces->u.seq.n) {
        trace = traces->u.seq.items[v->device];
        if (trace->type != GA_PK_LIST) {
            snprintf(err, errlen, "%s: device_traces[%d] is not a list", path, v->device);
            goto out;
        }
    }
    if (trace_events(v, &w, trace, path, err, errlen) != 0 || final_segments(v, &w, segments, path, err, errlen) != 0)
        goto out;
    device_bound(v);
    rc = 0;
out:
    ga_idmap_free(&w.seen);
    ga_idmap_free(&w.live_seg);
    if (rc != 0)
        ga_snap_view_free(v);
    return rc;
}

void ga_snap_view_free(ga_snap_view_t *v)
{
    free(v->ev);
    free(v->seg);
    free(v->blk);
    memset(v, 0, sizeof(*v));
}

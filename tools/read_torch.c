/*
 * read_torch.c: PyTorch memory snapshots (torch.cuda.memory._dump_snapshot),
 * decoded by pickle_read.c and turned into replay events.
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
 *  - a run of segment_free/unmap not followed by an oom -> GA_EV_EMPTY_CACHE
 *    with size = the next segment's, which the replay performs only if the
 *    device had room for that segment (see release_run_may_be_empty_cache);
 *  - segment_alloc/map, the other segment_free/unmap entries and snapshot are
 *    the allocator's own decisions, which the replay recomputes: counted as
 *    skipped, as are actions this reader does not know (newer PyTorch releases).
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

#include "tools/pickle_read.h"
#include "tools/idmap.h"
#include "tools/reader_int.h"
#include "tools/snapfile.h"

#define MAX_FILE ((size_t)16 << 30) /* a snapshot larger than this is refused */
#define MAX_DEVICES 1024            /* device indices above this are refused as garbled */

typedef struct pro_block {
    uint64_t addr, size, stream;
} pro_block_t;

typedef struct torch {
    uint8_t *file;                     /* the whole file when read from stdin (strings point into it) */
    size_t len;                        /* the file's length */
    ga_pickle_t *owned;                /* the decoded snapshot when read from stdin */
    const ga_pickle_t *pk;             /* the decoded snapshot: owned, or shared (snapfile.h) */
    const ga_pk_value_t *traces;       /* device_traces (list) or NULL */
    const ga_pk_value_t *segments;     /* segments (list) or NULL */
    int *devices;                      /* device index of each unit */
    const ga_pk_value_t *trace;        /* the current unit's entries (list) or NULL */
    size_t next;                       /* next entry of trace */
    pro_block_t *pro;                  /* the current unit's prologue */
    size_t n_pro, pro_next;
} torch_t;

static int entry_err(ga_reader_t *r, char *err, size_t errlen, size_t i, const char *what)
{
    torch_t *t = r->impl;
    snprintf(err, errlen, "%s: device_traces[%d][%zu]: %s", r->in.path, t->devices[r->unit], i, what);
    return -1;
}

/* An int field of a dict as uint64 bits (addresses and streams are int64 in
 * PyTorch's dict); missing -> dflt if allowed. Returns false on a wrong type. */
static bool get_u64(const ga_pk_value_t *d, const char *key, bool required, uint64_t dflt, uint64_t *out)
{
    const ga_pk_value_t *v = ga_pk_dict_get(d, key);
    if (v == NULL) {
        *out = dflt;
        return !required;
    }
    if (v->type != GA_PK_INT)
        return false;
    *out = (uint64_t)v->u.i;
    return true;
}

static size_t trace_len(const torch_t *t)
{
    return t->trace != NULL ? t->trace->u.seq.n : 0;
}

/* Prologue step 1: frees of addresses the trace never allocated before. */
static int prologue_from_trace(ga_reader_t *r, ga_idmap_t *live, ga_idmap_t *seen, size_t *cap, char *err,
                               size_t errlen)
{
    torch_t *t = r->impl;
    ga_idmap_val_t none = {0};
    for (size_t i = 0; i < trace_len(t); i++) {
        const ga_pk_value_t *e = t->trace->u.seq.items[i];
        const ga_pk_value_t *a = ga_pk_dict_get(e, "action");
        uint64_t addr, size, stream;
        bool is_alloc = ga_pk_str_eq(a, "alloc"), is_free = ga_pk_str_eq(a, "free_requested");
        if (!is_alloc && !is_free)
            continue;
        if (!get_u64(e, "addr", true, 0, &addr) || !get_u64(e, "size", true, 0, &size) ||
            !get_u64(e, "stream", false, 0, &stream))
            return entry_err(r, err, errlen, i, "'addr', 'size' and 'stream' must be ints ('addr' and 'size' present)");
        if (is_alloc) {
            if (ga_idmap_put(live, addr, none, NULL, NULL) != 0 || ga_idmap_put(seen, addr, none, NULL, NULL) != 0)
                return entry_err(r, err, errlen, i, "out of host memory");
            continue;
        }
        if (ga_idmap_remove(live, addr, NULL) || ga_idmap_get(seen, addr, NULL))
            continue;
        if (ga_idmap_put(seen, addr, none, NULL, NULL) != 0)
            return entry_err(r, err, errlen, i, "out of host memory");
        if (t->n_pro == *cap) {
            size_t ncap = *cap ? *cap * 2 : 64;
            pro_block_t *np = realloc(t->pro, ncap * sizeof(*np));
            if (np == NULL)
                return entry_err(r, err, errlen, i, "out of host memory");
            t->pro = np;
            *cap = ncap;
        }
        t->pro[t->n_pro++] = (pro_block_t){addr, size, stream};
    }
    return 0;
}

/* Prologue step 2: blocks live at the end that the trace never mentions. */
static int prologue_from_segments(ga_reader_t *r, const ga_idmap_t *seen, size_t *cap, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    int dev = t->devices[r->unit];
    /* Python writes every block dict once, so a real file holds fewer blocks
     * than bytes; more visits mean shared lists, a hostile file's way to make
     * a small input cost quadratic time. */
    size_t budget = t->len;
    for (size_t s = 0; t->segments != NULL && s < t->segments->u.seq.n; s++) {
        const ga_pk_value_t *seg = t->segments->u.seq.items[s];
        uint64_t sdev, stream;
        const ga_pk_value_t *blocks = ga_pk_dict_get(seg, "blocks");
        if (seg->type != GA_PK_DICT || !get_u64(seg, "device", false, 0, &sdev) ||
            !get_u64(seg, "stream", false, 0, &stream) || (blocks != NULL && blocks->type != GA_PK_LIST)) {
            snprintf(err, errlen, "%s: segments[%zu]: not a segment dict (device, stream, blocks)", r->in.path, s);
            return -1;
        }
        if ((int64_t)sdev != dev || blocks == NULL)
            continue;
        if (blocks->u.seq.n > budget) {
            snprintf(err, errlen, "%s: segments[%zu]: more blocks than the file can hold (shared lists?)",
                     r->in.path, s);
            return -1;
        }
        budget -= blocks->u.seq.n;
        for (size_t b = 0; b < blocks->u.seq.n; b++) {
            const ga_pk_value_t *blk = blocks->u.seq.items[b];
            const ga_pk_value_t *state = ga_pk_dict_get(blk, "state");
            uint64_t addr, size, req;
            if (!ga_pk_str_eq(state, "active_allocated") && !ga_pk_str_eq(state, "active_pending_free"))
                continue;
            if (!get_u64(blk, "address", true, 0, &addr) || !get_u64(blk, "size", true, 0, &size) ||
                !get_u64(blk, "requested_size", false, size, &req)) {
                snprintf(err, errlen, "%s: segments[%zu].blocks[%zu]: 'address' and 'size' must be ints",
                         r->in.path, s, b);
                return -1;
            }
            if (ga_idmap_get(seen, addr, NULL))
                continue;
            if (t->n_pro == *cap) {
                size_t ncap = *cap ? *cap * 2 : 64;
                pro_block_t *np = realloc(t->pro, ncap * sizeof(*np));
                if (np == NULL) {
                    snprintf(err, errlen, "%s: out of host memory", r->in.path);
                    return -1;
                }
                t->pro = np;
                *cap = ncap;
            }
            t->pro[t->n_pro++] = (pro_block_t){addr, req, stream};
        }
    }
    return 0;
}

static int torch_begin(ga_reader_t *r, size_t unit, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    int dev = t->devices[unit];
    t->trace = NULL;
    if (t->traces != NULL && (size_t)dev < t->traces->u.seq.n)
        t->trace = t->traces->u.seq.items[dev];
    t->next = 0;
    free(t->pro);
    t->pro = NULL;
    t->n_pro = t->pro_next = 0;
    for (size_t i = 0; i < trace_len(t); i++)
        if (t->trace->u.seq.items[i]->type != GA_PK_DICT)
            return entry_err(r, err, errlen, i, "not a dict");
    ga_idmap_t live, seen;
    ga_idmap_init(&live);
    ga_idmap_init(&seen);
    size_t cap = 0;
    int rc = prologue_from_trace(r, &live, &seen, &cap, err, errlen);
    if (rc == 0)
        rc = prologue_from_segments(r, &seen, &cap, err, errlen);
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
    while (t->next < trace_len(t)) {
        const ga_pk_value_t *e = t->trace->u.seq.items[t->next];
        const ga_pk_value_t *a = ga_pk_dict_get(e, "action");
        if (ga_pk_str_eq(a, "segment_free") || ga_pk_str_eq(a, "segment_unmap")) {
            t->next++;
            continue;
        }
        if (ga_pk_str_eq(a, "oom"))
            return false;
        if ((ga_pk_str_eq(a, "segment_alloc") || ga_pk_str_eq(a, "segment_map")) &&
            !get_u64(e, "size", true, 0, next_segment))
            *next_segment = 0;
        return true;
    }
    return true; /* released at the end of the trace: nothing else explains it */
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
        return 1;
    }
    while (t->next < trace_len(t)) {
        size_t i = t->next++;
        const ga_pk_value_t *e = t->trace->u.seq.items[i];
        const ga_pk_value_t *a = ga_pk_dict_get(e, "action");
        if (a == NULL || a->type != GA_PK_STR)
            return entry_err(r, err, errlen, i, "'action' is missing or not a str");
        ev->where = i;
        if (ga_pk_str_eq(a, "annotate")) {
            const ga_pk_value_t *m = ga_pk_dict_get(e, "user_metadata");
            if (m == NULL || m->type != GA_PK_STR) {
                r->notes.skipped++;
                continue;
            }
            ev->kind = GA_EV_ANNOTATE;
            ev->text = m->u.s.p;
            ev->text_len = m->u.s.n;
            return 1;
        }
        if (ga_pk_str_eq(a, "segment_free") || ga_pk_str_eq(a, "segment_unmap")) {
            if (release_run_may_be_empty_cache(t, &ev->size)) {
                ev->kind = GA_EV_EMPTY_CACHE;
                return 1;
            }
            r->notes.skipped++;
            continue;
        }
        bool alloc = ga_pk_str_eq(a, "alloc"), freq = ga_pk_str_eq(a, "free_requested");
        bool fcomp = ga_pk_str_eq(a, "free_completed"), oom = ga_pk_str_eq(a, "oom");
        if (!alloc && !freq && !fcomp && !oom) {
            r->notes.skipped++; /* segment_* and snapshot entries, unknown actions */
            continue;
        }
        int64_t size_signed;
        if (!get_u64(e, "addr", !oom, 0, &ev->id) || !get_u64(e, "size", true, 0, &ev->size) ||
            !get_u64(e, "stream", false, 0, &ev->stream))
            return entry_err(r, err, errlen, i, "'addr', 'size' and 'stream' must be ints ('size' present)");
        size_signed = (int64_t)ev->size;
        if (size_signed < 0)
            return entry_err(r, err, errlen, i, "negative 'size'");
        if (alloc) {
            ev->kind = GA_EV_ALLOC;
        } else if (oom) {
            ev->kind = GA_EV_OOM;
            ev->id = 0;
        } else if (fcomp) {
            ev->kind = GA_EV_FREE_COMPLETED;
        } else {
            ev->kind = GA_EV_FREE_PENDING;
            if (t->next < trace_len(t)) {
                const ga_pk_value_t *n = t->trace->u.seq.items[t->next];
                uint64_t naddr;
                if (ga_pk_str_eq(ga_pk_dict_get(n, "action"), "free_completed") &&
                    get_u64(n, "addr", true, 0, &naddr) && naddr == ev->id) {
                    ev->kind = GA_EV_FREE; /* the common case: no other stream used the block */
                    ev->stream = GA_STREAM_NONE;
                    t->next++;
                }
            }
        }
        return 1;
    }
    return 0;
}

static double torch_progress(const ga_reader_t *r)
{
    const torch_t *t = r->impl;
    size_t total = trace_len(t) + t->n_pro;
    return total ? (double)(t->next + t->pro_next) / (double)total : 1.0;
}

static void torch_close(ga_reader_t *r)
{
    torch_t *t = r->impl;
    if (t == NULL)
        return;
    ga_pickle_free(t->owned);
    free(t->file);
    free(t->devices);
    free(t->pro);
    free(t);
    r->impl = NULL;
}

static const ga_reader_ops_t torch_ops = {
    .begin = torch_begin, .next = torch_next, .progress = torch_progress, .close = torch_close};

int ga_read_torch_device(const ga_reader_t *r, size_t unit)
{
    const torch_t *t = r->impl;
    return unit < r->units ? t->devices[unit] : -1;
}

/* Units: every device with trace entries or live blocks; device 0 if none. */
static int find_units(ga_reader_t *r, char *err, size_t errlen)
{
    torch_t *t = r->impl;
    size_t ndev = t->traces != NULL ? t->traces->u.seq.n : 0;
    bool *used = calloc(MAX_DEVICES, sizeof(bool));
    t->devices = calloc(MAX_DEVICES, sizeof(int));
    if (used == NULL || t->devices == NULL) {
        free(used);
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    for (size_t d = 0; d < ndev; d++)
        used[d] = t->traces->u.seq.items[d]->u.seq.n > 0;
    for (size_t s = 0; t->segments != NULL && s < t->segments->u.seq.n; s++) {
        uint64_t d;
        const ga_pk_value_t *seg = t->segments->u.seq.items[s];
        if (seg->type != GA_PK_DICT || !get_u64(seg, "device", false, 0, &d) || d >= MAX_DEVICES) {
            snprintf(err, errlen, "%s: segments[%zu]: not a segment dict with a device index below %d",
                     r->in.path, s, MAX_DEVICES);
            free(used);
            return -1;
        }
        used[d] = true;
    }
    r->units = 0;
    for (size_t d = 0; d < MAX_DEVICES; d++)
        if (used[d])
            t->devices[r->units++] = (int)d;
    if (r->units == 0)
        t->devices[r->units++] = 0;
    free(used);
    return 0;
}

int ga_read_torch_open(ga_reader_t *r, char *err, size_t errlen)
{
    torch_t *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    r->impl = t;
    r->ops = &torch_ops; /* from here torch_close frees whatever was made */
    if (strcmp(r->in.path, "-") != 0) {
        /* A file: parsed once for the reader, the settings, --verify and the seed. */
        if (ga_snapfile_get(r->in.path, &t->pk, &t->len, err, errlen) != 0)
            return -1;
    } else {
        if (ga_input_slurp(&r->in, MAX_FILE, &t->file, &t->len, err, errlen) != 0)
            return -1;
        char perr[256];
        if (ga_pickle_parse(t->file, t->len, NULL, &t->owned, perr, sizeof(perr)) != 0) {
            snprintf(err, errlen, "%s: %s", r->in.path, perr);
            return -1;
        }
        t->pk = t->owned;
    }
    const ga_pk_value_t *root = ga_pickle_root(t->pk);
    if (root->type == GA_PK_LIST) {
        snprintf(err, errlen, "%s: a PyTorch 1.13 snapshot (a list of segments without device_traces); record "
                              "with torch.cuda.memory._record_memory_history() of PyTorch 2.x", r->in.path);
        return -1;
    }
    if (root->type != GA_PK_DICT) {
        snprintf(err, errlen, "%s: the pickle holds a %s, not a snapshot dict", r->in.path,
                 ga_pk_type_name(root->type));
        return -1;
    }
    t->traces = ga_pk_dict_get(root, "device_traces");
    t->segments = ga_pk_dict_get(root, "segments");
    if (t->traces == NULL && t->segments == NULL) {
        snprintf(err, errlen, "%s: the dict has neither 'device_traces' nor 'segments': not a memory snapshot",
                 r->in.path);
        return -1;
    }
    if (t->traces != NULL) {
        if (t->traces->type != GA_PK_LIST) {
            snprintf(err, errlen, "%s: 'device_traces' is a %s, not a list", r->in.path,
                     ga_pk_type_name(t->traces->type));
            return -1;
        }
        if (t->traces->u.seq.n > MAX_DEVICES) {
            snprintf(err, errlen, "%s: 'device_traces' lists %zu devices (at most %d)", r->in.path,
                     t->traces->u.seq.n, MAX_DEVICES);
            return -1;
        }
        for (size_t d = 0; d < t->traces->u.seq.n; d++)
            if (t->traces->u.seq.items[d]->type != GA_PK_LIST) {
                snprintf(err, errlen, "%s: device_traces[%zu] is a %s, not a list", r->in.path, d,
                         ga_pk_type_name(t->traces->u.seq.items[d]->type));
                return -1;
            }
    }
    if (t->segments != NULL && t->segments->type != GA_PK_LIST) {
        snprintf(err, errlen, "%s: 'segments' is a %s, not a list", r->in.path, ga_pk_type_name(t->segments->type));
        return -1;
    }
    if (find_units(r, err, errlen) != 0)
        return -1;
    return torch_begin(r, 0, err, errlen);
}

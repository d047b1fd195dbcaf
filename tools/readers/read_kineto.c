/*
 * read_kineto.c: the memory events of PyTorch profiler (Kineto) Chrome traces
 * (torch.profiler.profile(profile_memory=True) ... export_chrome_trace()):
 *
 *   {"schemaVersion": 1, ..., "traceEvents": [ ...,
 *    {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
 *     "pid": 1, "tid": 1, "ts": 1700000000123.5,
 *     "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": 512,
 *              "Addr": 139872812433408, "Device Type": 1, "Device Id": 0}}, ...]}
 *
 * What is replayed: "[memory]" events with Device Type 1 (c10::DeviceType
 * CUDA; ROCm builds report HIP allocations as CUDA too), one replay per
 * Device Id (a "unit", labelled "device N" as for snapshots). Bytes > 0 is an
 * allocation of Bytes at Addr; Bytes < 0 the free of Addr. CPU memory events,
 * zero-byte events and every other trace event are counted as skipped (the
 * count is kept per unit for the CUDA ones, in total for the rest). The
 * profiler records no streams and no failed allocations, so every event is on
 * the default stream and the trace has no OOM points.
 *
 * Trace events need not be in time order (Chrome's format does not require
 * it), so the memory events are kept and stably sorted by "ts" (to the
 * nanosecond Kineto writes: kineto_event.c) before the replay; ties keep file
 * order. The JSON is scanned as a stream (json_scan.h) and everything else
 * is dropped as it is read, but for the ranges below: memory is 40 bytes per
 * CUDA memory event and 24 per range, not the file size, and a pipe works.
 * For a gzip input what is kept is held to ga_input_hold_check's bound
 * (limits.h), so a bomb of memory events or of ranges is refused, as are
 * sizes and totals above GA_TRACE_BYTES_MAX. Errors say "FILE: byte N:
 * problem"; event indices (e.g. in OOM reports) count traceEvents from 0.
 *
 * Stacks (ga_event_t.stack, GA_STACK_RANGES): an allocation's stack is the
 * profiler's ranges that enclose it on its thread (ops, annotations, Python
 * functions), innermost first; kineto_ranges.c says which ranges are kept,
 * the matching rules and the memory they take (24 bytes a range), all of it
 * counted against the bound above. Frees and prologue events have none.
 *
 * A trace that starts mid-run (the profiler was started after the model was
 * loaded) says so in its totals: "Total Allocated" after the first event
 * minus its "Bytes" was live before it, and its "Total Reserved" was held by
 * the allocator. The unit then starts with a prologue that recreates that
 * state (ga_reader_start_t, GA_START_SEEDED), modelled as simply as the
 * totals allow, since the trace has no addresses or sizes for it:
 *  - the live bytes as pinned blocks that are never freed: one block per set
 *    bit of the figure (powers of two, largest first), because a power of
 *    two is a boundary of every roundup_power2_divisions setting and a
 *    multiple of 512, so each configuration pins exactly the traced bytes
 *    (one big block would be rounded up by up to a quarter under some
 *    settings and rank them unfairly);
 *  - the reserved remainder as one cached free segment (GA_EV_RESERVE), as
 *    much as the simulated device has room for: reserved but unallocated
 *    memory the window's allocations can reuse, which the allocator gives
 *    back on its OOM path as PyTorch's would.
 * The first event's totals are read after it ran, so "reserved" includes a
 * segment the first allocation may have added: the prologue reserves it
 * ahead, which changes no figure of the replay but the segment count.
 * Nothing live before the first event means no mid-run start: the events
 * are the whole story (a cache the window needs is reserved by its own
 * events again). Traces without totals (the older layout with Bytes only)
 * get GA_START_UNKNOWN: the report says what the replay leaves out.
 *
 * The older layout (PyTorch 1.9, 2021) has Bytes but no Addr, so a free
 * cannot be tied to its allocation. Such a trace (every CUDA memory event
 * without Addr; a mix is refused) is replayed by matching each free to the
 * most recent live allocation of the same size on its device (LIFO: a
 * training step frees its temporaries in roughly the reverse order it made
 * them, and same-sized blocks are interchangeable to the allocator, up to
 * where they sit); a free with no live allocation of its size is counted
 * (ga_reader_start_t.unmatched_frees) and skipped. The report says the
 * figures rest on that guess.
 *
 * The device size: "deviceProperties" (a top-level array of {"id",
 * "totalGlobalMem", ...}) records each GPU's memory; the unit's device's
 * totalGlobalMem is its recorded size (ga_reader_device_memory), 0 when the
 * trace has none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "tools/readers/json_scan.h"
#include "tools/readers/kineto_int.h"
#include "tools/readers/limits.h"
#include "tools/readers/reader_int.h"

#define CUDA_DEVICE_TYPE 1 /* c10::DeviceType::CUDA */

/* What one device's events say about its totals. */
typedef struct dev_totals {
    bool any;                                         /* a CUDA memory event of this device was kept */
    bool all_totals;                                  /* every one had integer Total Allocated and Total Reserved */
    bool has_first;                                   /* the fields below are set */
    int64_t ts;                                       /* the first event (smallest ts, then file order) */
    int64_t first_bytes, first_alloc, first_reserved; /* its Bytes and totals */
    int64_t peak_alloc, peak_reserved;                /* the totals' maxima */
} dev_totals_t;

#define MAX_PIECES 64 /* one stand-in block per bit of a 64-bit figure */

typedef struct kineto {
    ga_kineto_ev_t *ev;                        /* the CUDA memory events, sorted by (ts, file order) */
    size_t n, cap;                             /* used and allocated entries */
    size_t next;                               /* next entry to look at in the current unit */
    size_t unit_total;                         /* entries of the current unit */
    size_t unit_done;                          /* of those, handed out */
    int devices[GA_KINETO_MAX_DEVICES];        /* device of each unit */
    uint64_t skipped;                          /* non-memory and CPU events */
    char ioerr[256];                           /* a read error from the refill */
    dev_totals_t tot[GA_KINETO_MAX_DEVICES];   /* per Device Id */
    uint64_t piece[MAX_PIECES + 1];            /* the current unit's prologue: stand-in block sizes ... */
    size_t n_pieces;                           /* ... of which n_pieces, then one GA_EV_RESERVE when reserve > 0 */
    uint64_t reserve;                          /* reserved bytes to reach before the first event, 0: none */
    size_t pro_next;                           /* prologue events handed out */
    size_t no_addr;                            /* kept events without Addr: all of them (older layout) or none */
    uint64_t unmatched[GA_KINETO_MAX_DEVICES]; /* older layout: frees matched to no allocation, per device */
    uint64_t total_mem[GA_KINETO_MAX_DEVICES]; /* deviceProperties totalGlobalMem per id, 0 if not given */
    ga_kineto_ranges_t ranges;                 /* the ranges that may enclose them (kineto_ranges.c) */
    ga_kineto_view_t view;                     /* the last event's stack's data */
} kineto_t;

typedef struct refill_ctx {
    ga_reader_t *r;
    kineto_t *k;
} refill_ctx_t;

static int refill(void *ctx, const char **p, size_t *n)
{
    refill_ctx_t *c = ctx;
    return ga_input_chunk(&c->r->in, p, n, c->k->ioerr, sizeof(c->k->ioerr));
}

static int scan_err(ga_reader_t *r, const ga_json_t *j, char *err, size_t errlen, const char *what)
{
    kineto_t *k = r->impl;
    if (k->ioerr[0] != '\0')
        snprintf(err, errlen, "%s", k->ioerr);
    else
        snprintf(err, errlen, "%s: byte %llu: %s", r->in.path, (unsigned long long)j->at, what);
    return -1;
}

/* Fold one kept event into its device's totals. Events come in file order,
 * so an equal ts keeps the earlier one first, as the sort does. */
static void note_totals(dev_totals_t *d, const ga_kineto_fields_t *f)
{
    bool totals = f->has_ta && f->has_tr && f->ta >= 0 && f->tr >= 0;
    if (!d->any) {
        d->any = true;
        d->all_totals = true;
    }
    d->all_totals &= totals;
    if (!totals)
        return;
    if (!d->has_first || f->ts < d->ts) {
        d->has_first = true;
        d->ts = f->ts;
        d->first_bytes = f->bytes;
        d->first_alloc = f->ta;
        d->first_reserved = f->tr;
    }
    if (f->ta > d->peak_alloc)
        d->peak_alloc = f->ta;
    if (f->tr > d->peak_reserved)
        d->peak_reserved = f->tr;
}

/* What the reader holds: the memory events and the ranges. */
static uint64_t held(const kineto_t *k)
{
    return (uint64_t)k->cap * sizeof(*k->ev) + ga_kineto_ranges_held(&k->ranges);
}

/* The bound on it (ga_hold_t): a gzip bomb of memory events or of ranges is refused. */
typedef struct hold_ctx {
    ga_reader_t *r;
    char *err;
    size_t errlen;
} hold_ctx_t;

static int hold_more(void *ctx, uint64_t more)
{
    hold_ctx_t *h = ctx;
    return ga_input_hold_check(&h->r->in, held(h->r->impl) + more, "the CUDA [memory] events and profiler ranges kept",
                               h->err, h->errlen);
}

/* A failure to keep something (GA_HOLD_*), as the reader's error. */
static int keep_failed(ga_reader_t *r, int rc, uint64_t at, uint64_t i, char *err, size_t errlen)
{
    kineto_t *k = r->impl;
    if (rc == GA_HOLD_NOMEM)
        snprintf(err, errlen,
                 "%s: byte %llu: traceEvents[%llu]: out of host memory after %zu memory events and %llu ranges",
                 r->in.path, (unsigned long long)at, (unsigned long long)i, k->n, (unsigned long long)k->ranges.count);
    else if (rc == GA_HOLD_LIMIT)
        snprintf(err, errlen,
                 "%s: byte %llu: traceEvents[%llu]: more threads, range names or ranges on one thread than %u: a "
                 "garbled or hostile trace",
                 r->in.path, (unsigned long long)at, (unsigned long long)i, UINT32_MAX - 1);
    return -1; /* GA_HOLD_REFUSED: ga_input_hold_check wrote the message */
}

/* A range that may enclose memory events (the top of the file says which). */
static int keep_range(ga_reader_t *r, const ga_kineto_fields_t *f, uint64_t at, uint64_t i, char *err, size_t errlen)
{
    kineto_t *k = r->impl;
    hold_ctx_t hc = {r, err, errlen};
    ga_hold_t hold = {hold_more, &hc};
    uint32_t th;
    int rc = ga_kineto_thread(&k->ranges, f->pid, f->tid, &hold, &th);
    if (rc == 0)
        rc = ga_kineto_range_add(&k->ranges, th, f->ts, f->dur, f->name, f->name_len, f->cat == GA_KINETO_CAT_PYTHON,
                                 &hold);
    return rc == 0 ? 0 : keep_failed(r, rc, at, i, err, errlen);
}

/* Keep one event of traceEvents (index i, object just opened). */
static int keep_event(ga_reader_t *r, ga_json_t *j, uint64_t i, char *err, size_t errlen)
{
    kineto_t *k = r->impl;
    ga_kineto_fields_t f;
    uint64_t at = j->at;
    if (ga_kineto_event(j, &f) != 0)
        return scan_err(r, j, err, errlen, j->msg);
    if (!f.memory || !f.has_type || f.type != CUDA_DEVICE_TYPE || (f.has_bytes && f.bytes == 0)) {
        k->skipped++; /* a range is kept for the stacks, but not replayed */
        if (!f.memory && f.complete && f.cat != GA_KINETO_CAT_OTHER && f.has_ts && f.has_dur && f.has_pid && f.has_tid)
            return keep_range(r, &f, at, i, err, errlen);
        return 0;
    }
    if (!f.has_addr && !f.bad_addr) { /* the older layout: matched by size after the sort */
        f.addr = 0;
        k->no_addr++;
    }
    if (f.bad_addr || !f.has_bytes || !f.has_id || !f.has_ts || f.id < 0 || f.id >= GA_KINETO_MAX_DEVICES ||
        f.bytes == INT64_MIN) {
        snprintf(err, errlen,
                 "%s: byte %llu: traceEvents[%llu]: a CUDA [memory] event needs integer args Bytes, Device Id "
                 "(0..%d) and Addr (where given), and a numeric ts",
                 r->in.path, (unsigned long long)at, (unsigned long long)i, GA_KINETO_MAX_DEVICES - 1);
        return -1;
    }
    uint64_t mag = f.bytes < 0 ? (uint64_t)-f.bytes : (uint64_t)f.bytes;
    if (mag > GA_TRACE_BYTES_MAX || (f.has_ta && f.ta > (int64_t)GA_TRACE_BYTES_MAX) ||
        (f.has_tr && f.tr > (int64_t)GA_TRACE_BYTES_MAX)) {
        snprintf(err, errlen,
                 "%s: byte %llu: traceEvents[%llu]: Bytes, Total Allocated or Total Reserved is larger than any device "
                 "(at most %llu TiB): a garbled or hostile trace",
                 r->in.path, (unsigned long long)at, (unsigned long long)i,
                 (unsigned long long)(GA_TRACE_BYTES_MAX >> 40));
        return -1;
    }
    /* Kept: bounded for a gzip input (a bomb of memory events). */
    hold_ctx_t hc = {r, err, errlen};
    ga_hold_t hold = {hold_more, &hc};
    uint32_t th = GA_KINETO_NO_THREAD;
    int rc = f.has_pid && f.has_tid ? ga_kineto_thread(&k->ranges, f.pid, f.tid, &hold, &th) : 0;
    if (rc == 0 && k->n == k->cap)
        rc = ga_hold_ask(&hold, (uint64_t)(k->cap ? k->cap : 1024) * sizeof(*k->ev));
    ga_kineto_ev_t *ne = rc == 0 ? ga_grow(k->ev, &k->cap, k->n, sizeof(*ne), 1024) : NULL;
    if (ne == NULL)
        return keep_failed(r, rc != 0 ? rc : GA_HOLD_NOMEM, at, i, err, errlen);
    k->ev = ne;
    k->ev[k->n++] = (ga_kineto_ev_t){.ts = f.ts,
                                     .addr = (uint64_t)f.addr,
                                     .bytes = f.bytes,
                                     .index = i < UINT32_MAX ? (uint32_t)i : UINT32_MAX,
                                     .thread = th,
                                     .dev = (uint16_t)f.id};
    if (th != GA_KINETO_NO_THREAD)
        k->ranges.t[th].memory = true;
    note_totals(&k->tot[f.id], &f);
    return 0;
}

static int events(ga_reader_t *r, ga_json_t *j, char *err, size_t errlen)
{
    for (uint64_t i = 0;; i++) {
        ga_json_tok_t t = ga_json_next(j);
        if (t == GA_JSON_ARR_END)
            return 0;
        if (t == GA_JSON_OBJ) {
            if (keep_event(r, j, i, err, errlen) != 0)
                return -1;
            continue;
        }
        if (ga_json_skip(j, t) != 0)
            return scan_err(r, j, err, errlen, j->msg);
        ((kineto_t *)r->impl)->skipped++;
    }
}

/* One entry of deviceProperties (an object, just opened): its id and
 * totalGlobalMem, when both are sane integers. */
static int device_props(kineto_t *k, ga_json_t *j)
{
    int64_t id = -1, mem = 0;
    bool has_id = false, has_mem = false;
    int more;
    while ((more = ga_json_member(j)) > 0) {
        int rc;
        if (ga_json_is(j, "id"))
            rc = ga_kineto_int_member(j, &id, &has_id);
        else if (ga_json_is(j, "totalGlobalMem"))
            rc = ga_kineto_int_member(j, &mem, &has_mem);
        else
            rc = ga_json_skip(j, ga_json_next(j));
        if (rc < 0)
            return -1;
    }
    if (more == 0 && has_id && has_mem && id >= 0 && id < GA_KINETO_MAX_DEVICES && mem > 0 &&
        (uint64_t)mem <= GA_TRACE_BYTES_MAX)
        k->total_mem[id] = (uint64_t)mem;
    return more;
}

/* deviceProperties (array just opened); entries of another shape are ignored. */
static int devices(kineto_t *k, ga_json_t *j)
{
    for (;;) {
        ga_json_tok_t t = ga_json_next(j);
        if (t == GA_JSON_ARR_END)
            return 0;
        if (t == GA_JSON_OBJ ? device_props(k, j) != 0 : ga_json_skip(j, t) != 0)
            return -1;
    }
}

/* The whole document: an object with traceEvents, or (Chrome's other form) a
 * bare array of events. */
static int scan(ga_reader_t *r, ga_json_t *j, char *err, size_t errlen)
{
    ga_json_tok_t t = ga_json_next(j);
    bool found = false;
    if (t == GA_JSON_ARR) {
        found = true;
        if (events(r, j, err, errlen) != 0)
            return -1;
    } else if (t == GA_JSON_OBJ) {
        int more;
        while ((more = ga_json_member(j)) > 0) {
            bool te = ga_json_is(j, "traceEvents"), dp = ga_json_is(j, "deviceProperties");
            t = ga_json_next(j);
            if (te && t == GA_JSON_ARR && !found) {
                found = true;
                if (events(r, j, err, errlen) != 0)
                    return -1;
            } else if (dp && t == GA_JSON_ARR) {
                if (devices(r->impl, j) != 0)
                    return scan_err(r, j, err, errlen, j->msg);
            } else if (ga_json_skip(j, t) != 0) {
                return scan_err(r, j, err, errlen, j->msg);
            }
        }
        if (more < 0)
            return scan_err(r, j, err, errlen, j->msg);
    } else {
        return scan_err(r, j, err, errlen, t == GA_JSON_ERR ? j->msg : "not a Chrome trace (expected an object)");
    }
    t = ga_json_next(j);
    if (t != GA_JSON_EOF)
        return scan_err(r, j, err, errlen, j->msg);
    if (!found) {
        snprintf(err, errlen, "%s: no \"traceEvents\" array: not a Chrome trace", r->in.path);
        return -1;
    }
    return 0;
}

static int by_time(const void *a, const void *b)
{
    const ga_kineto_ev_t *x = a, *y = b;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index; /* file order: the sort is stable */
}

/* The unit's state before its first event, and the prologue recreating it
 * (see the top of the file for the model). */
static void start_state(ga_reader_t *r, kineto_t *k, int dev)
{
    const dev_totals_t *d = &k->tot[dev];
    ga_reader_start_t *st = &r->notes.start;
    memset(st, 0, sizeof(*st));
    k->n_pieces = 0;
    k->reserve = 0;
    k->pro_next = 0;
    if (!d->any)
        return;                   /* no events: nothing to say */
    st->by_size = k->no_addr > 0; /* whatever the totals say: the frees were guessed */
    st->unmatched_frees = k->unmatched[dev];
    if (!d->all_totals) {
        st->kind = GA_START_UNKNOWN;
        return;
    }
    st->peak_allocated = (uint64_t)d->peak_alloc;
    st->peak_reserved = (uint64_t)d->peak_reserved;
    /* Total Allocated is after the first event: minus its Bytes (a free's
     * are negative) is what was live before it. */
    int64_t live = d->first_alloc - d->first_bytes;
    if (live < 0)
        live = 0; /* a garbled total: nothing is known to be live */
    if (live == 0)
        return; /* nothing was live: the trace starts at the job's start (or between steps), and
                   cached memory the window needs is reserved again by its own events */
    st->kind = GA_START_SEEDED;
    st->live = (uint64_t)live;
    st->reserved = (uint64_t)d->first_reserved;
    for (int b = 63; b >= 9; b--) /* powers of two from the largest; 512 and up */
        if ((st->live >> b) & 1u)
            k->piece[k->n_pieces++] = (uint64_t)1 << b;
    if (st->live & 511u) /* a total not in 512-byte blocks: the rest as one block */
        k->piece[k->n_pieces++] = st->live & 511u;
    if (st->reserved > 0)
        k->reserve = st->reserved;
    r->notes.prologue = k->n_pieces + (k->reserve > 0);
}

static int kineto_begin(ga_reader_t *r, size_t unit, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    kineto_t *k = r->impl;
    k->next = 0;
    k->unit_done = 0;
    k->unit_total = 0;
    for (size_t i = 0; i < k->n; i++)
        k->unit_total += k->ev[i].dev == k->devices[unit];
    int dev = k->devices[unit];
    r->notes.skipped = (unit == 0 ? k->skipped : 0) + k->unmatched[dev];
    r->device_memory = k->total_mem[dev];
    start_state(r, k, dev);
    ga_kineto_ranges_rewind(&k->ranges);
    return 0;
}

/* The prologue's stand-in blocks: ids no device pointer has (the top of the
 * address space), never freed by the trace. */
#define SEED_ID(i) (UINT64_MAX - MAX_PIECES - 1 + (uint64_t)(i))

/* The next prologue event: 1, or 0 once it is all out. */
static int prologue_next(kineto_t *k, ga_event_t *ev)
{
    size_t n = k->n_pieces + (k->reserve > 0);
    if (k->pro_next >= n)
        return 0;
    memset(ev, 0, sizeof(*ev));
    ev->flags = GA_EVF_PROLOGUE;
    if (k->pro_next < k->n_pieces) {
        ev->kind = GA_EV_ALLOC;
        ev->flags |= GA_EVF_SEEDED;
        ev->id = SEED_ID(k->pro_next);
        ev->size = k->piece[k->pro_next];
    } else {
        ev->kind = GA_EV_RESERVE;
        ev->size = k->reserve;
    }
    k->pro_next++;
    return 1;
}

static int kineto_next(ga_reader_t *r, ga_event_t *ev, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    kineto_t *k = r->impl;
    int dev = k->devices[r->unit];
    if (prologue_next(k, ev))
        return 1;
    while (k->next < k->n) {
        const ga_kineto_ev_t *m = &k->ev[k->next++];
        if (m->dev != dev)
            continue;
        k->unit_done++;
        if (m->skip)
            continue;
        memset(ev, 0, sizeof(*ev));
        ev->kind = m->bytes > 0 ? GA_EV_ALLOC : GA_EV_FREE;
        ev->id = m->addr;
        ev->size = m->bytes > 0 ? (uint64_t)m->bytes : 0;
        ev->stream = m->bytes > 0 ? 0 : GA_STREAM_NONE;
        ev->where = m->index;
        /* Kineto's ts is in microseconds; newer traces add baseTimeNanoseconds to make it absolute,
         * which galloc does not read: the time is the trace's own clock */
        ev->time_us = m->ts > 0 && m->ts < INT64_MAX ? m->ts / 1000 : 0;
        if (ev->kind == GA_EV_ALLOC)
            ga_kineto_ranges_stack(&k->ranges, m->thread, m->ts, &k->view, &ev->stack);
        return 1;
    }
    return 0;
}

static double kineto_progress(const ga_reader_t *r)
{
    const kineto_t *k = r->impl;
    return k->unit_total ? (double)k->unit_done / (double)k->unit_total : 1.0;
}

static void kineto_close(ga_reader_t *r)
{
    kineto_t *k = r->impl;
    if (k == NULL)
        return;
    free(k->ev);
    ga_kineto_ranges_free(&k->ranges);
    free(k);
    r->impl = NULL;
}

static int kineto_device(const ga_reader_t *r, size_t unit)
{
    const kineto_t *k = r->impl;
    return unit < r->units ? k->devices[unit] : -1;
}

static const ga_reader_ops_t kineto_ops = {.begin = kineto_begin,
                                           .next = kineto_next,
                                           .progress = kineto_progress,
                                           .close = kineto_close,
                                           .unit_device = kineto_device};

static int kineto_open(ga_reader_t *r, char *err, size_t errlen)
{
    kineto_t *k = calloc(1, sizeof(*k));
    if (k == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    ga_kineto_ranges_init(&k->ranges);
    r->impl = k;
    r->ops = &kineto_ops; /* from here kineto_close frees whatever was made */
    refill_ctx_t ctx = {r, k};
    ga_json_t j;
    ga_json_init(&j, "", 0, refill, &ctx); /* all input comes from refill */
    if (scan(r, &j, err, errlen) != 0)
        return -1;
    if (k->n > 1) /* k->ev is NULL when there are none */
        qsort(k->ev, k->n, sizeof(*k->ev), by_time);
    if (k->no_addr > 0 && k->no_addr < k->n) {
        snprintf(err, errlen,
                 "%s: %zu CUDA [memory] events have Addr and %zu do not: a mix of the two layouts is not replayed",
                 r->in.path, k->n - k->no_addr, k->no_addr);
        return -1;
    }
    if (k->no_addr > 0 && ga_kineto_match_by_size(k->ev, k->n, k->unmatched) != 0) {
        snprintf(err, errlen, "%s: out of host memory matching %zu memory events", r->in.path, k->n);
        return -1;
    }
    hold_ctx_t hc = {r, err, errlen};
    ga_hold_t hold = {hold_more, &hc};
    int rc = ga_kineto_ranges_finish(&k->ranges, &hold);
    if (rc == GA_HOLD_NOMEM)
        snprintf(err, errlen, "%s: out of host memory sorting %llu profiler ranges", r->in.path,
                 (unsigned long long)k->ranges.count);
    if (rc != 0)
        return -1;
    bool used[GA_KINETO_MAX_DEVICES] = {false};
    for (size_t i = 0; i < k->n; i++)
        used[k->ev[i].dev] = true;
    r->units = 0;
    for (int d = 0; d < GA_KINETO_MAX_DEVICES; d++)
        if (used[d])
            k->devices[r->units++] = d;
    if (r->units == 0)
        k->devices[r->units++] = 0; /* no CUDA memory events: one empty replay */
    return kineto_begin(r, 0, err, errlen);
}

/* JSON that names "traceEvents" in its first bytes. */
static int kineto_probe(const char *p, size_t n)
{
    const char *l;
    size_t ln;
    ga_reader_first_line(p, n, &l, &ln);
    bool json = ln > 0 && (l[0] == '{' || l[0] == '[');
    return json && ga_reader_contains(p, n, "\"traceEvents\"") ? GA_PROBE_MENTION : 0;
}

const ga_format_desc_t ga_format_kineto = {
    .name = "kineto",
    .aliases = {"chrome", "profiler"},
    .what = "PyTorch profiler (Kineto) Chrome trace, its [memory] events",
    .probe = kineto_probe,
    .open = kineto_open,
};

/*
 * owners_track.c: a column's owners while it replays (owners.h says what is
 * kept and what it costs). A live block's record is the payload of its entry
 * in the column's pointer map (trace id -> block, the one map the replay
 * touches per event anyway); the per-class cells are the records' sums. A
 * walk of the segments (the reserved peak, an OOM) asks who holds a block by
 * its address: a map by address is made from the pointer map for that walk.
 *
 * The allocated peak: its moment is known only when the replay is over, and
 * copying every cell at each new high would cost O(classes) per allocation
 * while a job grows. Instead, from a new high on, each change to the cells
 * is logged; a log that reaches log_max entries, or the end of the replay,
 * is undone on a copy of the cells (newest first), which gives the cells at
 * the high: O(classes + log) once per log_max events at most.
 */
#include "tools/engine/engine_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <galloc/galloc_inspect.h>
#include "util/grow.h"

#define LOG_MIN 4096 /* the shortest log before it is folded into the peak's cells */
#define NO_TIME INT64_MIN

const char *ga_owners_moment_name(ga_owners_moment_kind_t k)
{
    switch (k) {
    case GA_MOMENT_PEAK_ALLOCATED: return "peak allocated";
    case GA_MOMENT_PEAK_RESERVED: return "peak reserved";
    case GA_MOMENT_OOM: break;
    }
    return "OOM";
}

void ga_owners_moment_release(ga_owners_moment_t *m)
{
    free(m->entries);
    free(m->segments);
    m->entries = NULL;
    m->segments = NULL;
    m->n_entries = m->n_segments = 0;
}

void ga_owners_release(ga_owners_t *w)
{
    if (w == NULL)
        return;
    ga_owners_moment_release(&w->peak_allocated);
    ga_owners_moment_release(&w->peak_reserved);
    for (size_t i = 0; i < w->n_ooms; i++)
        ga_owners_moment_release(&w->ooms[i]);
    free(w);
}

/* A record's share of its class's cell, added (sign 1) or taken away (-1). */
static void apply(ga_owner_cell_t *c, const ga_owner_rec_t *r, int sign)
{
    c->blocks += sign;
    c->bytes += sign * (int64_t)r->bytes;
    c->requested += sign * (int64_t)r->req;
    if (r->kept) {
        c->kept_blocks += sign;
        c->kept_bytes += sign * (int64_t)r->bytes;
    }
    if (r->ev < 0) {
        c->before += sign;
    } else {
        c->ev_sum += sign * r->ev;
        if (r->us != NO_TIME) {
            c->timed += sign;
            c->us_sum += sign * r->us;
        }
    }
}

static void fail(ga_owners_track_t *t, const char *why)
{
    if (t->out->error[0] == '\0')
        snprintf(t->out->error, sizeof(t->out->error), "%s", why);
}

/* An entry of the map by address made for a walk. */
typedef struct by_addr {
    uintptr_t key; /* the block's address */
    uint64_t cls;  /* its class */
} by_addr_t;

int ga_owners_track_init(ga_owners_track_t *t, const ga_job_unit_t *u, galloc_allocator_t *a, ga_idmap_t *map)
{
    memset(t, 0, sizeof(*t));
    t->u = u;
    t->a = a;
    t->map = map;
    ga_addrmap_init(&t->by_addr, sizeof(by_addr_t));
    t->out = calloc(1, sizeof(*t->out));
    size_t n = u->owners.n_classes ? u->owners.n_classes : 1;
    t->cells = calloc(n, sizeof(*t->cells));
    t->pin_bytes = calloc(n, sizeof(*t->pin_bytes));
    t->touched = malloc(n * sizeof(*t->touched));
    if (t->out == NULL || t->cells == NULL || t->pin_bytes == NULL || t->touched == NULL) {
        ga_owners_track_destroy(t);
        return -1;
    }
    t->out->index = &u->owners;
    t->out->t0_us = 0;
    t->log_max = LOG_MIN > 2 * n ? LOG_MIN : 2 * n;
    t->peak_total = -1;
    t->peak_reserved = -1;
    return 0;
}

void ga_owners_track_destroy(ga_owners_track_t *t)
{
    ga_owners_release(t->out);
    ga_addrmap_destroy(&t->by_addr);
    free(t->cells);
    free(t->pin_bytes);
    free(t->touched);
    free(t->log);
    memset(t, 0, sizeof(*t));
}

ga_owners_t *ga_owners_track_take(ga_owners_track_t *t)
{
    ga_owners_t *w = t->out;
    t->out = NULL;
    return w;
}

/* Log a change to the cells while the allocated peak is not yet folded;
 * called before the change is applied, so a fold here undoes to the peak. */
static void log_change(ga_owners_track_t *t, const ga_owner_rec_t *r, int sign);

/* A block becomes live: its record r, in its map entry's payload. */
static void add(ga_owners_track_t *t, ga_owner_rec_t *r)
{
    if (r->cls >= t->u->owners.n_classes)
        return;
    r->live = true;
    log_change(t, r, 1);
    apply(&t->cells[r->cls], r, 1);
    t->total += (int64_t)r->bytes;
    if (t->total > t->peak_total) { /* a new high: the state from here is what the log undoes to */
        t->peak_total = t->total;
        t->peak_event = t->cur_event;
        t->peak_time = t->cur_time;
        t->peak_reserved_then = t->reserved_now;
        t->logging = true;
        t->n_log = 0;
        t->peak_folded = false;
    }
}

/* The size of the block at ptr as galloc counts it (the request where the
 * allocator cannot tell). */
static uint64_t block_bytes(ga_owners_track_t *t, void *ptr, uint64_t req)
{
    size_t n = 0;
    if (galloc_usable_size(t->a, ptr, &n) == GALLOC_OK)
        return n;
    t->out->untracked++;
    return req;
}

static int64_t rel_time(ga_owners_track_t *t, int64_t us)
{
    if (us == 0)
        return NO_TIME;
    if (t->out->t0_us == 0)
        t->out->t0_us = us;
    return us - t->out->t0_us;
}

void ga_owners_track_alloc(ga_owners_track_t *t, uint64_t idx, const ga_event_t *e, void *ptr, ga_owner_rec_t *rec)
{
    if (ptr == NULL) { /* a failed or 0-byte allocation holds nothing */
        rec->live = false;
        return;
    }
    const ga_job_ev_t *f = &t->u->ev[idx];
    bool before = (e->flags & GA_EVF_PROLOGUE) != 0;
    *rec = (ga_owner_rec_t){.bytes = block_bytes(t, ptr, e->size),
                            .req = e->size,
                            .ev = before ? -1 : (int64_t)idx,
                            .us = before ? NO_TIME : rel_time(t, e->time_us),
                            .cls = f->owner,
                            .kept = (e->flags & GA_EVF_KEPT) != 0};
    t->cur_event = idx;
    t->cur_time = e->time_us;
    add(t, rec);
}

void ga_owners_track_seeded(ga_owners_track_t *t)
{
    const ga_job_unit_t *u = t->u;
    t->cur_event = GA_OWNERS_BEFORE_EVENTS;
    t->cur_time = 0;
    for (size_t i = 0; i < u->seed.n_pc; i++) {
        const ga_seed_piece_t *p = &u->seed.pc[i];
        ga_idmap_val_t v;
        if (!p->live || p->pending || !ga_idmap_get(t->map, p->addr, &v) || v.ptr == NULL)
            continue;
        ga_owner_rec_t *rec = ga_idmap_extra(t->map, p->addr);
        *rec = (ga_owner_rec_t){.bytes = block_bytes(t, v.ptr, p->req ? p->req : p->size),
                                .req = p->req ? p->req : p->size,
                                .ev = -1,
                                .us = NO_TIME,
                                .cls = p->owner,
                                .kept = p->kept};
        add(t, rec);
    }
}

void ga_owners_track_dealloc(ga_owners_track_t *t, const ga_owner_rec_t *rec)
{
    if (!rec->live)
        return;
    log_change(t, rec, -1);
    apply(&t->cells[rec->cls], rec, -1);
    t->total -= (int64_t)rec->bytes;
}

/* The cells as they are, as a moment's entries (classes with blocks, most
 * bytes first). */
static int by_bytes(const void *a, const void *b)
{
    const ga_owner_entry_t *x = a, *y = b;
    if (x->cell.bytes != y->cell.bytes)
        return x->cell.bytes > y->cell.bytes ? -1 : 1;
    return x->cls < y->cls ? -1 : x->cls > y->cls;
}

static int entries_of(const ga_owner_cell_t *cells, size_t n, ga_owners_moment_t *m)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += cells[i].blocks != 0;
    m->entries = malloc((k ? k : 1) * sizeof(*m->entries));
    if (m->entries == NULL)
        return -1;
    m->n_entries = 0;
    for (size_t i = 0; i < n; i++)
        if (cells[i].blocks != 0)
            m->entries[m->n_entries++] = (ga_owner_entry_t){(uint32_t)i, cells[i]};
    if (m->n_entries > 1)
        qsort(m->entries, m->n_entries, sizeof(*m->entries), by_bytes);
    return 0;
}

/* Undo the log on a copy of the cells: the allocated peak's moment. */
static void fold_peak(ga_owners_track_t *t)
{
    size_t n = t->u->owners.n_classes;
    ga_owners_moment_t *m = &t->out->peak_allocated;
    ga_owners_moment_release(m);
    memset(m, 0, sizeof(*m));
    t->logging = false;
    t->peak_folded = true;
    ga_owner_cell_t *copy = malloc((n ? n : 1) * sizeof(*copy));
    if (copy == NULL) {
        fail(t, "out of host memory at the allocated peak");
        return;
    }
    memcpy(copy, t->cells, n * sizeof(*copy));
    for (size_t i = t->n_log; i-- > 0;)
        apply(&copy[t->log[i].rec.cls], &t->log[i].rec, -t->log[i].sign);
    t->n_log = 0;
    m->kind = GA_MOMENT_PEAK_ALLOCATED;
    m->event = t->peak_event;
    m->time_us = t->peak_time;
    m->allocated = t->peak_total;
    m->reserved = t->peak_reserved_then;
    m->active = m->requested = -1; /* not read at that moment (a stats read per new high would cost too much) */
    m->request_cls = UINT32_MAX;
    if (entries_of(copy, n, m) != 0)
        fail(t, "out of host memory at the allocated peak");
    else
        m->valid = true;
    free(copy);
}

static void log_change(ga_owners_track_t *t, const ga_owner_rec_t *r, int sign)
{
    if (!t->logging)
        return;
    if (t->n_log == t->log_max) {
        fold_peak(t);
        return;
    }
    if (t->n_log == t->cap_log) {
        ga_owner_logent_t *nl = ga_grow(t->log, &t->cap_log, t->n_log, sizeof(*nl), 256);
        if (nl == NULL) { /* fold now: the peak is exact, only earlier */
            fold_peak(t);
            return;
        }
        t->log = nl;
    }
    t->log[t->n_log++] = (ga_owner_logent_t){*r, (int8_t)sign};
}

/* The classes holding most of a segment's live bytes into s->pins. */
static void pins_of(ga_owners_track_t *t, const galloc_segment_view_t *seg, ga_owner_segment_t *s)
{
    size_t n_touched = 0;
    for (size_t b = 0; b < seg->n_blocks; b++) {
        const galloc_block_view_t *v = &seg->blocks[b];
        if (v->state != GALLOC_BLOCK_ALLOCATED)
            continue;
        const by_addr_t *r = ga_addrmap_find(&t->by_addr, v->address);
        if (r == NULL)
            continue;
        if (t->pin_bytes[r->cls] == 0)
            t->touched[n_touched++] = (uint32_t)r->cls;
        t->pin_bytes[r->cls] += v->size;
    }
    for (size_t i = 0; i < n_touched; i++) {
        uint32_t c = t->touched[i];
        uint64_t bytes = t->pin_bytes[c];
        size_t k = s->n_pins < GA_OWNERS_PINS ? s->n_pins++ : GA_OWNERS_PINS;
        /* insertion into the top list, most bytes first (ties: lower class) */
        while (k > 0 && (s->pin_bytes[k - 1] < bytes || (s->pin_bytes[k - 1] == bytes && s->pins[k - 1] > c))) {
            if (k < GA_OWNERS_PINS) {
                s->pins[k] = s->pins[k - 1];
                s->pin_bytes[k] = s->pin_bytes[k - 1];
            }
            k--;
        }
        if (k < GA_OWNERS_PINS) {
            s->pins[k] = c;
            s->pin_bytes[k] = bytes;
        }
    }
    for (size_t i = 0; i < n_touched; i++)
        t->pin_bytes[t->touched[i]] = 0;
}

typedef struct walk {
    ga_owners_track_t *t;
    ga_owners_moment_t *m;
    size_t cap;
    bool nomem;
} walk_t;

static int visit(void *ctx, const galloc_segment_view_t *seg)
{
    walk_t *w = ctx;
    ga_owner_segment_t *ns = ga_grow(w->m->segments, &w->cap, w->m->n_segments, sizeof(*ns), 16);
    if (ns == NULL) {
        w->nomem = true;
        return 1;
    }
    w->m->segments = ns;
    ga_owner_segment_t *s = &ns[w->m->n_segments++];
    memset(s, 0, sizeof(*s));
    s->address = seg->address;
    s->size = seg->size;
    s->stream = seg->stream;
    s->pool[0] = (int64_t)seg->pool.a;
    s->pool[1] = (int64_t)seg->pool.b;
    s->small = seg->small;
    s->expandable = seg->expandable;
    s->blocks = (uint32_t)seg->n_blocks;
    for (size_t b = 0; b < seg->n_blocks; b++) {
        const galloc_block_view_t *v = &seg->blocks[b];
        switch (v->state) {
        case GALLOC_BLOCK_FREE:
            s->free_bytes += v->size;
            s->free_blocks++;
            if (v->size > s->largest_free)
                s->largest_free = v->size;
            break;
        case GALLOC_BLOCK_PENDING_FREE: s->pending_bytes += v->size; break;
        case GALLOC_BLOCK_ALLOCATED: s->allocated_bytes += v->size; break;
        }
    }
    pins_of(w->t, seg, s);
    return 0;
}

static int by_free(const void *a, const void *b)
{
    const ga_owner_segment_t *x = a, *y = b;
    if (x->free_bytes != y->free_bytes)
        return x->free_bytes > y->free_bytes ? -1 : 1;
    return x->address < y->address ? -1 : x->address > y->address;
}

/* The live blocks by address, from the pointer map: for a walk's pins. 0 or -1. */
static int by_addr(ga_owners_track_t *t)
{
    ga_addrmap_destroy(&t->by_addr);
    ga_idmap_t *m = t->map;
    if (ga_addrmap_reserve(&t->by_addr, ga_idmap_size(m)) != GALLOC_OK)
        return -1;
    for (size_t i = 0; i <= m->map.cap; i++) {
        ga_idmap_val_t *v;
        const ga_owner_rec_t *r;
        if (i == m->map.cap) { /* key 0, in its side slot */
            if (!m->has_zero)
                break;
            v = &m->zero_val;
            r = ga_idmap_extra(m, 0);
        } else {
            ga_idmap_slot_t *sl = ga_addrmap_slot(&m->map, i);
            if (sl == NULL)
                continue;
            v = &sl->val;
            r = ga_idmap_slot_extra(m, sl);
        }
        if (!r->live || v->ptr == NULL || ga_addrmap_find(&t->by_addr, (uintptr_t)v->ptr) != NULL)
            continue;
        ((by_addr_t *)ga_addrmap_insert(&t->by_addr, (uintptr_t)v->ptr))->cls = r->cls;
    }
    return 0;
}

/* The state now, with the allocator's totals and its segments, into m. */
static void capture(ga_owners_track_t *t, ga_owners_moment_kind_t kind, uint64_t idx, int64_t time_us,
                    ga_owners_moment_t *m)
{
    ga_owners_moment_release(m);
    memset(m, 0, sizeof(*m));
    m->kind = kind;
    m->event = idx;
    m->time_us = time_us;
    m->request_cls = UINT32_MAX;
    galloc_stats_t s = {.struct_size = sizeof(s)};
    if (galloc_memory_stats(t->a, &s) == GALLOC_OK) {
        m->allocated = s.allocated_bytes[GALLOC_STAT_ALL].current;
        m->reserved = s.reserved_bytes[GALLOC_STAT_ALL].current;
        m->active = s.active_bytes[GALLOC_STAT_ALL].current;
        m->requested = s.requested_bytes[GALLOC_STAT_ALL].current;
    }
    if (entries_of(t->cells, t->u->owners.n_classes, m) != 0) {
        fail(t, "out of host memory taking a moment's owners");
        return;
    }
    if (by_addr(t) != 0) {
        fail(t, "out of host memory taking a moment's owners");
        return;
    }
    walk_t w = {.t = t, .m = m};
    galloc_status_t st = galloc_segments_visit(t->a, visit, &w);
    if (w.nomem || st == GALLOC_E_NOMEM)
        fail(t, "out of host memory walking the segments");
    m->has_segments = st == GALLOC_OK && !w.nomem;
    if (m->n_segments > 1)
        qsort(m->segments, m->n_segments, sizeof(*m->segments), by_free);
    m->valid = true;
}

void ga_owners_track_reserved(ga_owners_track_t *t, uint64_t idx, const ga_event_t *e, int64_t reserved)
{
    t->reserved_now = reserved;
    if (idx == t->peak_event && t->logging)
        t->peak_reserved_then = reserved; /* the allocation that made the new high came first: this is its figure */
    if (reserved <= t->peak_reserved)
        return;
    t->peak_reserved = reserved;
    capture(t, GA_MOMENT_PEAK_RESERVED, idx, e->time_us, &t->out->peak_reserved);
}

void ga_owners_track_oom(ga_owners_track_t *t, uint64_t idx, const ga_event_t *e)
{
    if (t->out->n_ooms >= GA_OWNERS_MAX_OOMS)
        return;
    ga_owners_moment_t *m = &t->out->ooms[t->out->n_ooms++];
    capture(t, GA_MOMENT_OOM, idx, e->time_us, m);
    m->request_cls = t->u->ev[idx].owner;
    m->request_size = e->size;
}

void ga_owners_track_start_oom(ga_owners_track_t *t, uint64_t size)
{
    if (t->out->n_ooms >= GA_OWNERS_MAX_OOMS)
        return;
    ga_owners_moment_t *m = &t->out->ooms[t->out->n_ooms++];
    capture(t, GA_MOMENT_OOM, GA_OWNERS_BEFORE_EVENTS, 0, m);
    m->request_size = size; /* a piece of the state, no allocation of the trace: no class */
}

void ga_owners_track_sites(const ga_owners_track_t *t, double *row)
{
    const ga_owners_index_t *x = &t->u->owners;
    memset(row, 0, x->n_sites * sizeof(*row));
    for (size_t c = 0; c < x->n_classes; c++)
        if (t->cells[c].blocks != 0)
            row[x->classes[c].site] += (double)t->cells[c].bytes;
}

void ga_owners_track_finish(ga_owners_track_t *t)
{
    if (t->peak_total >= 0 && !t->peak_folded)
        fold_peak(t);
    /* the maps and the log only grow: their capacities now are their largest (the
     * records' share of the pointer map is what owners add to its entries) */
    size_t n = t->u->owners.n_classes ? t->u->owners.n_classes : 1;
    t->out->track_bytes = t->map->map.cap * sizeof(ga_owner_rec_t) + t->by_addr.cap * t->by_addr.entry_size +
                          t->cap_log * sizeof(*t->log) +
                          n * (sizeof(*t->cells) + sizeof(*t->pin_bytes) + sizeof(*t->touched));
}
